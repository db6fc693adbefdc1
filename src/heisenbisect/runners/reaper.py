"""Kill what a dead process left behind: the trial trees of a Ray worker that was killed.

A trial's process leads its own session (so a timeout can kill its whole group), which
also means it does not die with its parent. When Ray force-cancels a task, or a worker
crashes, the worker is gone before the target could kill the tree. One reaper per
worker watches the worker's descendants and kills the last ones it saw, with their
process groups, the moment the worker dies.

The worker holds the write end of the reaper's stdin and writes ``1`` when a trial starts
and ``0`` when it ends; its death closes the pipe, which the reaper sees at once. Looking at
the process table costs time on a busy node, so the reaper looks often only just after a
trial starts (when its tree takes shape), seldom while it runs, and not at all while the
worker has nothing left running. Run as ``python -m heisenbisect.runners.reaper WORKER_PID``.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import psutil

FAST_S = 0.1  # between looks during a trial's first seconds
FAST_FOR_S = 2.0
SLOW_S = 1.0  # between looks later; a process the last look missed is still in a group that is killed
LIVENESS_S = 5.0  # a look at the worker itself, should something else hold the pipe open


class Reaper:
    """The worker's side: start the reaper once, tell it when trials start and end."""

    def __init__(self, watched_pid: int):
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "heisenbisect.runners.reaper", str(watched_pid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a group kill of a trial spares it
        )

    def alive(self) -> bool:
        return self._proc.poll() is None

    def trial_started(self) -> None:
        self._send(b"1")

    def trial_ended(self) -> None:
        self._send(b"0")

    def _send(self, message: bytes) -> None:
        try:
            self._proc.stdin.write(message)
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the reaper is gone; the next trial starts a new one


def watch(watched_pid: int, notices: int) -> None:
    """Block until ``watched_pid`` dies (or ``notices`` closes), then kill its last descendants."""
    try:
        watched = psutil.Process(watched_pid)
    except psutil.NoSuchProcess:
        return
    me = os.getpid()
    seen: list[psutil.Process] = []
    trial_since: float | None = None  # when the running trial started; None between trials
    while True:
        if trial_since is not None:
            wait_s = FAST_S if time.monotonic() - trial_since < FAST_FOR_S else SLOW_S
        else:
            wait_s = SLOW_S if seen else LIVENESS_S  # something outlived its trial (a kept server)
        ready, _, _ = select.select([notices], [], [], wait_s)
        if ready:
            message = os.read(notices, 64)
            if not message:
                break  # the worker is gone
            trial_since = time.monotonic() if message.endswith(b"1") else None
        if not _running(watched):
            break
        if trial_since is not None or seen or ready:
            try:
                seen = [p for p in watched.children(recursive=True) if p.pid != me]
            except psutil.NoSuchProcess:
                break
    kill_all(seen)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def kill_all(processes: list[psutil.Process]) -> None:
    """SIGKILL each still-running process (psutil checks it is the same one) and its group."""
    for proc in processes:
        try:
            if not proc.is_running():
                continue
            pgid = os.getpgid(proc.pid)
            if pgid == proc.pid:  # a group leader: the trial's session, grandchildren included
                os.killpg(pgid, signal.SIGKILL)
            proc.kill()
        except (psutil.NoSuchProcess, ProcessLookupError, PermissionError):
            continue
    psutil.wait_procs(processes, timeout=5)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    watch(int(args[0]), sys.stdin.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
