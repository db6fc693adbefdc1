"""How an amplification ended, and the numbers its report and its answer rest on.

The search ends one of three ways (the failure never fired, nothing beats the current
settings, or a best to confirm); a confirmation then decides the last. Pure, like the
`Search` and `Confirmation` it reads (`decide.amplify`).
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

from heisenbisect.decide.amplify import Claim, ConfirmResult, Estimate, Search, estimate
from heisenbisect.records import Config


class Ending(str, enum.Enum):
    """How an amplification ended."""

    CONFIRMED = "confirmed"
    NOT_CONFIRMED = "not_confirmed"  # the best settings did not beat the current ones significantly
    CURRENT_BEST = "current_best"  # no candidate estimated above the current settings
    NEVER_FAILED = "never_failed"  # no run of any candidate failed


@dataclass(frozen=True)
class Summary:
    """Where an amplification stands: built from the replayed search and confirmation."""

    ending: Ending
    best: Config
    search_best: Estimate
    search_current: Estimate
    confirmation: ConfirmResult | None
    search_runs: int
    candidates: int
    confidence: float

    @property
    def best_estimate(self) -> Estimate:
        return self.confirmation.best if self.confirmation else self.search_best

    @property
    def current_estimate(self) -> Estimate:
        return self.confirmation.current if self.confirmation else self.search_current


def summary_of(search: Search, confidence: float) -> Summary:
    """Where the search leaves things: never failed, the current settings best, or a best to confirm."""
    estimates = search.estimates()
    best, current = search.best(), search.current
    if search.never_failed():
        ending = Ending.NEVER_FAILED
    elif best == current:
        ending = Ending.CURRENT_BEST
    else:
        ending = Ending.NOT_CONFIRMED  # until confirmed
    return Summary(
        ending=ending,
        best=best,
        search_best=estimates[best],
        search_current=estimates.get(
            current, estimate(search.candidates[current].evidence, confidence)
        ),
        confirmation=None,
        search_runs=search.used,
        candidates=len(search.candidates),
        confidence=confidence,
    )


def confirmed(summary: Summary, confirmation: ConfirmResult) -> Summary:
    """The search's summary once the confirmation of its best has decided."""
    ending = Ending.CONFIRMED if confirmation.claim is Claim.CONFIRMED else Ending.NOT_CONFIRMED
    return dataclasses.replace(summary, ending=ending, confirmation=confirmation)
