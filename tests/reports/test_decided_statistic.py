"""Each verdict's row shows the statistic that decided it, in the measure that decided it.

`eliminates` rests on the zero bound of the share of failed runs; `reduces`, `increases` and
`no_effect` on the mean failure fraction per run at the deciding look. A report that led with
the share of failed runs showed "debug_sync=1 increases" beside 60.6% vs 65.0% with overlapping
intervals, while the fractions that decided it went from 10.9% to 21.1%.
"""

from __future__ import annotations

import numpy as np
import pytest

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.decide.sequential import equivalence_pvalue
from heisenbisect.decide.stats import not_reduced_pvalue
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict
from heisenbisect.reports.decided import cell, ratio_bounds
from heisenbisect.testing.strategy_kit import drive_in_order

BASE = Config()
SYNC = Config((("debug_sync", "1"),))  # fails in as many runs, in more sessions of each
FIX = Config((("lock", "1"),))
DECOY = Config((("topk", "v2"),))
SETTINGS = ScreeningSettings(confidence=0.95, zero_rate=0.1, max_trials=160, first_look=20)


def sessions_failed(config: Config, i: int, rng: np.random.Generator) -> int:
    """Of 20 sessions: the baseline and the decoy fail 2 in 60% of runs; debug_sync 4 in 65%."""
    if config == FIX:
        return 0
    if config == SYNC:
        return 4 if rng.random() < 0.65 else 0
    return 2 if rng.random() < 0.6 else 0


def screened() -> Screening:
    screening = Screening(BASE, [SYNC, FIX, DECOY], SETTINGS)
    rng = np.random.default_rng(7)
    drive_in_order(screening, lambda c, n: Outcome(f"t{n}", c.key, n, TrialStatus.OK, sessions_failed(c, n, rng), 20))
    return screening


def test_each_verdict_shows_the_statistic_that_decided_it():
    result = screened().result()
    arms = {arm.config: arm for arm in result.arms}
    assert [arms[c].verdict for c in (SYNC, FIX, DECOY)] == [Verdict.INCREASES, Verdict.ELIMINATES, Verdict.NO_EFFECT]
    base = result.baseline

    sync = cell(arms[SYNC], base, SETTINGS)
    assert sync.startswith("mean failure fraction ") and "[95% CI +" in sync  # the interval excludes zero
    low = float(sync.split("[95% CI ")[1].split(",")[0])
    assert low > 0

    fix = cell(arms[FIX], base, SETTINGS)
    assert fix.startswith("zero bound: share of runs that failed below ")
    assert f"0 of {arms[FIX].runs} failed" in fix and "under zero_rate 10.0%" in fix

    decoy = cell(arms[DECOY], base, SETTINGS)
    assert decoy.startswith("mean failure fraction per run, arm / baseline: ") and "inside [0.50, 2.00]" in decoy
    bounds = [float(x) for x in decoy.split("equivalence interval [")[1].split("]")[0].split(", ")]
    assert 0.5 <= bounds[0] <= 1 <= bounds[1] <= 2


@pytest.mark.parametrize("seed", range(3))
def test_the_ratio_bounds_are_the_equivalence_test_inverted(seed: int):
    """Brute force: the lower bound is the largest ratio r at which "arm <= r x baseline" is rejected
    on a fine grid, and the interval lies inside [1 - m, 1 / (1 - m)] exactly when the equivalence
    test claims at that level."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    arm = rng.binomial(20, rng.uniform(0.05, 0.3), n) / 20 * (rng.random(n) < 0.7)
    base = rng.binomial(20, rng.uniform(0.05, 0.3), n) / 20 * (rng.random(n) < 0.7)
    level = float(rng.uniform(0.005, 0.05))
    low, high = ratio_bounds(arm, base, level)
    grid = np.linspace(0, 4, 2001)
    rejected = [r for r in grid if not_reduced_pvalue(arm, base, r) <= level]
    assert low == pytest.approx(max(rejected, default=0.0), abs=3e-3)
    flipped = [r for r in grid if not_reduced_pvalue(base, arm, r) <= level]
    assert 1 / high == pytest.approx(max(flipped, default=0.0), abs=3e-3)
    for margin in (0.5, 0.7, 0.8):
        inside = low >= 1 - margin and high <= 1 / (1 - margin)
        assert inside == (equivalence_pvalue(arm, base, margin) <= level) or min(np.count_nonzero(arm), np.count_nonzero(base)) < 5
