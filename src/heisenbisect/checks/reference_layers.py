"""Which layer broke, from the reference passes' evidence: numerics, parser, scheduler or cache.

Each diverged session gets one layer (`layer_of`); a run's (or an arm's) counts, as the
``reference_*`` metrics a trial records, become one sentence per finding (`findings`), with the
evidence behind it, and "cannot tell" where the evidence does not separate the layers. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PARSER, CACHE, NUMERICS, UNKNOWN = "parser", "cache", "numerics", "unknown"
LAYERS = (NUMERICS, PARSER, CACHE, UNKNOWN)


@dataclass(frozen=True)
class SessionEvidence:
    """What the passes saw of one diverged session.

    ``same_tokens``: its tokens equal the reference's (logprobs), only the parsed answer
    differs; ``reproduced_warm``: asked again alone, not streamed, its prefix now warm, it
    diverged again (None: not asked again); ``not_a_tie``: the first differing token's top-2
    gap in the reference was at least the margin (None: no logprobs there)."""

    streamed: bool
    same_tokens: bool
    reproduced_warm: bool | None
    not_a_tie: bool | None


def layer_of(session: SessionEvidence) -> str:
    """The layer the evidence points to; `UNKNOWN` when it does not separate them."""
    if session.same_tokens:
        return PARSER
    if session.reproduced_warm:
        return CACHE
    if session.reproduced_warm is False and session.not_a_tie:
        return NUMERICS
    return UNKNOWN


def layer_metrics(sessions: Mapping[SessionEvidence, int]) -> dict[str, float]:
    """``reference_layer_<layer>`` counts, and the diverged sessions streamed or not, from how
    many diverged sessions showed each evidence (a few kinds, however many sessions)."""
    metrics = {f"reference_layer_{layer}": 0.0 for layer in LAYERS}
    for session, n in sessions.items():
        metrics[f"reference_layer_{layer_of(session)}"] += n
    metrics["reference_diverged_streamed"] = float(
        sum(n for s, n in sessions.items() if s.streamed)
    )
    metrics["reference_diverged_plain"] = float(
        sum(n for s, n in sessions.items() if not s.streamed)
    )
    return metrics


def findings(metrics: Mapping[str, float]) -> list[str]:
    """One sentence per finding from summed ``reference_*`` metrics; empty without a reference."""
    if "reference_requests" not in metrics:
        return []

    def n(name: str) -> int:
        return int(metrics.get(f"reference_{name}", 0))

    out = [
        f"reference pass: {n('requests') + n('cached')} requests answered alone "
        f"({n('cached')} from this launch's cache) in {metrics.get('reference_wall_s', 0):.1f} s; "
        f"{n('compared')} answers under load compared with them"
    ]
    if n("logprobs"):
        out.append(
            f"near-ties: {n('near_ties')} divergences where the reference's top-1 and top-2 "
            f"logprobs were closer than the margin were set aside, not evidence"
        )
    else:
        out.append("near-ties: the server gave no top-2 logprobs, so they cannot be told apart")
    diverged = n("diverged_streamed") + n("diverged_plain")
    if not diverged:
        out.append("which layer: no answer diverged beyond near-ties, nothing to attribute")
        return out
    if n("layer_numerics"):
        out.append(
            f"numerics: {n('layer_numerics')} sessions diverged only under load (alone again, "
            "warm, they matched), at tokens that are not near-ties"
        )
    if n("layer_parser"):
        out.append(
            f"parser: {n('layer_parser')} sessions got the same tokens as alone but a different "
            "parsed answer"
        )
    if n("layer_cache"):
        out.append(
            f"scheduler or cache: {n('layer_cache')} sessions diverged again when asked alone "
            "with their prefix warm: a warm prefix suffices, load is not needed"
        )
    unknown = n("layer_unknown")
    if unknown:
        out.append(_cannot_tell(unknown, metrics))
    return out


def _cannot_tell(unknown: int, metrics: Mapping[str, float]) -> str:
    streamed, plain = (
        int(metrics.get("reference_diverged_streamed", 0)),
        int(metrics.get("reference_diverged_plain", 0)),
    )
    plain_compared = int(metrics.get("reference_compared_plain", 0))
    if streamed and not plain and plain_compared:
        return (
            f"parser, likely: every diverged session streamed ({streamed}), none of "
            f"{plain_compared} not streamed did; without logprobs the raw output cannot be "
            f"compared, so {unknown} sessions stay unattributed"
        )
    return (
        f"cannot tell: {unknown} sessions diverged under load only; without a top-2 gap at the "
        "first differing token (logprobs) numerics cannot be told from a scheduler fault"
    )
