"""Start a command in its own process group and kill the whole tree when needed."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil


def start_process_group(argv: list[str], **popen_kwargs) -> subprocess.Popen:
    """Start ``argv`` as the leader of a new session, so its whole group can be killed."""
    return subprocess.Popen(argv, start_new_session=True, **popen_kwargs)


def kill_tree(proc: subprocess.Popen, grace_s: float = 0.0) -> None:
    """Kill ``proc``, its process group and every descendant, even ones that left the group.

    With ``grace_s`` > 0 the tree gets SIGTERM first and that long to exit.
    """
    try:
        descendants = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    if grace_s > 0:
        _signal_all(proc, descendants, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _any_alive(proc, descendants):
            time.sleep(0.05)
    _signal_all(proc, descendants, signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _any_alive(proc, descendants):
        time.sleep(0.02)  # not psutil.wait_procs: it waits for init to reap orphaned zombies, which are dead already


def _signal_all(proc: subprocess.Popen, descendants: list[psutil.Process], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for child in descendants:
        try:
            child.send_signal(sig)
        except psutil.NoSuchProcess:
            pass


def _any_alive(proc: subprocess.Popen, descendants: list[psutil.Process]) -> bool:
    return proc.poll() is None or any(_alive(c) for c in descendants)


def _alive(child: psutil.Process) -> bool:
    try:
        return child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # reaped between the two calls
        return False
