"""The amplification (``bisect amplify``, ``heisenbisect.amplify``): `study` drives the search
and the confirmation, `search` and `sampler` bind the pure search to Optuna, `result` is its
answer and exit code."""
