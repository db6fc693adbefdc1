"""Screening is pure: drive it with simulated outcomes and check its decisions."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict
from heisenbisect.simulation import FailureModel
from heisenbisect.testing.strategy_kit import drive_in_order

BASE = Config()
ARMS = [Config((("overlap", "0"),)), Config((("cache", "1"),)), Config((("topk", "0"),))]
TRUTH = {BASE: 0.4, ARMS[0]: 0.0, ARMS[1]: 0.06, ARMS[2]: 0.4}
SETTINGS = ScreeningSettings(confidence=0.95, zero_rate=0.1, max_trials=320, first_look=10)


def drive(screening: Screening, rates: dict, seed: int, slots: int = 1, status=TrialStatus.OK) -> list:
    """Run a screening to the end against failure models; return the observations in order."""
    rng = random.Random(seed)

    def outcome(config: Config, n: int) -> Outcome:
        failures = FailureModel(rates[config]).draw(rng)
        return Outcome(f"t{n}", config.key, n, status, failures if status is TrialStatus.OK else 0, 60)

    return drive_in_order(screening, outcome, slots=slots)


def test_reaches_the_ground_truth_verdicts():
    screening = Screening(BASE, ARMS, SETTINGS)
    drive(screening, TRUTH, seed=3)
    result = screening.result()
    assert [a.verdict for a in result.arms] == [Verdict.ELIMINATES, Verdict.REDUCES, Verdict.NO_EFFECT]
    eliminated = result.arms[0]
    assert eliminated.failed_runs == 0 and eliminated.zero_bound < SETTINGS.zero_rate
    assert eliminated.runs < SETTINGS.max_trials  # decided early, not at the budget


def test_a_baseline_that_never_fails_means_cannot_reproduce_and_no_arm_runs():
    screening = Screening(BASE, ARMS, SETTINGS)
    seen = drive(screening, {BASE: 0.0, **{a: 0.5 for a in ARMS}}, seed=1)
    assert {config for config, _ in seen} == {BASE}
    assert len(seen) == SETTINGS.max_trials
    result = screening.result()
    assert result.cannot_reproduce and all(a.verdict is Verdict.CANNOT_REPRODUCE for a in result.arms)


def test_replaying_the_same_observations_rebuilds_the_same_decisions():
    live = Screening(BASE, ARMS, SETTINGS)
    seen = drive(live, TRUTH, seed=5, slots=3)
    replayed = Screening(BASE, ARMS, SETTINGS)
    for config, outcome in seen:
        replayed.observe(config, outcome)
    assert replayed.result() == live.result()
    assert replayed.finished()


def test_errors_and_skips_are_not_evidence_and_the_budget_still_ends():
    screening = Screening(BASE, ARMS, SETTINGS)
    seen = drive(screening, TRUTH, seed=2, status=TrialStatus.ERROR)
    assert len(seen) == SETTINGS.max_attempts  # the baseline's attempts, then it gives up
    assert screening.result().baseline.runs == 0


def test_calibration_comes_first_and_proposals_stop_at_the_next_look():
    screening = Screening(BASE, ARMS, SETTINGS)
    assert screening.propose({}, 1000) == [BASE] * SETTINGS.first_look
    rng = random.Random(0)
    while not screening._calibrated:
        for config in screening.propose({}, 1):
            screening.observe(config, Outcome("t", config.key, 0, TrialStatus.OK, FailureModel(0.5).draw(rng), 60))
    proposed = screening.propose({}, 1000)
    for arm in ARMS:  # each arm up to its first look, the baseline to match, no further
        assert proposed.count(arm) == SETTINGS.first_look
    assert screening.baseline.evidence.runs + proposed.count(BASE) == SETTINGS.first_look or proposed.count(BASE) == 0


@settings(max_examples=12, deadline=None)
@given(
    base_rate=st.floats(0.05, 0.9),
    arm_rates=st.lists(st.floats(0.0, 0.9), min_size=1, max_size=3),
    seed=st.integers(0, 10_000),
)
def test_an_arm_that_ever_failed_is_never_said_to_eliminate(base_rate, arm_rates, seed):
    arms = [Config(((f"f{i}", "1"),)) for i in range(len(arm_rates))]
    rates = {BASE: base_rate, **dict(zip(arms, arm_rates))}
    screening = Screening(BASE, arms, ScreeningSettings(max_trials=80, first_look=10, zero_rate=0.2))
    drive(screening, rates, seed=seed, slots=2)
    result = screening.result()
    assert screening.finished()
    for arm in result.arms:
        assert arm.runs <= 80
        if arm.verdict is Verdict.ELIMINATES:
            assert arm.failed_runs == 0 and arm.zero_bound < 0.2
