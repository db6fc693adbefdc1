"""Kill what a dead process left behind: the trial trees of a Ray worker that was killed.

A trial's process leads its own session (so a timeout can kill its whole group), which
also means it does not die with its parent. When Ray force-cancels a task, or a worker
crashes, the worker is gone before the target could kill the tree. One reaper per
worker watches the worker's descendants while it lives and kills the last ones it saw,
with their process groups, the moment it dies.

Run as ``python -m heisenbisect.runners.reaper WORKER_PID``; started by `spawn_reaper`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

SNAPSHOT_INTERVAL_S = 0.1


def spawn_reaper(watched_pid: int) -> subprocess.Popen:
    """Start a reaper for ``watched_pid`` in its own session, so a group kill of a trial spares it."""
    return subprocess.Popen(
        [sys.executable, "-m", "heisenbisect.runners.reaper", str(watched_pid)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def watch(watched_pid: int, interval_s: float = SNAPSHOT_INTERVAL_S) -> None:
    """Block until ``watched_pid`` dies, then kill every descendant it had at the last look."""
    try:
        watched = psutil.Process(watched_pid)
    except psutil.NoSuchProcess:
        return
    seen: dict[int, psutil.Process] = {}
    me = os.getpid()
    while watched.is_running() and watched.status() != psutil.STATUS_ZOMBIE:
        try:
            current = {p.pid: p for p in watched.children(recursive=True) if p.pid != me}
        except psutil.NoSuchProcess:
            break
        seen = current  # a trial that finished normally was already reaped by its target
        time.sleep(interval_s)
    kill_all(list(seen.values()))


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
    watch(int(args[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
