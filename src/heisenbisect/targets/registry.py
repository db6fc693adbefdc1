"""Build the `TrialTarget` a spec asks for: a command, or the built-in SGLang server."""

from __future__ import annotations

import sys
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import CommandTarget


def make_target(spec: Spec, spec_dir: Path) -> TrialTarget:
    """The spec's target; relative paths in it are relative to the spec file's folder.

    A command target watches its env factors' variables (`targets.env_reads`), so that a
    factor that never reached it is reported ``not_applied``, not taken for a decoy."""
    target = spec.target
    cwd = str((spec_dir / target.cwd).resolve()) if target.cwd else str(spec_dir.resolve())
    if target.sglang is not None:
        from heisenbisect.targets.sglang.target import make_sglang_target

        return make_sglang_target(spec, base_dir=spec_dir)
    return CommandTarget(
        argv=tuple(with_this_python(target.argv)),
        timeout_s=target.timeout,
        cwd=cwd,
        crashes_count=target.crashes_count,
        result=target.result,
        watch_vars=watched_variables(spec),
    )


def watched_variables(spec: Spec) -> tuple[str, ...]:
    """The variables the env factors set, each once."""
    return tuple(dict.fromkeys(f.env_var for f in spec.factors if f.kind == "env"))


def with_this_python(argv: list[str]) -> list[str]:
    """A bare ``python``/``python3`` means the interpreter running heisenbisect (its venv).

    Otherwise a target started from an unactivated virtualenv would meet a system Python
    without its packages, exit 1 on the ImportError, and count as a failure.
    """
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return argv
