"""heisenbisect: find what drives a nondeterministic failure to zero."""

__version__ = "0.1.0"
