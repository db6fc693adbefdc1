"""Which command-line flags the server at hand knows, read from its ``--help`` (SGLang's, vLLM's
``--help=all``).

A config that passes a flag this server does not have (an older commit, another version)
cannot be tested: the launch would die in argparse. Finding that out from ``--help``
once per interpreter and source tree is cheaper than a failed launch per trial, and lets
the trial say ``skip`` instead of ``error``.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from heisenbisect.targets.protocol import never_ran_reason

FLAG = re.compile(r"(?<![\w-])--[A-Za-z0-9][A-Za-z0-9_-]*")
OPTION_LINE_MAX_INDENT = 8  # argparse indents invocations by 2 (per group level); help text by ~24
PROBE_TIMEOUT_S = 600.0


def parse_help_flags(text: str) -> frozenset[str]:
    """The ``--flags`` named in an argparse ``--help``: its usage block and its option lines."""
    flags: set[str] = set()
    in_usage = False
    for line in text.splitlines():
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if stripped.startswith("usage:"):
            in_usage = True
        elif in_usage and (not stripped or indent == 0):
            in_usage = False
        if in_usage:
            flags.update(FLAG.findall(line))
        elif stripped.startswith("-") and indent <= OPTION_LINE_MAX_INDENT:
            invocation = re.split(r"\s{2,}", stripped, maxsplit=1)[0]
            flags.update(FLAG.findall(invocation))
    flags.discard("--help")
    return frozenset(flags)


def unknown_flags(args: Iterable[str], known: frozenset[str]) -> list[str]:
    """Flags in ``args`` that ``known`` lacks; an unambiguous prefix counts, as argparse allows."""
    unknown = []
    for arg in args:
        if not arg.startswith("--") or arg == "--":
            continue
        flag = arg.split("=", 1)[0]
        if flag in known:
            continue
        if len([k for k in known if k.startswith(flag)]) == 1:
            continue
        unknown.append(flag)
    return unknown


@dataclass(frozen=True)
class ProbeResult:
    flags: frozenset[str]
    error: str = ""  # why the probe failed; then ``flags`` is empty
    never_ran: str = ""  # the launcher itself could not start (not found, no such module)


class FlagProbe:
    """Runs ``<launcher> --help`` once per (launcher, PYTHONPATH, cwd, commit) and remembers the flags.

    The commit belongs in the key because a bisection reuses one worktree path for many commits.
    """

    def __init__(self, timeout_s: float = PROBE_TIMEOUT_S):
        self.timeout_s = timeout_s
        self._results: dict[tuple, ProbeResult] = {}
        self._lock = threading.Lock()

    def flags(
        self,
        launcher: tuple[str, ...],
        env: Mapping[str, str],
        cwd: str | None,
        commit: str | None = None,
        help_args: tuple[str, ...] = ("--help",),
    ) -> ProbeResult:
        key = (launcher, env.get("PYTHONPATH"), cwd, commit, help_args)
        with self._lock:  # one probe at a time: a probe imports all of SGLang, which is slow
            if key not in self._results:
                self._results[key] = self._probe(launcher, env, cwd, help_args)
            return self._results[key]

    def _probe(
        self,
        launcher: tuple[str, ...],
        env: Mapping[str, str],
        cwd: str | None,
        help_args: tuple[str, ...],
    ) -> ProbeResult:
        try:
            done = subprocess.run(
                [*launcher, *help_args],
                env=dict(env),
                cwd=cwd,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=self.timeout_s,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            command = " ".join([*launcher, *help_args])
            never_ran = f"{command}: {exc}" if isinstance(exc, OSError) else ""
            return ProbeResult(frozenset(), f"{command}: {exc}", never_ran)
        flags = parse_help_flags(done.stdout)
        if done.returncode != 0 or not flags:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
            command = " ".join([*launcher, *help_args])
            reason = never_ran_reason(done.returncode, tail)
            return ProbeResult(
                frozenset(),
                f"{command} exited {done.returncode}:\n{tail}",
                f"{command}: {reason}" if reason else "",
            )
        return ProbeResult(flags)


SHARED_PROBE = (
    FlagProbe()
)  # one per process: every copy of a target (Ray ships one per task) asks it
