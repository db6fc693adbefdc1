"""The skip rule (`decide.skips`): skipped runs never fake ``eliminates`` or ``no_effect``, and
skips that do not depend on the change only delay a claim.

Table cases for one look's test, a simulated reference for its error (a zero claim passes when
skips hide failures at zero_rate at most the look's tail share of the time), and the held-claim
rule inside the real `Screening` strategy: the issue's arm (58 skipped, 80 clean) is held to the
end of its budget and then ``untestable``; benign skips hold a true claim until a look can tell
them from hidden failures, then release it."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.decide.skips import Skips, skip_test
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict
from heisenbisect.testing.strategy_kit import drive_in_order

FNF = "could not run: exit 1 after FileNotFoundError: [Errno 2] No such file: 'race.tmp'"
ELIMINATES, NO_EFFECT = Verdict.ELIMINATES, Verdict.NO_EFFECT
ARM = Config((("tmpdir", "shared"),))


@pytest.mark.parametrize("arm, baseline, claim, held", [
    (Skips(58, 138, FNF), Skips(0, 80), NO_EFFECT, True),  # the issue's arm: 42% against none
    (Skips(3, 40), Skips(4, 40), NO_EFFECT, False),  # the same share: not evidence of anything
    (Skips(0, 40), Skips(0, 40), ELIMINATES, False),
    (Skips(12, 20), Skips(10, 20), NO_EFFECT, True),  # most of its runs skipped, whatever the baseline did
    (Skips(0, 40), Skips(20, 40), NO_EFFECT, True),  # skips far fewer than the baseline: the change acts on them
    (Skips(9, 40), Skips(2, 40), NO_EFFECT, True),
    (Skips(17, 178), Skips(18, 178), ELIMINATES, False),  # benign 10% skips at a late look
])
def test_one_looks_test_table(arm: Skips, baseline: Skips, claim: Verdict, held: bool):
    assert bool(skip_test(arm, baseline, tail=0.025).holds(claim, zero_rate=0.1)) is held


def test_a_held_claim_names_both_shares_the_first_traceback_and_the_way_out():
    test = skip_test(Skips(58, 138, FNF), Skips(0, 80), tail=0.025)
    for claim in (ELIMINATES, NO_EFFECT):
        note = test.holds(claim, zero_rate=0.05)
        assert "42% (58/138)" in note and "0% (0/80)" in note and "FileNotFoundError" in note
        assert "traceback_is_failure: true" in note and "--traceback-is-failure" in note
        assert "Newcombe" in note and "95.0%" in note
    for kept in (Verdict.REDUCES, Verdict.INCREASES, Verdict.INCONCLUSIVE):
        assert test.holds(kept, 0.05) == ""


def test_a_zero_claim_needs_the_arms_extra_skips_bounded_below_zero_rate():
    """3 skips in 40 against none in 40 is no significant difference, yet 3 hidden failures
    would put the arm's rate near 7.5%: no zero claim at zero_rate 0.05; an arm that never
    skipped hides nothing."""
    test = skip_test(Skips(3, 40, FNF), Skips(0, 40), tail=0.025)
    assert test.low < 0 < test.high and "may hide failures at up to" in test.holds(ELIMINATES, 0.05)
    assert test.holds(NO_EFFECT, 0.05) == ""
    assert skip_test(Skips(0, 40), Skips(0, 40), 0.025).holds(ELIMINATES, 0.05) == ""


@pytest.mark.parametrize("arm_rate, base_rate, n", [(0.15, 0.0, 80), (0.2, 0.05, 60), (0.25, 0.1, 120)])
def test_skips_that_hide_failures_at_zero_rate_pass_at_most_the_tail_share(arm_rate, base_rate, n):
    """Simulated reference: the true excess is zero_rate or more, so a zero claim passing the
    test would be false; over 3000 draws it passes at most the look's tail share (2.5%)."""
    rng = np.random.default_rng(1)
    zero_rate = arm_rate - base_rate
    passed = sum(
        not skip_test(Skips(int(a), n), Skips(int(b), n), 0.025).holds(ELIMINATES, zero_rate)
        for a, b in zip(rng.binomial(n, arm_rate, 3000), rng.binomial(n, base_rate, 3000))
    )
    assert passed / 3000 <= 0.025


