"""Every runner kind once: its name, a line that says where its trials run, how to build it.

``--runner``'s choices and help, the Python API's check of ``runner=`` and the runner a
report names all read from here; the spec model checks ``execution.runner`` against the bare
names in `heisenbisect.runner_kinds`, which this registry must match (it refuses to import
otherwise). A new runner (Slurm, Kubernetes) is its module with a `Runner`, one `RunnerKind`
here and its name in `kinds`. A kind's module is imported only when it is built: Ray is an
optional extra.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Execution
from heisenbisect.runner_kinds import RUNNER_KINDS
from heisenbisect.runners.base import Runner
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import CommandTarget

# (the spec's execution section, the target, its logs' folder, a Ray address or None) -> a runner
Builder = Callable[[Execution, TrialTarget, Path, "str | None"], Runner]


@dataclass(frozen=True)
class RunnerKind:
    name: str
    description: str  # one line: where the trials run
    module: str  # the module that defines its `Runner`: a built runner's kind is found by it
    build: Builder


def _local(
    execution: Execution, target: TrialTarget, logs_dir: Path, address: str | None
) -> Runner:
    from heisenbisect.runners.gpu_slots import GpuSlots, visible_gpus
    from heisenbisect.runners.local import LocalRunner

    slots = GpuSlots(visible_gpus(), execution.trials_per_gpu) if execution.trials_per_gpu else None
    return LocalRunner(target, logs_dir, parallel=execution.parallel, gpu_slots=slots)


def _ray(execution: Execution, target: TrialTarget, logs_dir: Path, address: str | None) -> Runner:
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


REGISTRY: dict[str, RunnerKind] = {
    kind.name: kind
    for kind in (
        RunnerKind(
            "local",
            "processes on this machine, execution.parallel at a time",
            "heisenbisect.runners.local",
            _local,
        ),
        RunnerKind(
            "ray",
            "tasks on a Ray cluster, each with its CPUs and GPUs (pip install 'heisenbisect[ray]')",
            "heisenbisect.runners.ray_runner",
            _ray,
        ),
    )
}
if tuple(REGISTRY) != RUNNER_KINDS:
    raise ImportError(
        f"runners.registry builds {tuple(REGISTRY)}, but heisenbisect.runner_kinds names {RUNNER_KINDS}"
    )


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def checked(name: str, field: str) -> RunnerKind:
    """The kind called ``name``; a `HeisenbisectError` naming ``field`` and the kinds there are."""
    kind = REGISTRY.get(name) if isinstance(name, str) else None
    if kind is None:
        raise HeisenbisectError(
            f"{field}: expected one of {', '.join(map(repr, REGISTRY))}, got {name!r}"
        )
    return kind


def help_text() -> str:
    """``--runner``'s help: each kind and where it runs."""
    return "where trials run (overrides execution.runner): " + "; ".join(
        f"{k.name}: {k.description}" for k in REGISTRY.values()
    )


def kind_of(runner: Runner) -> str:
    """The registered name of a built runner, for the report; another runner (a test's) by its class."""
    module = type(runner).__module__
    return next((k.name for k in REGISTRY.values() if k.module == module), type(runner).__name__)
