"""Start a command in its own process group, marked, and kill everything it started when needed.

Every process started here carries a fresh token (`markers`: why a token, and how a process that
left its group is still found). While it runs, this process's `reaper.Reaper` knows its token:
if this process dies (``kill -9``, its group killed), the reaper kills every process still
marked. A study driver adds a run token of its own (`lock.StudyLock`), so the next driver on the
same study kills what a dead one left even if its reaper died too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping

import psutil

from heisenbisect.markers import kill_marked, marked_environment, marked_processes, new_token
from heisenbisect.targets.reaper import watch_this_process


class MarkedProcess(subprocess.Popen):
    """A `Popen` that remembers the token its whole tree carries."""

    token: str


def start_process_group(
    argv: list[str], *, env: Mapping[str, str] | None = None, **popen_kwargs
) -> MarkedProcess:
    """Start ``argv`` as the leader of a new session, marked with a fresh token (see the module doc)."""
    token = new_token()
    reaper = watch_this_process()
    reaper.started(token)  # before the process exists: a death right after still finds it
    try:
        proc = MarkedProcess(
            argv, start_new_session=True, env=marked_environment(env, token), **popen_kwargs
        )
    except BaseException:
        reaper.ended(token)
        raise
    proc.token = token
    return proc


def kill_tree(proc: subprocess.Popen, grace_s: float = 0.0) -> None:
    """Kill ``proc``, its process group, every descendant, and every process carrying its token.

    With ``grace_s`` > 0 the tree gets SIGTERM first and that long to exit.
    """
    token = getattr(proc, "token", None)
    tree = _tree(proc, token)
    if grace_s > 0:
        _signal_all(proc, tree, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (proc.poll() is None or any(_alive(p) for p in tree)):
            time.sleep(0.05)
    _signal_all(proc, tree, signal.SIGKILL)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    if token is not None:
        kill_marked([token])  # what forked between the first look and the kill
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in tree):
        time.sleep(
            0.02
        )  # not psutil.wait_procs: it waits for init to reap orphaned zombies, which are dead already
    if token is not None:
        watch_this_process().ended(token)


def _tree(proc: subprocess.Popen, token: str | None) -> list[psutil.Process]:
    try:
        tree = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    if token is not None:
        known = {p.pid for p in tree} | {proc.pid}
        tree += [p for p in marked_processes({token}) if p.pid not in known]
    return tree


def _signal_all(proc: subprocess.Popen, tree: list[psutil.Process], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for child in tree:
        try:
            child.send_signal(sig)
        except psutil.NoSuchProcess:
            pass


def _alive(child: psutil.Process) -> bool:
    try:
        return child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # reaped between the two calls
        return False
