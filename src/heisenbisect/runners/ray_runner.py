"""Run trials on Ray, each holding the GPUs and CPUs the spec asks for.

Each trial is a Ray task (`ray_worker.run_trial_task`) running the same picklable
`TrialTarget` as the local runner. A target that keeps state across trials of one config
(``keeps_state``: a server) gets one `ray_worker.TrialHost` actor per config instead, which
holds the config's resources while its server lives. What a worker cannot share with the
driver travels explicitly: the factor environment inside the `Trial`, the log back as bytes
with the outcome, the target's files through the job's ``working_dir`` (see `connect`).
A worker lost mid-trial is an ``error`` outcome naming the cause; nothing is retried,
because a crash may be the very bug under study.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from heisenbisect.errors import HeisenbisectError, InfrastructureError
from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.runners.base import Runner
from heisenbisect.runners.ray_cluster import RayCluster, connect, import_ray
from heisenbisect.runners.ray_worker import TrialHost, run_trial_task
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.protocol import trial_outcome

CANCEL_GRACE_S = (
    5.0  # a cancelled trial gets this long to kill its own tree before its worker is killed
)


class RayRunner(Runner):
    """Trials on Ray, at most ``max_in_flight`` submitted at once; see `Runner` for the contract.

    Joins Ray through `connect` (the session already open, an address, ``RAY_ADDRESS`` or a new
    local cluster) and stops only a cluster it started, in ``close``. ``per_config_hosts``
    defaults to the target's ``keeps_state``.
    """

    def __init__(
        self,
        target: TrialTarget,
        logs_dir: Path,
        *,
        address: str | None = None,
        gpus_per_trial: float = 0,
        cpus_per_trial: float = 1,
        max_in_flight: int | None = None,
        working_dir: str | None = None,
        per_config_hosts: bool | None = None,
        cancel_grace_s: float = CANCEL_GRACE_S,
    ):
        self._ray = import_ray()
        self._cluster: RayCluster = connect(address, working_dir=working_dir)
        self._logs_dir = Path(logs_dir)
        self._target = target
        self._grace_s = cancel_grace_s
        try:
            resources = self._cluster.resources()
            if self._cluster.owned:
                _check_fits(resources, gpus_per_trial, cpus_per_trial)
            self.capacity = max_in_flight or _trials_that_fit(
                resources, gpus_per_trial, cpus_per_trial
            )
            target_ref = self._ray.put(target)  # shipped once, not with every trial
            hosts = target.keeps_state if per_config_hosts is None else per_config_hosts
            launcher = _HostLauncher if hosts else _TaskLauncher
            self._launcher = launcher(
                self._ray, target_ref, gpus_per_trial, cpus_per_trial, self.capacity, cancel_grace_s
            )
        except BaseException:
            self._cluster.close()
            raise
        self._queued: OrderedDict[str, Trial] = OrderedDict()
        self._running: dict[Any, Trial] = {}  # ObjectRef -> Trial
        self._ref_of: dict[str, Any] = {}
        self._stopping: dict[
            Any, tuple[Trial, float]
        ] = {}  # cancelled ref -> (trial, when to kill it)
        self._closed = False

    def submit(self, trial: Trial) -> None:
        self._queued[trial.trial_id] = trial
        self._launch()

    def _launch(self) -> None:
        for trial_id, trial in list(self._queued.items()):
            if len(self._running) + len(self._stopping) >= self.capacity:
                return
            ref = self._launcher.start(trial)
            if ref is None:
                continue  # its config's host is busy: a later trial of another config may go first
            del self._queued[trial_id]
            self._running[ref] = trial
            self._ref_of[trial_id] = ref

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        self._reap_stopping()
        self._launch()
        if not self._running:
            if self._stopping:  # queued trials wait for room that cancelled ones still hold
                pause = self._grace_s if timeout is None else min(timeout, self._grace_s)
                self._ray.wait(list(self._stopping), num_returns=1, timeout=pause)
                self._reap_stopping()
                self._launch()
            return []
        refs = list(self._running)
        ready, _ = self._ray.wait(refs, num_returns=1, timeout=timeout)
        if not ready:
            return []
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
        outcomes = [self._collect(ref) for ref in ready]
        self._launch()
        return outcomes

    def _collect(self, ref: Any) -> Outcome:
        trial = self._running.pop(ref)
        del self._ref_of[trial.trial_id]
        log_path = self._logs_dir / f"{trial.trial_id}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            outcome, log = self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as exc:
            self._launcher.finished(trial, lost=True)
            raise InfrastructureError(
                f"trial {trial.trial_id} raised on its worker: {exc}"
            ) from None
        except self._ray.exceptions.RuntimeEnvSetupError as exc:
            raise InfrastructureError(
                f"Ray could not set up the trial's working_dir: {exc}"
            ) from None
        except self._ray.exceptions.RayError as exc:
            # the worker or its node died mid-trial: evidence of nothing, but recorded with its cause
            self._launcher.finished(trial, lost=True)
            cause = _first_line(exc)
            log_path.write_text(
                f"heisenbisect: the Ray worker running this trial was lost: {cause}\n"
            )
            return trial_outcome(
                trial, TrialStatus.ERROR, log_path=log_path, detail=f"{type(exc).__name__}: {cause}"
            )
        self._launcher.finished(trial, lost=False)
        log_path.write_bytes(log)
        return dataclasses.replace(outcome, log_path=str(log_path))

    def cancel(self, trial_ids: list[str]) -> None:
        for trial_id in trial_ids:
            if self._queued.pop(trial_id, None) is not None:
                continue
            ref = self._ref_of.pop(trial_id, None)
            if ref is None:
                continue
            trial = self._running.pop(ref)
            self._launcher.stop(trial, ref)  # the target's cancelled flag: it kills its own tree
            self._stopping[ref] = (trial, time.monotonic() + self._grace_s)
        self._launch()

    def _reap_stopping(self) -> None:
        """Forget cancelled trials that ended; kill the workers of those past their grace."""
        if not self._stopping:
            return
        for ref, trial, ended in _settled(self._ray, self._stopping):
            if ended:
                self._launcher.finished(trial, lost=self._ended_badly(ref))
            else:
                self._launcher.kill(trial, ref)  # the worker's reaper kills the tree
        self._launcher.sweep()

    def _ended_badly(self, ref: Any) -> bool:
        """Whether a finished cancelled trial took its worker down with it."""
        try:
            self._ray.get(ref, timeout=0)
        except self._ray.exceptions.TaskCancelledError:
            return False
        except self._ray.exceptions.RayError:
            return True
        return False

    def pending(self) -> int:
        return len(self._queued) + len(self._running)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.cancel(list(self._queued) + list(self._ref_of))
            if self._stopping:
                self._ray.wait(
                    list(self._stopping), num_returns=len(self._stopping), timeout=self._grace_s
                )
                for ref in list(self._stopping):
                    self._stopping[ref] = (self._stopping[ref][0], 0.0)
                self._reap_stopping()
            self._launcher.close()
            self._target.close()
        finally:
            self._cluster.close()


T = TypeVar("T")  # what a pending ref stops: a trial or a host's actor


def _settled(ray: Any, pending: dict[Any, tuple[T, float]]) -> list[tuple[Any, T, bool]]:
    """Take out of ``pending`` (ref -> (what it stops, when to stop waiting)) each ref that ended
    or is past its deadline; return (ref, what, whether it ended) for each. A cancelled trial and
    a retired host both get this grace to end by themselves before they are killed."""
    if not pending:
        return []
    refs = list(pending)
    done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    now = time.monotonic()
    settled = []
    for ref in refs:
        what, deadline = pending[ref]
        if ref in done or now >= deadline:
            del pending[ref]
            settled.append((ref, what, ref in done))
    return settled


class _TaskLauncher:
    """One Ray task per trial: Ray places it wherever the resources are free."""

    def __init__(
        self, ray: Any, target_ref: Any, gpus: float, cpus: float, capacity: int, grace_s: float
    ):
        self._ray = ray
        self._target_ref = target_ref
        self._task = ray.remote(run_trial_task).options(
            num_cpus=cpus, num_gpus=gpus, max_retries=0, retry_exceptions=False
        )

    def start(self, trial: Trial) -> Any:
        return self._task.remote(self._target_ref, trial)

    def finished(self, trial: Trial, lost: bool) -> None:
        pass

    def stop(self, trial: Trial, ref: Any) -> None:
        self._ray.cancel(ref, force=False)  # a KeyboardInterrupt in the task

    def kill(self, trial: Trial, ref: Any) -> None:
        self._ray.cancel(ref, force=True)

    def sweep(self) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass
class _Host:
    actor: Any
    busy: bool = False
    last_used: float = field(default_factory=time.monotonic)


class _HostLauncher:
    """One `TrialHost` actor per config, one trial at a time each, at most ``capacity`` actors.

    An idle host is kept (with its server and its resources) for the next trial of its config;
    when another config needs room, the host idle longest is closed.
    """

    def __init__(
        self, ray: Any, target_ref: Any, gpus: float, cpus: float, capacity: int, grace_s: float
    ):
        self._ray = ray
        self._target_ref = target_ref
        self._capacity = capacity
        self._grace_s = grace_s
        self._actor = ray.remote(TrialHost).options(
            num_cpus=cpus, num_gpus=gpus, max_restarts=0, max_task_retries=0, max_concurrency=2
        )
        self._hosts: dict[str, _Host] = {}
        self._retiring: dict[Any, tuple[Any, float]] = {}  # close() ref -> (actor, when to kill it)

    def start(self, trial: Trial) -> Any:
        host = self._host_for(trial.config.key)
        if host is None:
            return None
        host.busy = True
        return host.actor.run.remote(trial)

    def _host_for(self, key: str) -> _Host | None:
        host = self._hosts.get(key)
        if host is not None:
            return None if host.busy else host
        if len(self._hosts) >= self._capacity:
            idle = [k for k, h in self._hosts.items() if not h.busy]
            if not idle:
                return None
            self._retire(min(idle, key=lambda k: self._hosts[k].last_used))
        host = self._hosts[key] = _Host(self._actor.remote(self._target_ref))
        return host

    def _retire(self, key: str) -> None:
        """Close a host: its target stops its server, then the actor exits (Ray frees its resources)."""
        actor = self._hosts.pop(key).actor
        self._retiring[actor.close.remote()] = (actor, time.monotonic() + self._grace_s)

    def sweep(self) -> None:
        """Kill retired hosts whose close did not end them in time."""
        for _, actor, _ in _settled(self._ray, self._retiring):
            self._ray.kill(actor)

    def finished(self, trial: Trial, lost: bool) -> None:
        host = self._hosts.get(trial.config.key)
        if host is None:
            return
        if lost:
            self._ray.kill(self._hosts.pop(trial.config.key).actor)
        else:
            host.busy = False
            host.last_used = time.monotonic()

    def stop(self, trial: Trial, ref: Any) -> None:
        host = self._hosts.get(trial.config.key)
        if host is not None:
            host.actor.cancel.remote(trial.trial_id)

    def kill(self, trial: Trial, ref: Any) -> None:
        host = self._hosts.pop(trial.config.key, None)
        if host is not None:
            self._ray.kill(host.actor)

    def close(self) -> None:
        closing = {host.actor.close.remote(): host.actor for host in self._hosts.values()}
        closing.update({ref: actor for ref, (actor, _) in self._retiring.items()})
        self._hosts.clear()
        self._retiring.clear()
        if closing:
            self._ray.wait(list(closing), num_returns=len(closing), timeout=self._grace_s)
        for actor in closing.values():
            self._ray.kill(actor)


def _trials_that_fit(resources: dict[str, float], gpus: float, cpus: float) -> int:
    """How many trials the cluster runs at once now: the default for ``max_in_flight``."""
    limits = [
        int(resources.get(name, 0) // need)
        for name, need in (("GPU", gpus), ("CPU", cpus))
        if need > 0
    ]
    return max(1, min(limits) if limits else int(resources.get("CPU", 1)))


def _check_fits(resources: dict[str, float], gpus: float, cpus: float) -> None:
    """On a cluster we started (no autoscaler), a trial that can never be scheduled is a spec error."""
    for name, need, field_name in (
        ("GPU", gpus, "gpus_per_trial"),
        ("CPU", cpus, "cpus_per_trial"),
    ):
        have = resources.get(name, 0)
        if need > have:
            raise HeisenbisectError(
                f"execution.{field_name}: a trial needs {need:g} {name}s but this machine's Ray has {have:g},"
                f" got {need:g}"
            )


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
