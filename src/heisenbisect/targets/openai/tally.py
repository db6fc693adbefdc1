"""What a stress run keeps of its sessions, in memory that does not grow with their number: every
session counted by its class, only the `KEEP` lowest-numbered bad sessions of each class kept
whole (the report's examples and their evidence), the tokens summed and at most `LATENCIES`
latencies. Tens of thousands of sessions held every result before (1.1 GB, issue 37).

The kept sessions are the lowest-numbered, not the first finished, so the examples a report
shows do not depend on which replies came back first.
"""

from __future__ import annotations

import heapq
import random
from array import array
from collections import Counter
from typing import Generic, Protocol, TypeVar

from heisenbisect.checks import registry

KEEP = 20  # bad sessions kept whole per class: enough examples for a bug report
LATENCIES = 100_000  # latencies kept: exact percentiles up to this many requests, a sample past it


class Numbered(Protocol):
    """What a tally reads of a session (`workload.SessionResult`): its number and its class."""

    @property
    def index(self) -> int: ...

    @property
    def kind(self) -> str: ...


Session = TypeVar("Session", bound=Numbered)  # `workload.SessionResult` in the stress run


class Tally(Generic[Session]):
    """Sessions counted per class; the `KEEP` lowest-numbered bad ones of each class kept."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self.counts: Counter[str] = Counter()
        self._kept: dict[str, list[tuple[int, Session]]] = {}  # max-heaps by -index

    def add(self, session: Session) -> None:
        self.counts[session.kind] += 1
        if session.kind == registry.OK or self.keep <= 0:
            return
        heap = self._kept.setdefault(session.kind, [])
        if len(heap) < self.keep:
            heapq.heappush(heap, (-session.index, session))
        elif session.index < -heap[0][0]:
            heapq.heapreplace(heap, (-session.index, session))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def kept(self) -> tuple[Session, ...]:
        """The kept bad sessions, lowest-numbered first."""
        return tuple(sorted((s for heap in self._kept.values() for _, s in heap), key=_index))


def _index(session: Numbered) -> int:
    return session.index


class Requests:
    """The answered requests: their count, their completion tokens, and each one's latency up to
    `LATENCIES` of them, past that a uniform sample of that many (reservoir sampling, seeded)."""

    def __init__(self, cap: int = LATENCIES) -> None:
        self.cap = cap
        self.seen = 0
        self.tokens = 0
        self.values = array("d")
        self._rng = random.Random(0)

    def answered(self, seconds: float) -> None:
        self.seen += 1
        if len(self.values) < self.cap:
            self.values.append(seconds)
            return
        slot = self._rng.randrange(self.seen)
        if slot < self.cap:
            self.values[slot] = seconds
