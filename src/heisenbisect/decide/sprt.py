"""Wald's sequential probability ratio test: is this commit good (fails at rate q) or bad (rate p)?

Used by `bisect trial`, a `git bisect run` predicate. Both error rates are bounded by
``1 - confidence`` (Wald's thresholds, checked by simulation in the tests). With q = 0 a
single failure proves the commit bad.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field


class Decision(str, enum.Enum):
    GOOD = "good"
    BAD = "bad"
    UNDECIDED = "undecided"


@dataclass
class SequentialTest:
    """Feed it one run at a time; it decides as soon as the evidence is strong enough."""

    p_bad: float
    p_good: float = 0.0
    confidence: float = 0.95
    runs: int = field(default=0, init=False)
    failures: int = field(default=0, init=False)
    log_ratio: float = field(default=0.0, init=False)  # log P(runs | bad) - log P(runs | good)

    def __post_init__(self) -> None:
        if not 0.0 <= self.p_good < self.p_bad <= 1.0:
            raise ValueError(
                f"need 0 <= p_good < p_bad <= 1, got p_good={self.p_good}, p_bad={self.p_bad}"
            )
        if not 0.5 < self.confidence < 1.0:
            raise ValueError(f"confidence must lie in (0.5, 1), got {self.confidence}")

    @property
    def upper(self) -> float:
        """Decide bad above this: log((1 - beta) / alpha)."""
        error = 1.0 - self.confidence
        return math.log((1.0 - error) / error)

    @property
    def lower(self) -> float:
        """Decide good below this: log(beta / (1 - alpha))."""
        return -self.upper

    def update(self, failed: bool) -> Decision:
        self.runs += 1
        self.failures += failed
        self.log_ratio += _step(self.p_bad, self.p_good, failed)
        return self.decision()

    def decision(self) -> Decision:
        if self.log_ratio >= self.upper:
            return Decision.BAD
        if self.log_ratio <= self.lower:
            return Decision.GOOD
        return Decision.UNDECIDED


def _step(p: float, q: float, failed: bool) -> float:
    if failed:
        return math.inf if q == 0.0 else math.log(p / q)
    return -math.inf if p == 1.0 else math.log1p(-p) - math.log1p(-q)
