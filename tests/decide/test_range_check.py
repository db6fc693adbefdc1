"""The check of a bisection's ends before it names anything: refusals and their error rates."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from heisenbisect.decide.range_check import (
    RangeCheckStrategy,
    RangeSettings,
    RangeState,
    check_range,
    reversed_rates,
)
from heisenbisect.records import Config, Outcome, TrialStatus


def simulate(p_fail: float, p_pass: float, settings: RangeSettings, sims: int, seed: int):
    rng = np.random.default_rng(seed)
    n = settings.end_runs
    return [
        check_range(list(rng.random(n) < p_fail), list(rng.random(n) < p_pass), settings).state
        for _ in range(sims)
    ]


def test_swapped_ends_are_refused_as_reversed():
    """The issue's history: the good end fails at 0.23, the bad end never."""
    states = simulate(0.0, 0.226, RangeSettings(), 2000, seed=1)
    assert all(s.refused for s in states)
    assert states.count(RangeState.REVERSED) / len(states) >= 0.95


def test_a_bad_end_that_never_fails_is_refused_within_the_end_runs():
    found = check_range([False] * 30, [False] * 30, RangeSettings())
    assert found.state is RangeState.DOES_NOT_FAIL and found.failing == (30, 0)
    assert check_range([False] * 29, [False] * 29, RangeSettings()).state is RangeState.PENDING
    one_end = check_range([False] * 30, [], RangeSettings(p_good=0.0))
    assert one_end.state is RangeState.DOES_NOT_FAIL and one_end.passing == (0, 0)


@pytest.mark.parametrize(("p", "q"), [(0.15, 0.0), (0.3, 0.01), (0.5, 0.0), (0.15, 0.01)])
def test_a_sound_range_is_rarely_refused(p, q):
    states = simulate(p, q, RangeSettings(), 2000, seed=2)
    refused = sum(s.refused for s in states)
    assert binomtest(refused, len(states), 0.05, alternative="greater").pvalue > 0.001, refused


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5])
def test_equal_rates_at_both_ends_are_called_sound_at_most_alpha_of_the_time(rate):
    states = simulate(rate, rate, RangeSettings(), 3000, seed=3)
    sound = states.count(RangeState.SOUND)
    assert binomtest(sound, len(states), 0.05, alternative="greater").pvalue > 0.001, sound


def test_given_rates_read_the_failing_end_alone():
    settings = RangeSettings(p_bad=0.5, p_good=0.0)
    assert check_range([False, True], [], settings).state is RangeState.SOUND
    # five passes reject p = 0.5 against q = 0 (Wald, 95%): the given rate does not hold
    assert check_range([False] * 5, [], settings).state is RangeState.DOES_NOT_FAIL


def test_the_strategy_proposes_level_rounds_and_replays_by_index():
    bad, good = Config(commit="b"), Config(commit="g")
    strategy = RangeCheckStrategy(bad, good, RangeSettings())
    assert strategy.propose({}, 3) == [bad, good, bad]
    for i in range(30):
        strategy.observe(good, Outcome(f"g{i}", good.key, i, TrialStatus.OK, failures=0, total=1))
        strategy.observe(bad, Outcome(f"b{i}", bad.key, i, TrialStatus.OK, failures=0, total=1))
    assert strategy.finished() and strategy.result().state is RangeState.DOES_NOT_FAIL
    assert strategy.propose({}, 2) == []


def test_learned_rates_that_put_bad_below_good_are_reversed():
    assert reversed_rates(None, None, 0.010, 0.226)
    assert not reversed_rates(None, None, 0.2, 0.01)
    assert not reversed_rates(0.3, 0.0, 0.3, 0.0)
