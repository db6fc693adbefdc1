"""How many runs a claim needs: the budget below which a verdict is out of reach."""

from __future__ import annotations

import math

from heisenbisect.bisect import stats


def runs_to_claim_zero(zero_rate: float, confidence: float) -> int:
    """The fewest runs, all without failure, whose exact one-sided bound falls below ``zero_rate``.

    The bound for 0 failures in n runs is 1 - (1 - confidence)^(1/n); the closed form gives
    the neighbourhood and the exact Clopper-Pearson bound the screening uses decides.
    """
    n = max(1, math.floor(math.log(1 - confidence) / math.log(1 - zero_rate)) - 1)
    while stats.clopper_pearson_upper(0, n, confidence) >= zero_rate:
        n += 1
    return n
