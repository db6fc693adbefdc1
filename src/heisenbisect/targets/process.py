"""Start a command in its own process group, marked, and kill everything it started when needed.

Containment rests on a marker no descendant sheds by accident: every process started here gets
``HEISENBISECT_TOKENS`` in its environment, the tokens of its ancestors plus a fresh one of its
own, and every process inherits its parent's environment. A grandchild that calls ``setsid``
after a double fork leaves the session and the process group, and is reparented to init, but
still carries the token, so `kill_tree` finds it by scanning ``/proc/*/environ``. Only a
process that ``execve``s with a cleared environment (``env -i``) sheds it. cgroups would
not depend on that, but need a delegated, writable cgroup v2 hierarchy, which containers
and shared machines rarely give an unprivileged tool (docs/reliability.md).

While a marked process runs, this process's `reaper.Reaper` knows its token: if this
process dies (``kill -9``, its group killed), the reaper kills every process still marked.
A study driver adds a run token of its own (`lock.StudyLock`), so the next driver on the
same study kills what a dead one left even if its reaper died too.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from typing import Iterable, Mapping

import psutil

TOKENS_VAR = "HEISENBISECT_TOKENS"
SCAN_ROUNDS = 20  # a process forking while being killed may need a few rounds


class MarkedProcess(subprocess.Popen):
    """A `Popen` that remembers the token its whole tree carries."""

    token: str


def new_token() -> str:
    return secrets.token_hex(8)


def marked_environment(env: Mapping[str, str] | None, token: str) -> dict[str, str]:
    """``env`` (default: this process's) carrying this process's tokens, ``env``'s, and ``token``."""
    env = dict(os.environ if env is None else env)
    tokens = _split(os.environ.get(TOKENS_VAR, "")) + _split(env.get(TOKENS_VAR, ""))
    env[TOKENS_VAR] = ":".join(dict.fromkeys([*tokens, token]))
    return env


def start_process_group(argv: list[str], *, env: Mapping[str, str] | None = None, **popen_kwargs) -> MarkedProcess:
    """Start ``argv`` as the leader of a new session, marked with a fresh token (see the module doc)."""
    from heisenbisect.targets.reaper import watch_this_process  # the reaper imports this module

    token = new_token()
    reaper = watch_this_process()
    reaper.started(token)  # before the process exists: a death right after still finds it
    try:
        proc = MarkedProcess(argv, start_new_session=True, env=marked_environment(env, token), **popen_kwargs)
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
        time.sleep(0.02)  # not psutil.wait_procs: it waits for init to reap orphaned zombies, which are dead already
    if token is not None:
        from heisenbisect.targets.reaper import watch_this_process

        watch_this_process().ended(token)


def kill_marked(tokens: Iterable[str], *, spare: Iterable[int] = ()) -> int:
    """SIGKILL every process (with its group) carrying one of ``tokens``, until none is left.

    Returns how many were killed. ``spare`` (and this process) are never touched.
    """
    wanted = set(tokens)
    spared = {os.getpid(), *spare}
    killed = 0
    for _ in range(SCAN_ROUNDS):
        found = [p for p in marked_processes(wanted) if p.pid not in spared]
        if not found:
            break
        for p in found:
            killed += _kill(p)
        psutil.wait_procs(found, timeout=0.2)
    return killed


def marked_processes(tokens: set[str]) -> list[psutil.Process]:
    """The live processes whose environment carries any of ``tokens``."""
    found = []
    needle = TOKENS_VAR.encode() + b"="
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle not in data:
            continue
        for entry in data.split(b"\0"):
            if entry.startswith(needle) and tokens & set(_split(entry[len(needle) :].decode(errors="replace"))):
                try:
                    proc = psutil.Process(int(name))
                    if proc.status() != psutil.STATUS_ZOMBIE:
                        found.append(proc)
                except psutil.Error:
                    pass
                break
    return found


def _kill(proc: psutil.Process) -> int:
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        return 1
    except (psutil.Error, ProcessLookupError, PermissionError):
        return 0


def _split(value: str) -> list[str]:
    return [t for t in value.split(":") if t]


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

