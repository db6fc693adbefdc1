"""The skip rule (`decide.skips`): skipped runs never fake ``eliminates`` or ``no_effect``.

Table cases for the check itself, a brute-force reference for its excess bound (simulated:
the bound covers the true excess at least 1 - alpha of the time), and the rule inside the real
`Screening` strategy with the issue's numbers (58 skipped, 80 clean)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.decide.skips import Skips, guarded, skip_checks
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict

FNF = "could not run: exit 1 after FileNotFoundError: [Errno 2] No such file: 'race.tmp'"


@pytest.mark.parametrize("arm, baseline, untestable", [
    (Skips(58, 138, FNF), Skips(0, 80), True),  # the issue's arm: 42% against none
    (Skips(3, 40), Skips(4, 40), False),  # the same share: not evidence of anything
    (Skips(0, 40), Skips(0, 40), False),
    (Skips(12, 20), Skips(10, 20), True),  # most of its runs skipped, whatever the baseline did
    (Skips(0, 40), Skips(20, 40), True),  # skips far fewer than the baseline: the change acts on them
])
def test_skip_checks_table(arm: Skips, baseline: Skips, untestable: bool):
    (check,) = skip_checks(baseline, [arm], alpha=0.05)
    assert check.untestable is untestable


def test_holm_runs_across_the_family_of_arms():
    base = Skips(2, 40)
    one = skip_checks(base, [Skips(9, 40)], 0.05)[0]
    many = skip_checks(base, [Skips(9, 40)] + [Skips(2, 40)] * 5, 0.05)[0]
    assert many.p_value >= one.p_value and one.untestable and not many.untestable


def test_the_verdicts_skips_could_fake_become_untestable_and_name_the_way_out():
    (check,) = skip_checks(Skips(0, 80), [Skips(58, 138, FNF)], 0.05)
    for claim in (Verdict.ELIMINATES, Verdict.NO_EFFECT):
        verdict, note = guarded(claim, check, zero_rate=0.05)
        assert verdict is Verdict.UNTESTABLE
        assert "42% (58/138)" in note and "0% (0/80)" in note and "FileNotFoundError" in note
        assert "traceback_is_failure: true" in note and "--traceback-is-failure" in note
    for kept in (Verdict.REDUCES, Verdict.INCREASES, Verdict.INCONCLUSIVE):
        assert guarded(kept, check, 0.05) == (kept, "")


def test_a_zero_claim_needs_the_arms_extra_skips_bounded_below_zero_rate():
    """3 skips in 40 against none in 40 is not significant, yet 3 hidden failures would put the
    arm's rate near 7.5%: no zero claim at zero_rate 0.05; none at all without a skip."""
    (check,) = skip_checks(Skips(0, 40), [Skips(3, 40, FNF)], 0.05)
    assert not check.untestable and check.hides_zero(0.05)
    assert guarded(Verdict.ELIMINATES, check, 0.05)[0] is Verdict.UNTESTABLE
    assert guarded(Verdict.NO_EFFECT, check, 0.05)[0] is Verdict.NO_EFFECT
    (clean,) = skip_checks(Skips(0, 40), [Skips(0, 40)], 0.05)
    assert guarded(Verdict.ELIMINATES, clean, 0.05) == (Verdict.ELIMINATES, "")


@pytest.mark.parametrize("arm_rate, base_rate, n", [(0.2, 0.05, 40), (0.1, 0.1, 30), (0.3, 0.0, 60)])
def test_the_excess_bound_covers_the_true_excess_at_its_confidence(arm_rate, base_rate, n):
    """Simulated reference: over 2000 draws the bound is below the true excess at most alpha."""
    rng = np.random.default_rng(1)
    below = 0
    for _ in range(2000):
        arm, base = int(rng.binomial(n, arm_rate)), int(rng.binomial(n, base_rate))
        (check,) = skip_checks(Skips(base, n), [Skips(arm, n)], 0.05)
        below += check.excess_upper < arm_rate - base_rate
    assert below / 2000 <= 0.05


def test_the_issues_arm_is_untestable_inside_the_screening_not_eliminates():
    """Baseline: 40% of runs fail, none skip. The arm's change turned the failure into a
    FileNotFoundError at run time: 42% of its runs skip, the rest are clean. The strategy alone
    calls it eliminates; the result says untestable, and the study is not decided."""
    settings = ScreeningSettings(zero_rate=0.1, max_trials=80, first_look=10)
    arm = Config((("tmpdir", "shared"),))
    screening = Screening(Config(), [arm], settings)
    rng = random.Random(3)
    n = 0
    while not screening.finished():
        (config,) = screening.propose({}, 1)
        draw = rng.random()
        if config == arm and draw < 0.42:
            outcome = Outcome(f"t{n}", config.key, n, TrialStatus.SKIP, detail=FNF)
        else:
            failed = config != arm and draw < 0.4
            outcome = Outcome(f"t{n}", config.key, n, TrialStatus.OK, int(failed), 1)
        screening.observe(config, outcome)
        n += 1
    assert screening.arms[0].verdict is Verdict.ELIMINATES  # what it used to print, exit 0
    (result,) = screening.result().arms
    assert result.verdict is Verdict.UNTESTABLE and "FileNotFoundError" in result.note


def test_a_baseline_that_failed_only_by_skipping_is_not_cannot_reproduce():
    settings = ScreeningSettings(zero_rate=0.1, max_trials=40, first_look=10)
    arm = Config((("x", "1"),))
    screening = Screening(Config(), [arm], settings)
    n = 0
    while not screening.finished():
        proposed = screening.propose({}, 1)
        if not proposed:
            break
        config = proposed[0]
        skip = n % 3 == 0
        status = TrialStatus.SKIP if skip else TrialStatus.OK
        screening.observe(config, Outcome(f"t{n}", config.key, n, status, 0, 0 if skip else 1,
                                          detail=FNF if skip else ""))
        n += 1
    result = screening.result()
    assert result.baseline.verdict is Verdict.UNTESTABLE and not result.cannot_reproduce
    assert "never failed" in result.baseline.note and "traceback_is_failure" in result.baseline.note
    assert result.arms[0].verdict is Verdict.UNTESTABLE

