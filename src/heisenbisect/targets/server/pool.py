"""The servers a target keeps between trials, shared by every copy of that target in a process.

A Ray worker unpickles a fresh copy of the target for each task; were the servers kept on
the copy, a server left idle for the next trial of its config would be lost with it, still
holding its GPUs. So servers live in a process-wide pool found by the target's fingerprint.
An idle server is stopped after ``idle_timeout_s`` or when the process exits normally (a
killed Ray worker's trees are the reaper's job).
"""

from __future__ import annotations

import atexit
import random
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field

from heisenbisect.checks.reference_book import Book
from heisenbisect.targets.server.process import ServerProcess

IDLE_CHECK_S = 1.0


@dataclass(eq=False)
class Launch:
    """One server launch and how many trials it has served; ``key`` is its config."""

    server: ServerProcess
    key: Hashable
    trials: int = 0
    idle_since: float = field(default_factory=time.monotonic)
    launch_id: int = field(
        default_factory=lambda: random.SystemRandom().getrandbits(48)
    )  # unique across hosts
    reference: Book = field(default_factory=Book)  # answers alone, by request (checks.reference)

    def metrics(self) -> dict[str, float]:
        """Which launch served the trial, and its place there: launches are nested in configs, so
        the report can check that trials of one launch are no more alike than trials of two."""
        return {"launch": float(self.launch_id), "launch_trial": float(self.trials + 1)}


class ServerPool:
    """Idle and busy launches; each busy one belongs to exactly one running trial."""

    def __init__(self, stop_grace_s: float, idle_timeout_s: float):
        self.stop_grace_s = stop_grace_s
        self.idle_timeout_s = idle_timeout_s
        self._lock = threading.Lock()
        self._idle: list[Launch] = []
        self._busy: list[Launch] = []
        self._reaper: threading.Thread | None = None

    def take(self, key: Hashable) -> Launch | None:
        """An idle launch of ``key``, now busy; idle launches of other configs are stopped (GPUs)."""
        with self._lock:
            launch = next((held for held in self._idle if held.key == key), None)
            others = [held for held in self._idle if held is not launch]
            self._idle = []
            if launch is not None:
                self._busy.append(launch)
        for other in others:
            other.server.stop(self.stop_grace_s)
        return launch

    def add(self, launch: Launch) -> None:
        with self._lock:
            self._busy.append(launch)

    def release(self, launch: Launch, keep: bool) -> None:
        """The trial is done with ``launch``: back to idle when ``keep``, else stopped."""
        with self._lock:
            if launch in self._busy:
                self._busy.remove(launch)
            if keep:
                launch.idle_since = time.monotonic()
                self._idle.append(launch)
                self._start_reaper()
        if not keep:
            launch.server.stop(self.stop_grace_s)

    def servers(self) -> list[ServerProcess]:
        with self._lock:
            return [held.server for held in self._idle + self._busy]

    def close(self) -> None:
        with self._lock:
            launches, self._idle, self._busy = self._idle + self._busy, [], []
        for launch in launches:
            launch.server.stop(self.stop_grace_s)

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(
                target=self._reap_idle, name="server-idle-reaper", daemon=True
            )
            self._reaper.start()

    def _reap_idle(self) -> None:
        while True:
            time.sleep(IDLE_CHECK_S)
            now = time.monotonic()
            with self._lock:
                expired = [
                    held for held in self._idle if now - held.idle_since >= self.idle_timeout_s
                ]
                self._idle = [held for held in self._idle if held not in expired]
                if not self._idle:
                    self._reaper = None
            for launch in expired:
                launch.server.stop(self.stop_grace_s)
            if self._reaper is None:
                return


_pools: dict[Hashable, ServerPool] = {}
_pools_lock = threading.Lock()


def pool_for(fingerprint: Hashable, stop_grace_s: float, idle_timeout_s: float) -> ServerPool:
    with _pools_lock:
        if fingerprint not in _pools:
            _pools[fingerprint] = ServerPool(stop_grace_s, idle_timeout_s)
        return _pools[fingerprint]


@atexit.register
def _close_all() -> None:
    with _pools_lock:
        pools = list(_pools.values())
    for pool in pools:
        pool.close()
