"""A sequential two-sample test on interleaved runs: does side A fail more often than side B?

Runs come in rounds, one run at each side (the k-th run of A with the k-th of B). Only
discordant rounds (one side failed, the other passed) tell the rates apart, and given that a
round is discordant it is "A failed" with chance theta = p_A (1 - p_B) / (p_A (1 - p_B) +
p_B (1 - p_A)): exactly 1/2 when the rates are equal, whatever their common value, and below
1/2 when A fails less often. So the test is Wald's SPRT on the discordant rounds, theta = 1/2
against ``theta1`` (the ratio expected when A fails at p and B at q, `theta_for`); the common
rate never has to be known or estimated.

The upper threshold is log(1 / alpha): the likelihood ratio is a nonnegative martingale (a
supermartingale when A fails less often) under the null, so by Ville's inequality the chance
that it ever reaches 1 / alpha is at most alpha, however long the test runs and wherever it is
cut off. The lower threshold, log(beta / (1 - alpha)), is Wald's: the test then says A is not
shown to fail more often. `tests/decide/test_paired.py` measures both error rates by simulation.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

# theta1 is kept inside these: at theta1 = 1 a single round where only B failed would end the
# test at once, which a good commit failing at a rate the bisection rounded to 0 does not deserve
THETA_RANGE = (0.6, 0.99)


class Paired(str, enum.Enum):
    ABOVE = "above"  # A fails more often than B (claimed at level alpha)
    NOT_ABOVE = "not_above"  # Wald's lower boundary: A is not shown to fail more often
    PENDING = "pending"


def theta_for(p_a: float, p_b: float) -> float:
    """P(A failed | one of A and B failed) when A fails at ``p_a`` and B at ``p_b``, kept in
    `THETA_RANGE`."""
    a, b = p_a * (1.0 - p_b), p_b * (1.0 - p_a)
    theta = a / (a + b) if a + b > 0 else 0.5
    return min(max(theta, THETA_RANGE[0]), THETA_RANGE[1])


@dataclass(frozen=True)
class PairedTest:
    """Wald's SPRT of "A fails more often than B" on interleaved rounds (module docstring)."""

    theta1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not 0.5 < self.theta1 < 1.0:
            raise ValueError(f"theta1 must lie in (0.5, 1), got {self.theta1}")
        if not (0.0 < self.alpha < 0.5 and 0.0 < self.beta < 0.5):
            raise ValueError(f"alpha and beta lie in (0, 0.5), got {self.alpha}, {self.beta}")

    def log_ratio(self, a_only: int, b_only: int) -> float:
        """log LR of theta1 against 1/2 after ``a_only`` rounds where only A failed, ``b_only``
        where only B did."""
        return a_only * math.log(2.0 * self.theta1) + b_only * math.log(2.0 * (1.0 - self.theta1))

    def decision(self, a_only: int, b_only: int) -> Paired:
        ratio = self.log_ratio(a_only, b_only)
        if ratio >= math.log(1.0 / self.alpha):
            return Paired.ABOVE
        if ratio <= math.log(self.beta / (1.0 - self.alpha)):
            return Paired.NOT_ABOVE
        return Paired.PENDING


@dataclass(frozen=True)
class Scan:
    """Where a paired test stands after reading rounds in order: its decision, and the round it
    was reached at (every round read, while pending)."""

    decision: Paired
    rounds: int
    a_only: int
    b_only: int


def scan(
    test: PairedTest,
    a: Sequence[bool],
    b: Sequence[bool],
    max_rounds: int,
    *,
    stop_below: bool = True,
) -> Scan:
    """Read the rounds ``zip(a, b)`` (True: the run failed) in order, stopping at the first
    decision or after ``max_rounds``: rounds run past a decision (in flight when it was reached)
    never change it, so a replay of the store reaches the same answer as the live run. Without
    ``stop_below`` only "above" decides (a caller that tests both directions)."""
    a_only = b_only = rounds = 0
    for failed_a, failed_b in zip(a, b, strict=False):
        if rounds >= max_rounds:
            break
        rounds += 1
        a_only += failed_a and not failed_b
        b_only += failed_b and not failed_a
        decided = test.decision(a_only, b_only)
        if decided is Paired.ABOVE or (stop_below and decided is Paired.NOT_ABOVE):
            return Scan(decided, rounds, a_only, b_only)
    return Scan(Paired.PENDING, rounds, a_only, b_only)
