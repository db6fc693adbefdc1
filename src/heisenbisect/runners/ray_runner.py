"""Run trials as Ray tasks, one per trial, each holding the GPUs and CPUs the spec asks for.

The same picklable `TrialTarget` runs on the worker. What a worker cannot share with the
driver travels explicitly: the factor environment inside the `Trial`, the log back as bytes
with the outcome, the target's files through the job's ``working_dir`` (see `connect`).
A worker lost mid-trial is an ``error`` outcome naming the cause; nothing is retried,
because a crash may be the very bug under study.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from heisenbisect.errors import HeisenbisectError, InfrastructureError
from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.runners.base import Runner, TrialTarget
from heisenbisect.runners.ray_cluster import RayCluster, connect, import_ray
from heisenbisect.runners.reaper import spawn_reaper

CANCEL_GRACE_S = 5.0  # a cancelled trial gets this long to kill its own tree before its worker is killed
MAX_LOG_BYTES = 32 * 1024 * 1024  # the tail of a longer log comes back
POLL_S = 0.2

_reaper = None  # one per worker process, see `_ensure_reaper`


class RayRunner(Runner):
    """Trials as Ray tasks, at most ``max_in_flight`` submitted at once; see `Runner` for the contract.

    With ``cluster`` None it joins Ray through `connect` (an address, ``RAY_ADDRESS`` or a new
    local cluster) and stops only a cluster it started, in ``close``.
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
            self.capacity = max_in_flight or _trials_that_fit(resources, gpus_per_trial, cpus_per_trial)
            self._target_ref = self._ray.put(target)  # shipped once, not with every trial
            options: dict[str, Any] = {
                "num_cpus": cpus_per_trial,
                "num_gpus": gpus_per_trial,
                "max_retries": 0,
                "retry_exceptions": False,
            }
            self._task = self._ray.remote(run_trial_on_worker).options(**options)
        except BaseException:
            self._cluster.close()
            raise
        self._queued: OrderedDict[str, Trial] = OrderedDict()
        self._running: dict[Any, Trial] = {}  # ObjectRef -> Trial
        self._ref_of: dict[str, Any] = {}
        self._stopping: dict[Any, float] = {}  # cancelled ObjectRef -> when to force-kill it
        self._closed = False

    def submit(self, trial: Trial) -> None:
        self._queued[trial.trial_id] = trial
        self._launch()

    def _launch(self) -> None:
        while self._queued and len(self._running) < self.capacity:
            _, trial = self._queued.popitem(last=False)
            ref = self._task.remote(self._target_ref, trial)
            self._running[ref] = trial
            self._ref_of[trial.trial_id] = ref

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        self._launch()
        self._reap_stopping()
        if not self._running:
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
            raise InfrastructureError(f"trial {trial.trial_id} raised on its worker: {exc}") from None
        except self._ray.exceptions.RuntimeEnvSetupError as exc:
            raise InfrastructureError(f"Ray could not set up the trial's working_dir: {exc}") from None
        except self._ray.exceptions.RayError as exc:
            # the worker or its node died mid-trial: evidence of nothing, but recorded with its cause
            cause = _first_line(exc)
            log_path.write_text(f"heisenbisect: the Ray worker running this trial was lost: {cause}\n")
            return Outcome(
                trial_id=trial.trial_id,
                config_key=trial.config.key,
                index=trial.index,
                status=TrialStatus.ERROR,
                log_path=str(log_path),
                detail=f"{type(exc).__name__}: {cause}",
            )
        log_path.write_bytes(log)
        return dataclasses.replace(outcome, log_path=str(log_path))

    def cancel(self, trial_ids: list[str]) -> None:
        for trial_id in trial_ids:
            if self._queued.pop(trial_id, None) is not None:
                continue
            ref = self._ref_of.pop(trial_id, None)
            if ref is None:
                continue
            del self._running[ref]
            # a KeyboardInterrupt in the task sets the target's cancelled flag: it kills its tree
            self._ray.cancel(ref, force=False)
            self._stopping[ref] = time.monotonic() + self._grace_s
        self._launch()

    def _reap_stopping(self) -> None:
        """Forget cancelled tasks that ended; force-kill those past their grace (the reaper cleans up)."""
        if not self._stopping:
            return
        refs = list(self._stopping)
        done, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
        for ref in done:
            del self._stopping[ref]
        now = time.monotonic()
        for ref, deadline in list(self._stopping.items()):
            if now >= deadline:
                self._ray.cancel(ref, force=True)
                del self._stopping[ref]

    def pending(self) -> int:
        return len(self._queued) + len(self._running)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.cancel(list(self._queued) + list(self._ref_of))
            if self._stopping:
                self._ray.wait(list(self._stopping), num_returns=len(self._stopping), timeout=self._grace_s)
                for ref in self._stopping:
                    self._ray.cancel(ref, force=True)
                self._stopping.clear()
            self._target.close()
        finally:
            self._cluster.close()


