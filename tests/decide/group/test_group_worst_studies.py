"""The worst studies of the 200-study OR rows (issue 23, third round), each a rule of the search that
spent thousands of trials on a chance answer.

- A reduction's probe whose config is a search group's took that group's "stops", given by the wide
  test (alternative: the baseline's rate), which a set holding one OR member (7.8%) passes about as
  often as not: ddmin then stood on a pair with an inert flag (512 flags, 15 049 trials; 9 589 now).
- A clearing group shown equivalent to the baseline and, at the same look, different from it (the
  difference test steers the search at its own level, unadjusted) was split: 253 inert flags halved
  four times on chance differences (256 flags, 15 370 trials; 6 730 now). A single change's arm is
  cleared in that case, as one-at-a-time screening clears it; a clearing group now is too.
Real strategy objects fed real outcomes."""

from __future__ import annotations

from heisenbisect.decide.group.records import Role
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.decide.sequential import decide
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=960, first_look=15))
A, B, C, D = ("a", "1"), ("b", "1"), ("c", "1"), ("d", "1")


def outcome(config: Config, i: int, failed: bool) -> Outcome:
    return Outcome(f"t{i}", config.key, i, TrialStatus.OK, int(failed), 1)


def test_a_probe_does_not_take_a_search_groups_stop_from_the_wide_test():
    strategy = GroupScreening(Config(), [A, B, C, D], SETTINGS)
    for i in range(15):
        strategy.baseline.evidence.add(outcome(strategy.baseline.config, i, i < 6))  # 6 of 15, as in that study
    pair = strategy.tree.add((A, B), Role.GROUP, None, offset=0)
    for i in range(39):  # 1 failed run in 39: "stops" by the wide test (its alternative the baseline's rate)
        pair.state.evidence.add(outcome(pair.state.config, i, i == 20))
    assert strategy.answers.status(pair) == "stops"
    pair.answer, pair.closed = "stops", "split"
    decide(pair.state, Verdict.INCONCLUSIVE)
    other = strategy.tree.add((C, D), Role.GROUP, None, offset=0)
    other.answer = "fails"  # so the first probe, {c}, is known to fail
    decide(other.state, Verdict.INCONCLUSIVE)

    strategy.reductions.start(other.id, (A, B, C))
    strategy.reductions.advance()
    [(_, reduction)] = strategy.reductions.under_way
    assert reduction.current == (A, B, C)  # {a, b} not taken to stop on the wide test's answer
    assert pair.role is Role.PROBE and pair.open and strategy.answers.status(pair) == "pending"

    for i in range(108):  # fresh clean runs: the strict test's stop, and the reduction stands on {a, b}
        pair.state.evidence.add(outcome(pair.state.config, 100 + i, False))
    strategy.reductions.advance()
    [(_, reduction)] = strategy.reductions.under_way
    assert reduction.current == (A, B)


def clearing_group_after(base_failing: int, group_failing: int) -> GroupScreening:
    """A clearing group and its baseline window, 960 runs each with the given failed runs out of 20."""
    strategy = GroupScreening(Config(), [A, B, C, D], SETTINGS)
    group = strategy.tree.add((A, B, C, D), Role.CLEAR, None, offset=0)
    for i in range(960):
        strategy.baseline.evidence.add(outcome(strategy.baseline.config, i, i % 20 < base_failing))
        group.state.evidence.add(outcome(group.state.config, i, i % 20 < group_failing))
    strategy.claims.take_looks()
    return strategy


def test_a_clearing_group_shown_equivalent_is_cleared_even_when_it_also_differs():
    strategy = clearing_group_after(base_failing=4, group_failing=3)  # 20% and 15%: within 0.5-2x, yet different
    [group] = strategy.arms
    assert group.state.sequential_p <= SETTINGS.screening.alpha  # the difference alone would split it
    assert group.state.verdict is Verdict.NO_EFFECT


def test_a_clearing_group_far_below_the_baseline_is_still_split():
    strategy = clearing_group_after(base_failing=4, group_failing=1)  # 5% against 20%: outside the margin
    [group] = strategy.arms
    assert group.state.verdict is Verdict.REDUCES
