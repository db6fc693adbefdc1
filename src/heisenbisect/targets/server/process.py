"""One server process tree: launch on free ports, wait until it answers, tear it all down.

Readiness is the stack's (`stacks.base.Stack`): an HTTP path answering the expected status, or a
line in the server's log, while the launcher is alive. Teardown kills every process the server
ever had: the launcher's group, and each descendant seen while it ran (a stack's scheduler, TP
workers, detokenizer, engine core), even ones that left the group or were orphaned by a crashed
launcher.
"""

from __future__ import annotations

import enum
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from heisenbisect.stacks.base import Stack
from heisenbisect.targets.log_tail import read_tail
from heisenbisect.targets.process import kill_tree, start_process_group
from heisenbisect.targets.server.ports import ServerPorts, allocate_ports, release_ports

HEALTH_TIMEOUT_S = (
    5.0  # a ready server answers in well under a second; longer would delay cancellation
)
LOG_TAIL_LINES = 40
FIRST_POLL_S = 0.05  # the shortest pause between readiness probes (see wait_ready)
HOST = "127.0.0.1"


class Readiness(str, enum.Enum):
    READY = "ready"
    EXITED = "exited"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


@dataclass
class ServerProcess:
    """A launched server; not thread safe: one trial uses it at a time.

    Its log lives in a folder of its own until `stop`: a trial's log folder may be a scratch
    folder that goes before the server does (Ray), so trials copy their part of it instead.
    """

    proc: subprocess.Popen
    ports: ServerPorts
    log_path: Path
    argv: list[str]
    stack: Stack
    output_start: int = 0  # where the server's own output begins, after heisenbisect's header
    started: float = field(default_factory=time.monotonic)
    known: dict[int, psutil.Process] = field(default_factory=dict)
    stopped: bool = False

    @classmethod
    def start(
        cls,
        stack: Stack,
        launcher: tuple[str, ...],
        model: str,
        args: list[str],
        env: Mapping[str, str],
        cwd: str | None = None,
    ) -> ServerProcess:
        """Start the stack's launch command on fresh ports, then ``args``; raises OSError."""
        ports = allocate_ports()
        fields = {
            "model": model,
            "host": HOST,
            "port": str(ports.http),
            "nccl_port": str(ports.nccl),
        }
        argv = stack.argv(launcher, fields, args)
        full_env = {**env, **(stack.port_env(ports) if stack.port_env else {})}
        log_path = (
            Path(tempfile.mkdtemp(prefix=f"heisenbisect-server-{ports.http}-")) / "server.log"
        )
        header = f"$ {' '.join(argv)}\n".encode()
        try:
            with open(log_path, "ab") as log:
                log.write(header)
                log.flush()
                proc = start_process_group(
                    argv,
                    cwd=cwd,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        except OSError:
            release_ports(ports)
            shutil.rmtree(log_path.parent, ignore_errors=True)
            raise
        return cls(proc, ports, log_path, argv, stack, output_start=len(header))

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.ports.http}"

    def alive(self) -> bool:
        return not self.stopped and self.proc.poll() is None

    def healthy(self) -> bool:
        """One readiness probe: the stack's path answers its status (or its log shows the ready
        line) and the launcher still runs."""
        self.track()
        if self.stack.ready_log is not None:
            output = own_output(self.log_path, self.output_start)
            ok = re.search(self.stack.ready_log, output, re.MULTILINE) is not None
        else:
            ok = self.status(self.stack.ready_path or "/") == self.stack.ready_status
        return ok and self.alive()

    def status(self, path: str) -> int | None:
        """The HTTP status ``GET path`` answers (an error status too), or None when nothing answers."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=HEALTH_TIMEOUT_S) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait_ready(
        self, timeout_s: float, cancelled: threading.Event, poll_s: float = 1.0
    ) -> Readiness:
        """Probe until ready, dead, cancelled or out of time. The pause between probes is a
        quarter of the time waited so far, at least ``FIRST_POLL_S`` and at most ``poll_s``: a
        server up (or dead) in half a second is seen then, not a whole ``poll_s`` later, and one
        that takes minutes is probed every ``poll_s``."""
        started = time.monotonic()
        deadline = started + timeout_s
        while True:
            if not self.alive():
                return Readiness.EXITED
            if self.healthy():
                return Readiness.READY
            if cancelled.is_set():
                return Readiness.CANCELLED
            if time.monotonic() >= deadline:
                return Readiness.TIMEOUT
            now = time.monotonic()
            pause = min(poll_s, max(FIRST_POLL_S, (now - started) / 4))
            if cancelled.wait(min(pause, max(0.0, deadline - now))):
                return Readiness.CANCELLED

    def track(self) -> None:
        """Remember every current descendant, so teardown finds it even after it is orphaned."""
        try:
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                self.known.setdefault(child.pid, child)
        except psutil.Error:
            pass

    def stop(self, grace_s: float = 10.0) -> None:
        """Kill the whole tree (SIGTERM, ``grace_s``, SIGKILL), free the ports, drop the log; idempotent."""
        if self.stopped:
            return
        self.track()
        self.stopped = True
        kill_tree(self.proc, grace_s=grace_s if self.proc.poll() is None else 0.0)
        stragglers = [p for p in self.known.values() if _running(p)]
        for proc in stragglers:
            try:
                proc.kill()
            except psutil.Error:
                pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_running(p) for p in stragglers):
            time.sleep(0.02)
        release_ports(self.ports)
        shutil.rmtree(self.log_path.parent, ignore_errors=True)

    def pids(self) -> list[int]:
        """The launcher and every descendant seen so far (for tests and diagnostics)."""
        self.track()
        return [self.proc.pid, *self.known]

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return tail(self.log_path, lines)

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def own_output(path: Path, start: int, max_bytes: int = 256 * 1024) -> str:
    """The last ``max_bytes`` of the log from ``start`` on: what the server printed, never the
    header heisenbisect wrote before it (its argv may match a ready pattern)."""
    try:
        with open(path, "rb") as log:
            log.seek(max(start, log.seek(0, os.SEEK_END) - max_bytes))
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def tail(path: Path, lines: int, max_bytes: int = 256 * 1024) -> str:
    text = read_tail(path, max_bytes) or ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
