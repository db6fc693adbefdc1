"""The mark every process heisenbisect starts carries, and how to find and kill the marked.

Containment rests on a marker no descendant sheds by accident: every process started by
`process.start_process_group` gets ``HEISENBISECT_TOKENS`` in its environment, the tokens of its
ancestors plus a fresh one of its own, and every process inherits its parent's environment. A
grandchild that calls ``setsid`` after a double fork leaves the session and the process group,
and is reparented to init, but still carries the token, so `kill_marked` finds it by scanning
``/proc/*/environ``. Only a process that ``execve``s with a cleared environment (``env -i``)
sheds it. cgroups would not depend on that, but need a delegated, writable cgroup v2 hierarchy,
which containers and shared machines rarely give an unprivileged tool (docs/reliability.md).

`targets.process` (which marks what it starts), `targets.reaper` (which kills what a dead process
left) and `lock` (which kills what a dead driver left) all stand on this module, so it sits below
them all.
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterable, Mapping

import psutil

TOKENS_VAR = "HEISENBISECT_TOKENS"
SCAN_ROUNDS = 20  # a process forking while being killed may need a few rounds


def new_token() -> str:
    return secrets.token_hex(8)


def marked_environment(env: Mapping[str, str] | None, token: str) -> dict[str, str]:
    """``env`` (default: this process's) carrying this process's tokens, ``env``'s, and ``token``."""
    env = dict(os.environ if env is None else env)
    tokens = _split(os.environ.get(TOKENS_VAR, "")) + _split(env.get(TOKENS_VAR, ""))
    env[TOKENS_VAR] = ":".join(dict.fromkeys([*tokens, token]))
    return env


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
            if entry.startswith(needle) and tokens & set(
                _split(entry[len(needle) :].decode(errors="replace"))
            ):
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