def run_trial_on_worker(target: TrialTarget, trial: Trial) -> tuple[Outcome, bytes]:
    """The Ray task: run one trial in a scratch folder, return its outcome and its log's bytes.

    The target runs in a helper thread so that Ray's cancellation, a KeyboardInterrupt in this
    (the task's) thread, can set the target's ``cancelled`` flag and let it kill its own tree.
    """
    _ensure_reaper()
    trial = _with_ray_gpus(trial)
    with tempfile.TemporaryDirectory(prefix="heisenbisect-") as scratch:
        log_path = Path(scratch) / f"{trial.trial_id}.log"
        cancelled = threading.Event()
        finished = threading.Event()
        result: list[Outcome | BaseException] = []

        def execute() -> None:
            try:
                result.append(target.execute(trial, log_path, cancelled))
            except BaseException as exc:  # handed to the task's thread, re-raised there
                result.append(exc)
            finally:
                finished.set()

        runner = threading.Thread(target=execute, name=f"trial-{trial.trial_id}", daemon=True)
        try:
            runner.start()
            while not finished.wait(POLL_S):
                pass
        except KeyboardInterrupt:
            cancelled.set()
            runner.join()
            raise
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0], _read_tail(log_path, MAX_LOG_BYTES)


def _ensure_reaper() -> None:
    """Start this worker's reaper once: it kills the trial trees if the worker is killed."""
    global _reaper
    if _reaper is None or _reaper.poll() is not None:
        _reaper = spawn_reaper(os.getpid())


def _with_ray_gpus(trial: Trial) -> Trial:
    """Ray's CUDA_VISIBLE_DEVICES wins over any the trial carries: the GPUs are Ray's to assign."""
    if not import_ray().get_gpu_ids() or "CUDA_VISIBLE_DEVICES" not in os.environ:
        return trial
    env = {**trial.env, "CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"]}
    return dataclasses.replace(trial, env=env)


def _read_tail(path: Path, limit: int) -> bytes:
    if not path.exists():
        return b""
    with open(path, "rb") as log:
        log.seek(0, os.SEEK_END)
        size = log.tell()
        if size <= limit:
            log.seek(0)
            return log.read()
        log.seek(size - limit)
        return f"[heisenbisect: first {size - limit} bytes of the log dropped]\n".encode() + log.read()


def _trials_that_fit(resources: dict[str, float], gpus: float, cpus: float) -> int:
    """How many trials the cluster runs at once now: the default for ``max_in_flight``."""
    limits = [int(resources.get(name, 0) // need) for name, need in (("GPU", gpus), ("CPU", cpus)) if need > 0]
    return max(1, min(limits) if limits else int(resources.get("CPU", 1)))


def _check_fits(resources: dict[str, float], gpus: float, cpus: float) -> None:
    """On a cluster we started (no autoscaler), a trial that can never be scheduled is a spec error."""
    for name, need, field in (("GPU", gpus, "gpus_per_trial"), ("CPU", cpus, "cpus_per_trial")):
        have = resources.get(name, 0)
        if need > have:
            raise HeisenbisectError(
                f"execution.{field}: a trial needs {need:g} {name}s but this machine's Ray has {have:g}, got {need:g}"
            )


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
