"""The generic target: run a command once per trial, following the trial protocol."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.runners.base import TrialTarget
from heisenbisect.runners.process import kill_tree, start_process_group
from heisenbisect.runners.protocol import outcome_from_exit, trial_environment, trial_outcome

WATCH_INTERVAL_S = 0.1


@dataclass(frozen=True)
class CommandTarget(TrialTarget):
    """Runs ``argv + trial.args`` in ``cwd`` with the trial's environment; kills it at ``timeout_s``."""

    argv: tuple[str, ...]
    timeout_s: float
    cwd: str | None = None
    crashes_count: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)

    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome:
        log_path = log_path.resolve()  # the target runs elsewhere: hand it an absolute path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        result_path = log_path.with_suffix(".result.json")
        result_path.unlink(missing_ok=True)
        env = trial_environment(trial, result_path)
        env.update(self.extra_env)
        started = time.monotonic()
        with open(log_path, "wb") as log:
            try:
                proc = start_process_group(
                    [*self.argv, *trial.args],
                    cwd=trial.workdir or self.cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                )
            except OSError as exc:
                log.write(f"cannot start {self.argv[0]!r}: {exc}\n".encode())
                return _outcome(trial, TrialStatus.ERROR, log_path, 0.0, f"cannot start: {exc}")
            ended = _watch(proc, self.timeout_s, cancelled)
        duration = time.monotonic() - started
        if ended == "timeout":
            return _outcome(trial, TrialStatus.TIMEOUT, log_path, duration, f"killed after {self.timeout_s:g}s")
        if ended == "cancelled":
            return _outcome(trial, TrialStatus.ERROR, log_path, duration, "cancelled")
        return outcome_from_exit(
            trial,
            proc.returncode,
            (result_path, _last_line(log_path)),
            crashes_count=self.crashes_count,
            duration_s=duration,
            log_path=log_path,
        )


def _watch(proc: subprocess.Popen, timeout_s: float, cancelled: threading.Event) -> str:
    """Wait for ``proc``; kill its whole tree on timeout or cancellation. Returns how it ended.

    The caller blocks in ``wait`` (no polling latency); a watchdog thread does the killing.
    """
    finished = threading.Event()
    reason = ["exited"]
    deadline = time.monotonic() + timeout_s

    def watchdog() -> None:
        while not finished.wait(min(WATCH_INTERVAL_S, max(0.0, deadline - time.monotonic()))):
            if cancelled.is_set() or time.monotonic() >= deadline:
                reason[0] = "cancelled" if cancelled.is_set() else "timeout"
                kill_tree(proc)
                return

    guard = threading.Thread(target=watchdog, daemon=True)
    guard.start()
    proc.wait()
    finished.set()
    guard.join()
    if reason[0] == "exited":
        kill_tree(proc)  # the leader is gone; a lingering grandchild in its group is not kept
    return reason[0]


def _last_line(log_path: Path, tail_bytes: int = 65536) -> str:
    with open(log_path, "rb") as log:
        log.seek(0, 2)
        size = log.tell()
        log.seek(max(0, size - tail_bytes))
        lines = [ln for ln in log.read().decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _outcome(trial: Trial, status: TrialStatus, log_path: Path, duration: float, detail: str) -> Outcome:
    return trial_outcome(trial, status, duration_s=duration, log_path=log_path, detail=detail)
