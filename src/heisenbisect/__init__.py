"""heisenbisect: find what drives a nondeterministic failure to zero.

The Python API (docs/api.md), imported on first use so that ``import heisenbisect`` and the
``bisect`` command stay fast::

    import heisenbisect
    result = heisenbisect.run("hypotheses.yaml", out="reports", parallel=4)
    result.verdict("overlap=0")   # 'eliminates'
"""

__version__ = "0.1.0"

# name -> the module that defines it
_LAZY = {
    "run": "heisenbisect.api",
    "commits": "heisenbisect.api",
    "amplify": "heisenbisect.api",
    "StudyResult": "heisenbisect.api",
    "ArmVerdict": "heisenbisect.api",
    "CommitsResult": "heisenbisect.api",
    "AmplifyResult": "heisenbisect.api",
    "MeasuredSettings": "heisenbisect.api",
    "StudyInterrupted": "heisenbisect.api",
    "HeisenbisectError": "heisenbisect.errors",
    "SpecError": "heisenbisect.errors",
    "StoreMismatchError": "heisenbisect.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'heisenbisect' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
