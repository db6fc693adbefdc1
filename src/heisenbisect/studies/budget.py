"""Whether a screening's budget can reach a verdict at all: warned before its first trial
(`bisect run`) and by `bisect validate`, never refused (a smaller study still measures)."""

from __future__ import annotations

from pathlib import Path

from heisenbisect.decide.budget import runs_to_claim_zero
from heisenbisect.hypotheses import Spec
from heisenbisect.hypotheses.loader import spec_position


def budget_warning(spec: Spec, spec_path: Path) -> str | None:
    """A warning when ``max_trials`` runs can never prove a zero rate (so never ``eliminates``)."""
    s = spec.statistics
    needed = runs_to_claim_zero(s.zero_rate, s.confidence)
    if s.max_trials >= needed:
        return None
    return (
        f"warning: {spec_position(spec_path, 'statistics.max_trials')}: statistics.max_trials: "
        f"{s.max_trials} runs cannot prove a zero rate: an arm needs at least {needed} runs without "
        f"a failure for the exact {s.confidence:g} bound to fall below zero_rate {s.zero_rate:g}, "
        f"so no arm can be found to eliminate the failure; raise max_trials to {needed} or more"
    )
