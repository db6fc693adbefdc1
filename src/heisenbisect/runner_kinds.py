"""The names of the runner kinds, bare: the spec model checks ``execution.runner`` against them
without importing a runner (Ray is an optional extra). `runners.registry` builds each kind and
refuses, at import, a list of builders that does not match these names."""

RUNNER_KINDS = ("local", "ray")
