"""What runs on a Ray worker: one trial as a task, or a config's trials in a `TrialHost` actor.

Either way the trial runs in a scratch folder on the worker and its log's bytes go back to
the driver with the outcome; Ray's CUDA_VISIBLE_DEVICES is the one the trial sees. Should Ray
kill the worker mid-trial, the worker's reaper (started by `process.start_process_group`) kills
the trial's marked processes.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import tempfile
import threading
from pathlib import Path

from heisenbisect.records import Outcome, Trial
from heisenbisect.targets.base import TrialTarget

MAX_LOG_BYTES = 32 * 1024 * 1024  # the tail of a longer log comes back
POLL_S = 0.2


def run_trial_task(target: TrialTarget, trial: Trial) -> tuple[Outcome, bytes]:
    """The Ray task for one trial.

    The target runs in a helper thread so that Ray's cancellation, a KeyboardInterrupt in this
    (the task's) thread, can set the target's ``cancelled`` flag and let it kill its own tree.
    """
    _make_interruptible()
    cancelled = threading.Event()
    finished = threading.Event()
    result: list[tuple[Outcome, bytes] | BaseException] = []

    def execute() -> None:
        try:
            result.append(run_in_scratch(target, trial, cancelled))
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
    return result[0]


class TrialHost:
    """A Ray actor holding one config's resources and one target copy across its trials.

    For targets that keep state between trials of a config (a server). Ray cannot interrupt a
    running actor call, so the driver cancels through `cancel`, served by a second thread
    (the actor is created with ``max_concurrency=2``; the driver sends one trial at a time).
    """

    def __init__(self, target: TrialTarget):
        self._target = target
        self._lock = threading.Lock()
        self._flags: dict[str, threading.Event] = {}
        self._cancelled_early: set[str] = set()

    def run(self, trial: Trial) -> tuple[Outcome, bytes]:
        flag = threading.Event()
        with self._lock:
            if trial.trial_id in self._cancelled_early:
                flag.set()
            self._flags[trial.trial_id] = flag
        try:
            return run_in_scratch(self._target, trial, flag)
        finally:
            with self._lock:
                del self._flags[trial.trial_id]
                self._cancelled_early.discard(trial.trial_id)

    def cancel(self, trial_id: str) -> None:
        with self._lock:
            flag = self._flags.get(trial_id)
            if flag is None:
                self._cancelled_early.add(trial_id)  # the cancel overtook its trial
            else:
                flag.set()

    def close(self) -> None:
        """Release the target's state (stop its servers), then end this actor."""
        import ray

        self._target.close()
        ray.actor.exit_actor()

    def pid(self) -> int:
        return os.getpid()


def run_in_scratch(
    target: TrialTarget, trial: Trial, cancelled: threading.Event
) -> tuple[Outcome, bytes]:
    """Run one trial with its log in a scratch folder; return the outcome and the log's bytes."""
    trial = _with_ray_gpus(trial)
    with tempfile.TemporaryDirectory(prefix="heisenbisect-") as scratch:
        log_path = Path(scratch) / f"{trial.trial_id}.log"
        outcome = target.execute(trial, log_path, cancelled)
        return outcome, read_tail(log_path, MAX_LOG_BYTES)


def _make_interruptible() -> None:
    """Let Ray's cancellation, a SIGINT to this worker, interrupt the task.

    A cluster started from a background shell job (``nohup ray start ... &``) hands its
    workers SIGINT ignored; a cancelled trial would then run on, holding its GPUs, until its
    timeout. Only the main thread may set handlers; tasks run there.
    """
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _with_ray_gpus(trial: Trial) -> Trial:
    """Ray's CUDA_VISIBLE_DEVICES wins over any the trial carries: the GPUs are Ray's to assign."""
    import ray

    if not ray.get_gpu_ids() or "CUDA_VISIBLE_DEVICES" not in os.environ:
        return trial
    env = {**trial.env, "CUDA_VISIBLE_DEVICES": os.environ["CUDA_VISIBLE_DEVICES"]}
    return dataclasses.replace(trial, env=env)


def read_tail(path: Path, limit: int) -> bytes:
    if not path.exists():
        return b""
    with open(path, "rb") as log:
        log.seek(0, os.SEEK_END)
        size = log.tell()
        if size <= limit:
            log.seek(0)
            return log.read()
        log.seek(size - limit)
        return (
            f"[heisenbisect: first {size - limit} bytes of the log dropped]\n".encode() + log.read()
        )
