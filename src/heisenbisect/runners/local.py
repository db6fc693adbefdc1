"""Run trials on this machine, up to ``parallel`` at once, each in its own thread and process group."""

from __future__ import annotations

import dataclasses
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from heisenbisect.records import Outcome, Trial
from heisenbisect.runners.base import Runner
from heisenbisect.runners.gpu_slots import GpuSlots
from heisenbisect.targets.base import TrialTarget


class LocalRunner(Runner):
    """A thread pool in front of a `TrialTarget`; see `Runner` for the contract."""

    def __init__(
        self,
        target: TrialTarget,
        logs_dir: Path,
        parallel: int = 1,
        gpu_slots: GpuSlots | None = None,
    ):
        # with GPU placement, no more trials at once than the GPUs have seats
        parallel = min(parallel, gpu_slots.count) if gpu_slots else parallel
        self.capacity = parallel
        self._gpu_slots = gpu_slots
        self._target = target
        self._logs_dir = Path(logs_dir)
        self._pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="trial")
        self._done: queue.Queue[Outcome] = queue.Queue()
        self._cancel_flags: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, trial: Trial) -> None:
        flag = threading.Event()
        with self._lock:
            self._cancel_flags[trial.trial_id] = flag
        future = self._pool.submit(self._run, trial, flag)
        future.add_done_callback(self._reraise_infrastructure)

    def _run(self, trial: Trial, flag: threading.Event) -> Outcome | None:
        if flag.is_set():
            return None
        if self._gpu_slots is None:
            outcome = self._target.execute(trial, self._logs_dir / f"{trial.trial_id}.log", flag)
        else:
            gpu = self._gpu_slots.acquire()
            try:
                if flag.is_set():  # cancelled while it waited for a seat
                    return None
                placed = dataclasses.replace(trial, env={**trial.env, "CUDA_VISIBLE_DEVICES": gpu})
                outcome = self._target.execute(
                    placed, self._logs_dir / f"{trial.trial_id}.log", flag
                )
            finally:
                self._gpu_slots.release(gpu)
        with self._lock:
            if self._cancel_flags.pop(trial.trial_id, None) is not None and not flag.is_set():
                self._done.put(outcome)
        return outcome

    def _reraise_infrastructure(self, future: Future) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._done.put(future.exception())  # type: ignore[arg-type]

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        try:
            first = self._done.get(timeout=timeout)
        except queue.Empty:
            return []
        items = [first]
        while True:
            try:
                items.append(self._done.get_nowait())
            except queue.Empty:
                break
        for item in items:
            if isinstance(item, BaseException):
                raise item
        return items

    def cancel(self, trial_ids: list[str]) -> None:
        with self._lock:
            for trial_id in trial_ids:
                flag = self._cancel_flags.pop(trial_id, None)
                if flag is not None:
                    flag.set()

    def pending(self) -> int:
        with self._lock:
            return len(self._cancel_flags) + self._done.qsize()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._lock:
            for flag in self._cancel_flags.values():
                flag.set()
            self._cancel_flags.clear()
        try:
            self._pool.shutdown(wait=True, cancel_futures=True)
        finally:  # a second Ctrl-C while the trials stop still reaches the target's cleanup
            self._target.close()
