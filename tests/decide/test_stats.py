"""The statistics against brute force and simulation."""

from __future__ import annotations

import itertools
import random
import warnings

import numpy as np
import pytest
from scipy import stats as scipy_stats

from heisenbisect.decide import stats
from heisenbisect.simulation import FailureModel


@pytest.mark.parametrize("failures,trials", [(0, 1), (0, 59), (3, 40), (10, 10)])
def test_clopper_pearson_upper_bound_is_the_exact_one_sided_bound(failures, trials):
    upper = stats.clopper_pearson_upper(failures, trials, 0.95)
    if failures == trials:
        assert upper == 1.0
        return
    # the bound is where seeing this few failures becomes a 5% event
    assert scipy_stats.binom.cdf(failures, trials, upper) == pytest.approx(0.05, abs=1e-6)
    if failures == 0:
        assert upper == pytest.approx(1 - 0.05 ** (1 / trials))


def test_permutation_pvalue_matches_full_enumeration_on_small_samples():
    arm = np.array([0.0, 0.0, 0.1, 0.0])
    base = np.array([0.3, 0.0, 0.2, 0.25, 0.0])
    pooled = np.concatenate([arm, base])
    observed = arm.mean() - base.mean()
    diffs = []
    for chosen in itertools.combinations(range(len(pooled)), len(arm)):
        mask = np.zeros(len(pooled), bool)
        mask[list(chosen)] = True
        diffs.append(pooled[mask].mean() - pooled[~mask].mean())
    diffs = np.array(diffs)
    # two-sided as scipy defines it: twice the smaller one-sided tail
    tail = min(np.mean(diffs >= observed - 1e-12), np.mean(diffs <= observed + 1e-12))
    assert stats.difference_pvalue(arm, base) == pytest.approx(min(1.0, 2 * tail), abs=1e-9)


def test_difference_pvalue_is_calibrated_with_correlated_sessions():
    """Under the null, with sessions failing together inside runs, 5% tests reject ~5%."""
    rng = random.Random(7)
    model = FailureModel(0.3, sessions=60, severity=0.4, concentration=2.0)
    pvalues = [stats.difference_pvalue(runs(model, rng, 30), runs(model, rng, 30), seed=i) for i in range(300)]
    rejected = np.mean(np.array(pvalues) <= 0.05)
    assert rejected <= 0.09  # nominal 5%; binomial noise over 300 studies


def test_holm_matches_the_step_down_by_hand():
    p = [0.01, 0.04, 0.03, 0.5]
    # sorted 0.01*4, 0.03*3, 0.04*2, 0.5*1 with running max, in the original order
    assert stats.holm_adjust(p) == pytest.approx([0.04, 0.09, 0.09, 0.5])


def test_not_reduced_pvalue_separates_decoys_from_suppressors():
    rng = random.Random(1)
    base = runs(FailureModel(0.4), rng, 300)
    decoy = runs(FailureModel(0.4), rng, 300)
    suppressor = runs(FailureModel(0.1), rng, 300)
    assert stats.not_reduced_pvalue(decoy, base, 0.5) < 0.01
    assert stats.not_reduced_pvalue(suppressor, base, 0.5) > 0.5


def runs(model: FailureModel, rng: random.Random, n: int) -> np.ndarray:
    """Per-run failure fractions of n simulated runs."""
    return np.array(model.draw_runs(rng, n)) / model.sessions


