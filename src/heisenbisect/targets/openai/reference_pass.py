"""The reference passes: every session answered alone first, then under load, then the diverged
ones alone again with their prefix warm, which tells a cache fault from a load fault.

The first pass runs one session at a time, not streamed, and records each answer by its request
(`checks.reference` in ``record`` mode) into ``book`` (a compact `reference_book.Book`), which
the caller keeps per launch: a request already answered by this launch is not asked again. The
load pass is the workload as configured, its answers compared with the book; the warm pass asks
up to `MAX_WARM` diverged sessions again, alone and not streamed. The load pass's result carries
the passes' metrics.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from heisenbisect.checks import reference
from heisenbisect.checks.reference_answer import key_of
from heisenbisect.checks.reference_book import Book
from heisenbisect.checks.reference_layers import SessionEvidence, layer_metrics
from heisenbisect.targets.openai.workload import (
    Observe,
    Replay,
    SessionResult,
    StressResult,
    StressSettings,
)

MAX_WARM = 8  # diverged sessions asked again per run: enough to separate layers, bounded cost

OnePass = Callable[
    [
        StressSettings,
        Mapping[str, dict[str, Any]],
        Sequence[int] | None,
        Replay | None,
        Observe | None,
    ],
    Awaitable[StressResult],
]


async def with_reference(settings: StressSettings, book: Book, one_pass: OnePass) -> StressResult:
    """The load pass's result, with the passes' ``reference_*`` metrics."""
    alone = replace(settings, concurrency=1, stream="false")
    record: dict[str, Any] = {"mode": reference.RECORD, "book": book}
    started = time.monotonic()
    await one_pass(alone, {reference.NAME: record}, None, book.replay, None)
    reference_wall = time.monotonic() - started
    compared = _compare_scratch(book)
    check = settings.checks.get(reference.NAME) or reference.CHECK.defaults()
    assert isinstance(check, reference.ReferenceSettings)
    diverged = _Diverged(compared, check.margin)
    load = await one_pass(settings, {reference.NAME: compared}, None, None, diverged.add)
    warm_scratch = _compare_scratch(book)
    again: dict[int, bool] = {}
    if diverged.first:
        asked = sorted(diverged.first)
        warm = await one_pass(alone, {reference.NAME: warm_scratch}, asked, None, None)
        again = dict.fromkeys(asked, False)
        again.update((s.index, s.kind == reference.DIVERGED) for s in warm.kept if s.index in again)
        diverged.asked_again(again)
    streamed = sum(settings.streams(index) for index in range(load.total))
    metrics = {
        "reference_requests": float(record.get("asked", 0)),
        "reference_cached": float(record.get("cached", 0)),
        "reference_wall_s": reference_wall,
        "reference_logprobs": float(book.logprobs),
        "reference_compared": float(compared.get("compared", 0)),
        "reference_compared_plain": float(load.total - streamed),
        "reference_near_ties": float(load.tally[reference.NEAR_TIE]),
        "reference_unreferenced": float(compared.get("unreferenced", 0)),
        "reference_warm_asked": float(len(again)),
        "reference_warm_diverged": float(sum(again.values())),
        **layer_metrics(diverged.evidence),
    }
    return replace(load, reference=metrics)


class _Diverged:
    """The load pass's diverged sessions as the layers need them, told of each as it ends: how
    many showed each evidence, and the `MAX_WARM` lowest-numbered (asked again warm) by number."""

    def __init__(self, compared: Mapping[str, Any], margin: float) -> None:
        self.compared, self.margin = compared, margin
        self.evidence: Counter[SessionEvidence] = Counter()
        self.first: dict[int, SessionEvidence] = {}

    def add(self, session: SessionResult) -> None:
        if session.kind != reference.DIVERGED:
            return
        seen = _evidence(session, self.compared, None, self.margin)
        self.evidence[seen] += 1
        self.first[session.index] = seen
        if len(self.first) > MAX_WARM:
            del self.first[max(self.first)]

    def asked_again(self, again: Mapping[int, bool]) -> None:
        """Each session asked again moves to the evidence of what it did then."""
        for index, seen in self.first.items():
            self.evidence[seen] -= 1
            self.evidence[replace(seen, reproduced_warm=again[index])] += 1
        self.evidence = +self.evidence


def _compare_scratch(book: Book) -> dict[str, Any]:
    return {"mode": reference.COMPARE, "book": book, "divergences": {}}


def _evidence(
    session: SessionResult, compared: Mapping[str, Any], again: bool | None, margin: float
) -> SessionEvidence:
    """What the passes saw of one diverged session (its divergence found by its last request)."""
    request = (session.evidence or {}).get("request") or {}
    divergence = compared["divergences"].get(key_of(request))
    same = bool(divergence and divergence.same_tokens)
    gap = divergence.gap if divergence else None
    return SessionEvidence(session.stream, same, again, None if gap is None else gap >= margin)
