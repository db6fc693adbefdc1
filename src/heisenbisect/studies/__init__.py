"""One module per study kind: the glue from a spec to the engine, the store and the report.

The deciding logic of each kind stays pure in `heisenbisect.decide`; what every kind shares
(its folder, its store bound to the spec, trial ids) lives in `studies.common`.
"""
