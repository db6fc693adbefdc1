"""How many runs a claim needs: the budget below which a verdict is out of reach."""

from __future__ import annotations

import math

TIE = 1e-9  # closer than this to zero_rate, the closed form and scipy's beta quantile may disagree


def runs_to_claim_zero(zero_rate: float, confidence: float) -> int:
    """The fewest runs, all without failure, whose exact one-sided bound falls below ``zero_rate``.

    The Clopper-Pearson bound for 0 failures in n runs is exactly 1 - (1 - confidence)^(1/n),
    so no scipy is needed (`bisect validate` calls this and must start fast); only where that
    lands within TIE of ``zero_rate`` does the screening's own bound (scipy) decide.
    """
    n = max(1, math.floor(math.log(1 - confidence) / math.log(1 - zero_rate)) - 1)
    while _zero_failure_bound(n, confidence, zero_rate) >= zero_rate:
        n += 1
    return n


def _zero_failure_bound(n: int, confidence: float, zero_rate: float) -> float:
    bound = 1.0 - (1.0 - confidence) ** (1.0 / n)
    if abs(bound - zero_rate) < TIE:
        from heisenbisect.decide import stats  # scipy: only at a numerical tie

        return stats.clopper_pearson_upper(0, n, confidence)
    return bound
