"""The fewest clean runs that prove a zero rate: minimal, and the exact bound the screening uses agrees."""

from __future__ import annotations

import pytest

from heisenbisect.decide import stats
from heisenbisect.decide.budget import runs_to_claim_zero
from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict


@pytest.mark.parametrize("zero_rate, confidence", [(0.05, 0.95), (0.1, 0.95), (0.01, 0.99), (0.2, 0.9), (0.05, 0.999)])
def test_the_minimum_is_minimal_by_brute_force(zero_rate, confidence):
    n = runs_to_claim_zero(zero_rate, confidence)
    assert stats.clopper_pearson_upper(0, n, confidence) < zero_rate
    assert all(stats.clopper_pearson_upper(0, m, confidence) >= zero_rate for m in range(1, n))


def test_the_defaults_need_59_clean_runs():
    assert runs_to_claim_zero(0.05, 0.95) == 59


def test_an_arm_that_never_failed_but_cannot_claim_zero_is_inconclusive_with_the_runs_it_needs():
    settings = ScreeningSettings(max_trials=20, first_look=10)
    arm = Config(changes=(("fix", "1"),))
    screening = Screening(Config(), [arm], settings)
    for i in range(20):  # the baseline fails every other run, the arm never
        for config, failed in ((Config(), i % 2 == 0), (arm, False)):
            outcome = Outcome(f"{config.key}-{i}", config.key, i, TrialStatus.OK, int(failed), 1)
            screening.observe(config, outcome)
    (result,) = screening.result().arms
    assert result.verdict is Verdict.INCONCLUSIVE and result.failed_runs == 0
    assert "59 runs without failure are needed" in result.note
