"""The launch-heterogeneity test against exact enumeration, and its false-alarm rate by simulation."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from heisenbisect.decide.launches import check_launches, statistic


def exact_p(runs: dict) -> float:
    """The permutation p by enumerating every way to deal each config's outcomes to its launches."""
    configs = list(runs.values())
    observed = statistic(runs)
    per_config = []
    for launches in configs:
        sizes = [len(v) for v in launches.values()]
        outcomes = [o for v in launches.values() for o in v]
        deals = Counter()
        for order in set(itertools.permutations(outcomes)):
            cut, split = 0, {}
            for i, size in enumerate(sizes):
                split[i] = order[cut:cut + size]
                cut += size
            deals[statistic({0: split})] += 1
        total = sum(deals.values())
        per_config.append([(s, n / total) for s, n in deals.items()])
    p = 0.0
    for combo in itertools.product(*per_config):
        if sum(s for s, _ in combo) >= observed - 1e-9:
            p += float(np.prod([w for _, w in combo]))
    return p


def test_the_statistic_is_pearsons_chi_square_of_the_launch_by_outcome_table():
    runs = {"a": {1: [True, True, False], 2: [False, False, True], 3: [False, False, False]}}
    table = [[sum(v), len(v) - sum(v)] for v in runs["a"].values()]
    assert statistic(runs) == pytest.approx(chi2_contingency(table, correction=False)[0])


@pytest.mark.parametrize("runs", [
    {"a": {1: [True, True, True], 2: [False, False, False]}},
    {"a": {1: [True, True, False], 2: [False, False, True], 3: [False, True, False]}},
    {"a": {1: [True, False], 2: [False, False]}, "b": {3: [True, True, True], 4: [False, True, False]}},
])
def test_the_permutation_p_matches_exact_enumeration(runs):
    assert check_launches(runs, permutations=20000, seed=3).p_value == pytest.approx(exact_p(runs), abs=0.01)


def test_nothing_to_test_without_two_launches_or_without_variation():
    assert check_launches({"a": {1: [True, False, True]}}).p_value is None
    assert check_launches({"a": {1: [False, False], 2: [False]}}).p_value is None


def test_false_alarms_stay_at_alpha_when_runs_are_independent():
    rng = np.random.default_rng(7)
    alarms = 0
    for _ in range(120):
        runs = {c: {l: list(rng.random(4) < 0.4) for l in range(6)} for c in range(3)}
        alarms += check_launches(runs, permutations=200, seed=int(rng.integers(1 << 30))).dependent
    assert alarms / 120 <= 0.05 + 2 * (0.05 * 0.95 / 120) ** 0.5  # at most alpha, within sampling error
