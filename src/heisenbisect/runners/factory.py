"""Choose the runner a study uses: the spec's ``execution`` section, overridden by the command line.

A study takes a `RunnerMaker` (the study's target and logs folder -> a runner), so a test can
hand it a fake runner or a real Ray one; `runner_maker` is the default, built from the spec
and the command line's ``--runner`` and ``--address`` by `make_runner`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.runners.base import Runner
from heisenbisect.runners.registry import checked
from heisenbisect.targets.base import TrialTarget

ADDRESS_IMPLIES = "ray"  # a cluster address on the command line or in the spec picks Ray

RunnerMaker = Callable[
    [TrialTarget, Path], Runner
]  # (the study's target, its logs' folder) -> a runner


def make_runner(
    spec: Spec,
    target: TrialTarget,
    logs_dir: Path,
    *,
    runner_override: str | None = None,
    address_override: str | None = None,
) -> Runner:
    """The runner for ``spec``: ``--runner`` beats ``execution.runner``; an address from
    ``--address`` or ``execution.address`` implies Ray unless ``--runner local``. ``RAY_ADDRESS``
    only picks the cluster once Ray is chosen: a stray variable never moves a local study.
    """
    execution = spec.execution
    address = address_override or execution.address or os.environ.get("RAY_ADDRESS") or None
    name = runner_override or (
        ADDRESS_IMPLIES if address_override or execution.address else execution.runner
    )
    return checked(name, "--runner").build(execution, target, logs_dir, address)


def runner_maker(
    spec: Spec, runner_override: str | None = None, address_override: str | None = None
) -> RunnerMaker:
    """The default `RunnerMaker`: `make_runner` with the command line's overrides."""

    def make(target: TrialTarget, logs_dir: Path) -> Runner:
        return make_runner(
            spec,
            target,
            logs_dir,
            runner_override=runner_override,
            address_override=address_override,
        )

    return make