def test_a_constant_nonzero_group_gives_welch_without_a_precision_warning():
    """Every run failing 3 of 8 sessions is a group of variance 0, which Welch handles."""
    arm, baseline = np.full(20, 0.375), np.array([0.5, 0.25] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = stats.not_reduced_pvalue(arm, baseline, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = scipy_stats.ttest_ind(arm, 0.5 * baseline, equal_var=False, alternative="greater").pvalue
    assert p == pytest.approx(expected)


def test_holm_agrees_with_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 40):
        pvalues = list(rng.random(size) ** 3) + [0.01, 0.01]
        assert stats.holm_adjust(pvalues) == pytest.approx(list(multipletests(pvalues, method="holm")[1]))


def test_written_out_t_tests_match_scipy():
    rng = np.random.default_rng(3)
    for i in range(300):
        nx, ny = rng.integers(2, 80, 2)
        x = rng.random(nx) * (rng.random(nx) < 0.3)
        y = rng.random(ny) * (rng.random(ny) < rng.random())
        if i % 7 == 0:
            x = np.full(nx, 0.25)  # variance exactly 0 on one side
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            pooled = scipy_stats.ttest_ind(x, y).pvalue
            welch = scipy_stats.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue
        assert stats.pooled_t_pvalue(x, y) == pytest.approx(pooled, abs=1e-12)
        assert stats.welch_greater_pvalue(x, y) == pytest.approx(welch, abs=1e-12)


def test_clopper_pearson_interval_is_binomtests_exact_interval():
    for failures, trials in [(0, 1), (0, 59), (3, 40), (10, 10), (7, 960)]:
        ci = scipy_stats.binomtest(failures, trials).proportion_ci(confidence_level=0.95, method="exact")
        assert stats.clopper_pearson_interval(failures, trials, 0.95) == pytest.approx((ci.low, ci.high), abs=1e-9)


@pytest.mark.parametrize("n1,n2", [(10, 10), (20, 30), (40, 40)])
def test_newcombe_interval_keeps_each_tail_near_its_share_by_enumeration(n1, n2):
    """Brute force over every pair of counts, on a grid of rates a skip share has: the exact
    chance that the 90% interval lies wholly above, or wholly below, the true difference is at
    most about 5% (5.2% at worst: Newcombe's combination is not exact)."""
    counts = list(itertools.product(range(n1 + 1), range(n2 + 1)))
    bounds = np.array([stats.newcombe_difference_interval(a, n1, b, n2, 0.90) for a, b in counts])
    x1, x2 = np.array(counts).T
    grid = (0.0, 0.02, 0.1, 0.3, 0.5)
    for p1, p2 in itertools.product(grid, grid):
        weight = scipy_stats.binom.pmf(x1, n1, p1) * scipy_stats.binom.pmf(x2, n2, p2)
        assert weight[bounds[:, 0] > p1 - p2].sum() <= 0.053
        assert weight[bounds[:, 1] < p1 - p2].sum() <= 0.053


def test_newcombe_interval_is_newcombes_with_exact_bounds():
    """Newcombe's formula, checked two ways: from the two exact intervals by hand (the square
    root of the summed squared distances), and close to statsmodels' Wilson-based ``newcomb``
    for large counts, where the two rate intervals agree."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = stats.newcombe_difference_interval(30, 100, 10, 120, 0.95)
    low1, high1 = stats.clopper_pearson_interval(30, 100, 0.95)
    low2, high2 = stats.clopper_pearson_interval(10, 120, 0.95)
    d = 0.3 - 10 / 120
    assert low == pytest.approx(d - ((0.3 - low1) ** 2 + (high2 - 10 / 120) ** 2) ** 0.5)
    assert high == pytest.approx(d + ((high1 - 0.3) ** 2 + (10 / 120 - low2) ** 2) ** 0.5)
    big = stats.newcombe_difference_interval(300, 1000, 100, 1200, 0.95)
    wilson = confint_proportions_2indep(300, 1000, 100, 1200, method="newcomb", alpha=0.05)
    assert big == pytest.approx(tuple(wilson), abs=0.005)
    assert stats.newcombe_difference_interval(0, 0, 3, 10, 0.95) == (-1.0, 1.0)


def test_newcombe_interval_covers_by_simulation():
    """Simulated reference at unequal sizes: the 95% interval covers the true difference at
    least 95% of the time (within the simulation's own error)."""
    rng = np.random.default_rng(7)
    p1, p2, n1, n2 = 0.15, 0.05, 90, 170
    x1, x2 = rng.binomial(n1, p1, 2000), rng.binomial(n2, p2, 2000)
    covered = [
        low <= p1 - p2 <= high
        for low, high in (
            stats.newcombe_difference_interval(int(a), n1, int(b), n2, 0.95) for a, b in zip(x1, x2)
        )
    ]
    assert np.mean(covered) >= 0.94
