"""`bisect watch`'s tests (`decide.watch`) by simulation: the false-regression rate of an unchanged
head stays within alpha, a real regression is caught, and a replay reaches the same decision."""

from __future__ import annotations

import random

import pytest
from scipy.stats import binomtest

from heisenbisect.decide.watch import (
    CompareStrategy,
    RecordStrategy,
    StepState,
    WatchSettings,
    worse_pvalue,
)
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = WatchSettings()


def outcome(config: Config, index: int, failed: bool, status=TrialStatus.OK) -> Outcome:
    return Outcome(
        trial_id=f"{config.key}-{index}", config_key=config.key, index=index, status=status,
        failures=int(failed), total=1,
    )


def drive(strategy, rates: dict[str, float], rng: random.Random, slots: int = 2) -> list:
    """Run ``strategy`` on simulated commits failing at ``rates``; the outcomes in arrival order."""
    seen = drive_in_order(
        strategy, lambda config, n: outcome(config, n, rng.random() < rates[config.commit or ""]), slots=slots
    )
    assert strategy.finished(), "a running strategy must ask for runs"
    return seen


def watch_cycle(p_good: float, p_head: float, rng: random.Random, settings=SETTINGS) -> StepState:
    """A whole cycle: record the good commit, then compare a head against it."""
    record = RecordStrategy("good", settings)
    drive(record, {"good": p_good}, rng, slots=1)
    rate = record.rate()
    compare = CompareStrategy("head", "good", (rate.runs, rate.failed), settings)
    drive(compare, {"good": p_good, "head": p_head}, rng)
    return compare.state


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.0, 0.02, 0.1, 0.3])
def test_an_unchanged_head_raises_a_false_regression_at_most_alpha_of_the_time(rate):
    rng = random.Random(int(rate * 1000) + 7)
    n = 600
    worse = sum(watch_cycle(rate, rate, rng) is StepState.WORSE for _ in range(n))
    # consistent with a false-regression rate of at most alpha (one-sided, at 0.001)
    assert binomtest(worse, n, SETTINGS.alpha, alternative="greater").pvalue > 1e-3, worse


@pytest.mark.slow
def test_a_head_failing_in_30_percent_of_runs_is_caught():
    rng = random.Random(3)
    states = [watch_cycle(0.0, 0.3, rng) for _ in range(300)]
    assert states.count(StepState.WORSE) / len(states) >= 0.97
    assert StepState.NOT_WORSE not in states  # never called fine: 0.3 is far beyond the margin


def test_an_unchanged_clean_head_is_not_worse_at_the_look_its_bound_allows():
    rng = random.Random(0)
    record = RecordStrategy("good", SETTINGS)
    drive(record, {"good": 0.0}, rng, slots=1)
    assert record.state is StepState.BOUNDED and record.rate().runs == 40  # 0/29 bounds 0.1
    compare = CompareStrategy("head", "good", (40, 0), SETTINGS)
    seen = drive(compare, {"good": 0.0, "head": 0.0}, rng)
    assert compare.state is StepState.NOT_WORSE
    heads = [c.commit for c, _ in seen]
    assert heads.count("head") == heads.count("good") == 40
    assert heads[:4] == ["head", "good", "head", "good"]  # interleaved


def test_replaying_the_outcomes_reaches_the_same_decision():
    rng = random.Random(5)
    live = CompareStrategy("head", "good", (40, 0), SETTINGS)
    seen = drive(live, {"good": 0.05, "head": 0.3}, rng)
    again = CompareStrategy("head", "good", (40, 0), SETTINGS)
    for config, o in seen:
        again.observe(config, o)
    assert again.comparison() == live.comparison()


def test_errors_are_no_evidence_and_too_many_end_the_step():
    record = RecordStrategy("c", WatchSettings(max_runs=10, first_look=5))
    config = record.config
    for i in range(6):
        record.observe(config, outcome(config, i, False, TrialStatus.ERROR))
    assert record.state is StepState.NO_VALID_RUNS and record.tally.runs == 0


def test_the_worse_pvalue_is_fishers_one_sided_test():
    from scipy.stats import fisher_exact

    assert worse_pvalue(6, 20, 0, 60) == pytest.approx(
        fisher_exact([[6, 14], [0, 60]], alternative="greater").pvalue
    )
    assert worse_pvalue(0, 20, 5, 60) == 1.0


def arm_cycle(claim: str, screen_runs: int, p_arm: float, p_head: float, rng) -> StepState:
    """A decided arm's first step (studies/watch/arms.py): the head against the screening's runs
    of the arm as the recorded good (an eliminator's: none failed, the claim it was decided on)
    and fresh interleaved runs at the last known good."""
    while True:
        failed = sum(rng.random() < p_arm for _ in range(screen_runs))
        if claim != "eliminates" or failed == 0:
            break
    compare = CompareStrategy("head", "good", (screen_runs, failed), SETTINGS)
    drive(compare, {"good": p_arm, "head": p_head}, rng)
    return compare.state


@pytest.mark.slow
@pytest.mark.parametrize(
    "claim,screen_runs,rate", [("eliminates", 29, 0.02), ("eliminates", 59, 0.0), ("reduces", 80, 0.1)]
)
def test_an_arm_that_still_holds_raises_a_false_alarm_at_most_alpha_of_the_time(
    claim, screen_runs, rate
):
    """Even an "eliminator" whose true rate was 0.02 (the screening saw 0 of 29 by luck, which
    flatters the good side) is called worse within alpha: the fresh good runs carry the test."""
    rng = random.Random(screen_runs + int(rate * 1000))
    n = 500
    worse = sum(arm_cycle(claim, screen_runs, rate, rate, rng) is StepState.WORSE for _ in range(n))
    assert binomtest(worse, n, SETTINGS.alpha, alternative="greater").pvalue > 1e-3, worse


@pytest.mark.slow
def test_an_eliminator_that_fails_again_is_caught():
    rng = random.Random(3)
    n = 200
    states = [arm_cycle("eliminates", 59, 0.0, 0.3, rng) for _ in range(n)]
    assert states.count(StepState.WORSE) >= 0.97 * n
    assert StepState.NOT_WORSE not in states
