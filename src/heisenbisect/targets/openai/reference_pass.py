"""The reference passes: every session answered alone first, then under load, then the diverged
ones alone again with their prefix warm, which tells a cache fault from a load fault.

The first pass runs one session at a time, not streamed, and records each answer by its request
(`checks.reference` in ``record`` mode) into ``book``, which the caller keeps per launch: a
request already answered by this launch is not asked again. The load pass is the workload as
configured, its answers compared with the book; the warm pass asks up to `MAX_WARM` diverged
sessions again, alone and not streamed. The load pass's result carries the passes' metrics.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from heisenbisect.checks import reference
from heisenbisect.checks.reference_layers import SessionEvidence, layer_metrics
from heisenbisect.targets.openai.workload import Replay, SessionResult, StressResult, StressSettings

MAX_WARM = 8  # diverged sessions asked again per run: enough to separate layers, bounded cost

OnePass = Callable[
    [StressSettings, Mapping[str, dict[str, Any]], Sequence[int] | None, Replay | None],
    Awaitable[StressResult],
]


async def with_reference(
    settings: StressSettings, book: dict[str, Any], one_pass: OnePass
) -> StressResult:
    """The load pass's result, with the passes' ``reference_*`` metrics."""
    alone = replace(settings, concurrency=1, stream="false")
    record: dict[str, Any] = {"mode": reference.RECORD, "book": book}
    started = time.monotonic()
    await one_pass(
        alone, {reference.NAME: record}, None, lambda r: book.get(reference.request_key(r))
    )
    reference_wall = time.monotonic() - started
    compared = _compare_scratch(book)
    load = await one_pass(settings, {reference.NAME: compared}, None, None)
    diverged = [s for s in load.sessions if s.kind == reference.DIVERGED]
    warm_scratch = _compare_scratch(book)
    again: dict[int, bool] = {}
    if diverged:
        asked = [s.index for s in diverged[:MAX_WARM]]
        warm = await one_pass(alone, {reference.NAME: warm_scratch}, asked, None)
        again = {s.index: s.kind == reference.DIVERGED for s in warm.sessions}
    check = settings.checks.get(reference.NAME) or reference.CHECK.defaults()
    assert isinstance(check, reference.ReferenceSettings)
    evidence = [_evidence(s, compared, again.get(s.index), check.margin) for s in diverged]
    streamed = sum(settings.streams(s.index) for s in load.sessions)
    metrics = {
        "reference_requests": float(record.get("asked", 0)),
        "reference_cached": float(record.get("cached", 0)),
        "reference_wall_s": reference_wall,
        "reference_logprobs": float(_has_logprobs(book)),
        "reference_compared": float(compared.get("compared", 0)),
        "reference_compared_plain": float(len(load.sessions) - streamed),
        "reference_near_ties": float(sum(s.kind == reference.NEAR_TIE for s in load.sessions)),
        "reference_unreferenced": float(compared.get("unreferenced", 0)),
        "reference_warm_asked": float(len(again)),
        "reference_warm_diverged": float(sum(again.values())),
        **layer_metrics(evidence),
    }
    return replace(load, reference=metrics)


def _compare_scratch(book: dict[str, Any]) -> dict[str, Any]:
    return {"mode": reference.COMPARE, "book": book, "divergences": {}}


def _evidence(
    session: SessionResult, compared: Mapping[str, Any], again: bool | None, margin: float
) -> SessionEvidence:
    """What the passes saw of one diverged session (its divergence found by its last request)."""
    request = (session.evidence or {}).get("request") or {}
    divergence = compared["divergences"].get(reference.request_key(request))
    same = bool(divergence and divergence.same_tokens)
    gap = divergence.gap if divergence else None
    return SessionEvidence(session.stream, same, again, None if gap is None else gap >= margin)


def _has_logprobs(book: Mapping[str, Any]) -> bool:
    """Whether the recorded answers carry top-2 logprobs (a server may ignore the ask)."""
    return any(
        reference.answer_of(response).gaps is not None
        and any(g is not None for g in reference.answer_of(response).gaps or ())
        for response in book.values()
    )
