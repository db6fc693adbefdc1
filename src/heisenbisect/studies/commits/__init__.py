"""The commit bisection (``bisect commits``, ``heisenbisect.commits``): `study` drives it,
`prepare` resolves its range before the first trial, `result` is its answer and exit code; the
hand-driven actions (`actions`, `marks`), the bisection without a spec (`adhoc`), the priors
over commits (`priors`) and the fix direction (`direction`) are its parts."""
