"""Choose the runner a study uses: the spec's ``execution`` section, overridden by the command line."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Execution, Spec
from heisenbisect.runners.base import Runner
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import CommandTarget
from heisenbisect.runners.gpu_slots import GpuSlots, visible_gpus
from heisenbisect.runners.local import LocalRunner

RUNNERS = ("local", "ray")


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
    kind = runner_override or ("ray" if address_override or execution.address else execution.runner)
    if kind not in RUNNERS:
        raise HeisenbisectError(f"--runner: expected one of {', '.join(RUNNERS)}, got {kind!r}")
    if kind == "local":
        slots = GpuSlots(visible_gpus(), execution.trials_per_gpu) if execution.trials_per_gpu else None
        return LocalRunner(target, logs_dir, parallel=execution.parallel, gpu_slots=slots)
    from heisenbisect.runners.ray_runner import RayRunner  # ray is an optional extra

    base = Path(target.cwd) if isinstance(target, CommandTarget) and target.cwd else Path.cwd()
    working_dir = _resolve_working_dir(execution.working_dir, base)
    if working_dir and isinstance(target, CommandTarget):
        # Ray unpacks working_dir on each worker and starts the task there; the driver's cwd does not exist
        target = dataclasses.replace(target, cwd=None)
    return RayRunner(
        target,
        logs_dir,
        address=address,
        gpus_per_trial=gpus_per_trial(execution),
        cpus_per_trial=execution.cpus_per_trial,
        max_in_flight=execution.max_in_flight,
        working_dir=working_dir,
    )


def gpus_per_trial(execution: Execution) -> float:
    """Ray's GPUs per trial: ``gpus_per_trial`` if given, else ``1 / trials_per_gpu``, else none."""
    if execution.gpus_per_trial or not execution.trials_per_gpu:
        return execution.gpus_per_trial
    return 1 / execution.trials_per_gpu


def _resolve_working_dir(working_dir: str | None, base: Path) -> str | None:
    """An absolute folder; a relative one is taken from the target's cwd (else the current folder)."""
    if working_dir is None:
        return None
    path = (base / Path(working_dir).expanduser()).resolve()
    if not path.is_dir():
        raise HeisenbisectError(f"execution.working_dir: not a folder, got {working_dir!r}")
    return str(path)
