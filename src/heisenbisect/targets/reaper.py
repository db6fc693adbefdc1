"""Kill what a dead process left behind: the marked trial trees of a driver or Ray worker that died.

A trial's process leads its own session (so a timeout can kill its whole group), which also
means it does not die with its parent. When the driver is killed (``kill -9``, its whole
process group killed, the OOM killer) or Ray kills a worker, nothing would stop its trials.
So every process that starts marked processes (`process.start_process_group`) has one reaper,
started on first use in a session of its own, which outlives it and kills, the moment it
dies, every process still carrying a token it was told about (see `markers`).

The watched process holds the write end of the reaper's stdin and writes ``+TOKEN`` when a
marked process starts and ``-TOKEN`` once its tree is dead; its death closes the pipe, which
the reaper sees at once. The reaper never polls the process table while its watched process
lives. Run as ``python -m heisenbisect.targets.reaper WATCHED_PID``.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading

import psutil

from heisenbisect.markers import TOKENS_VAR, kill_marked

LIVENESS_S = 5.0  # a look at the watched process itself, should something else hold the pipe open


class Reaper:
    """The watched process's side: start the reaper once, tell it which tokens are live."""

    def __init__(self, watched_pid: int):
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "heisenbisect.targets.reaper", str(watched_pid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a group kill of the driver or of a trial spares it
            env={
                k: v for k, v in os.environ.items() if k != TOKENS_VAR
            },  # no run's leftover itself
        )
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def started(self, token: str) -> None:
        self._send(f"+{token}\n".encode())

    def ended(self, token: str) -> None:
        self._send(f"-{token}\n".encode())

    def _send(self, message: bytes) -> None:
        with self._lock:
            try:
                stdin = self._proc.stdin
                assert stdin is not None  # started with stdin=PIPE
                stdin.write(message)
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass  # the reaper is gone; the next process started gets a new one


_reaper: Reaper | None = None
_reaper_pid = 0  # the process that started ``_reaper``: a forked child needs its own
_reaper_lock = threading.Lock()


def watch_this_process() -> Reaper:
    """This process's reaper, started on first use (and again should it have died)."""
    global _reaper, _reaper_pid
    with _reaper_lock:
        if _reaper is None or _reaper_pid != os.getpid() or not _reaper.alive():
            _reaper, _reaper_pid = Reaper(os.getpid()), os.getpid()
        return _reaper


def watch(watched_pid: int, notices: int) -> None:
    """Block until ``watched_pid`` dies (or ``notices`` closes), then kill every live token's processes."""
    try:
        watched: psutil.Process | None = psutil.Process(watched_pid)
    except psutil.NoSuchProcess:
        watched = None  # died before this reaper got going: the pipe still says what to kill
    live: set[str] = set()
    pending = b""
    while True:
        ready, _, _ = select.select([notices], [], [], LIVENESS_S)
        if ready:
            chunk = os.read(notices, 65536)
            if not chunk:
                break  # the watched process is gone
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                token = line[1:].decode(errors="replace")
                if line.startswith(b"+"):
                    live.add(token)
                elif line.startswith(b"-"):
                    live.discard(token)
        elif watched is None or not _running(watched):
            break
    if live:
        kill_marked(live)


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    watch(int(args[0]), sys.stdin.fileno())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