def drive(settings: ScreeningSettings, outcome: Callable[[Config, int, int], Outcome]) -> Screening:
    """Run a one-arm screening to its end; ``outcome(config, k, n)`` gives the config's k-th
    trial, the n-th of the study."""
    screening = Screening(Config(), [ARM], settings)
    counts: Counter[Config] = Counter()

    def nth(config: Config, n: int) -> Outcome:
        counts[config] += 1
        return outcome(config, counts[config] - 1, n)

    drive_in_order(screening, nth)
    return screening


def skip(config: Config, n: int) -> Outcome:
    return Outcome(f"t{n}", config.key, n, TrialStatus.SKIP, detail=FNF)


def ran(config: Config, n: int, failed: bool) -> Outcome:
    return Outcome(f"t{n}", config.key, n, TrialStatus.OK, int(failed), 1)


def test_the_issues_arm_is_held_to_the_end_of_its_budget_then_untestable():
    """Baseline: 40% of runs fail, none skip. The arm's change turned the failure into a
    FileNotFoundError at run time: 42% of its runs skip, the rest are clean. Its zero claim is
    held at every look (not refused at the first), and the study is not decided."""
    settings = ScreeningSettings(zero_rate=0.1, max_trials=80, first_look=10)
    rng = random.Random(3)

    def outcome(config: Config, k: int, n: int) -> Outcome:
        draw = rng.random()
        if config == ARM:
            return skip(config, n) if draw < 0.42 else ran(config, n, False)
        return ran(config, n, draw < 0.4)

    screening = drive(settings, outcome)
    state = screening.arms[0]
    assert state.looks_done == len(settings.schedule) or state.evidence.attempts == settings.max_attempts
    (result,) = screening.result().arms
    assert result.verdict is Verdict.UNTESTABLE and not screening.result().cannot_reproduce
    assert result.note.startswith("untestable rather than eliminates: ")
    assert "FileNotFoundError" in result.note and "traceback_is_failure: true" in result.note


def benign(skips: bool) -> Callable[[Config, int, int], Outcome]:
    """With ``skips``, every config skips one attempt in ten whatever the change; the arm never
    fails, and 40% of the baseline's runs fail."""

    def outcome(config: Config, k: int, n: int) -> Outcome:
        if skips and k % 10 == 9:
            return skip(config, n)
        return ran(config, n, config != ARM and k % 5 < 2)

    return outcome


def test_benign_skips_hold_a_true_zero_claim_until_a_look_that_can_tell_then_release_it():
    """Without skips the arm is ``eliminates`` at an early look. With 10% benign skips on every
    side, a share as high as zero_rate, the early looks cannot bound its extra skips below
    zero_rate: the claim is held (the arm runs on, not ``untestable``) until a later look can."""
    settings = ScreeningSettings(zero_rate=0.1, max_trials=160, first_look=10)
    prompt = drive(settings, benign(skips=False)).result().arms[0]
    delayed = drive(settings, benign(skips=True)).result().arms[0]
    assert prompt.verdict is delayed.verdict is ELIMINATES and delayed.note == ""
    assert prompt.decided_at is not None and delayed.decided_at is not None
    assert prompt.decided_at <= 40 < delayed.decided_at


def test_a_no_effect_claim_whose_skips_differ_is_held_then_untestable():
    """The arm fails as the baseline does, but 30% of its attempts skip and none of the
    baseline's do: its no_effect is held to the end of its budget, then ``untestable``."""
    settings = ScreeningSettings(zero_rate=0.1, max_trials=80, first_look=10)

    def outcome(config: Config, k: int, n: int) -> Outcome:
        if config == ARM:  # 3 of 10 attempts skip, 3 of the other 7 fail
            return skip(config, n) if k % 10 < 3 else ran(config, n, k % 10 in (3, 5, 7))
        return ran(config, n, k % 5 < 2)

    screening = drive(settings, outcome)
    assert screening.arms[0].looks_done == len(settings.schedule)
    (result,) = screening.result().arms
    assert result.verdict is Verdict.UNTESTABLE
    assert result.note.startswith("untestable rather than no_effect: its runs were skipped at another rate")


def test_a_baseline_that_failed_only_by_skipping_is_not_cannot_reproduce():
    settings = ScreeningSettings(zero_rate=0.1, max_trials=40, first_look=10)

    def outcome(config: Config, k: int, n: int) -> Outcome:
        return skip(config, n) if n % 3 == 0 else ran(config, n, False)

    result = drive(settings, outcome).result()
    assert result.baseline.verdict is Verdict.UNTESTABLE and not result.cannot_reproduce
    assert "never failed" in result.baseline.note and "traceback_is_failure" in result.baseline.note
    assert result.arms[0].verdict is Verdict.UNTESTABLE
