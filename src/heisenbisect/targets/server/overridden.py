"""Configs a stack's read-back found overridden (`stacks.read_back`), remembered per process so
that their later trials are skipped without a launch."""

from __future__ import annotations

import threading
from collections.abc import Hashable


class OverriddenConfigs:
    """Configs found overridden, per process: their later trials are skipped without a launch."""

    def __init__(self) -> None:
        self._found: dict[Hashable, str] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> str | None:
        with self._lock:
            return self._found.get(key)

    def add(self, key: Hashable, message: str) -> None:
        with self._lock:
            self._found[key] = message


OVERRIDDEN = OverriddenConfigs()  # one per process, as SHARED_PROBE: every copy of a target asks it
