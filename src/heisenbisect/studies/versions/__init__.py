"""The version bisection (``bisect versions``): `study` drives it with the commit bisection's
strategy over a package's released versions (a version list is an ordered candidate list),
`prepare` lists the range and writes its spec, `result` is its answer; `handover` continues
into the commits between the last good and the first bad version (``--repo``)."""
