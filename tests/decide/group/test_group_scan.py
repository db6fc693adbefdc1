"""The strict test as a probe reads it: a set whose stop came with failed runs is asked again on fresh
runs (an OR pair's member alone, 7.8%, stops now and then that way); a set with no failure stops at once."""

from __future__ import annotations

from heisenbisect.decide.group.records import Arm, Role
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.records import Config, Outcome, TrialStatus

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=960, first_look=15))
CHANGES = [("a", "1"), ("b", "1"), ("c", "1")]


def probe_after(pattern: list[bool]) -> tuple[GroupScreening, Arm, list[str]]:
    """A probe of two changes fed ``pattern`` (True: a failed run); its answer after each run."""
    strategy = GroupScreening(Config(), CHANGES, SETTINGS)
    arm = strategy.tree.add(tuple(CHANGES[:2]), Role.PROBE, None, offset=0)
    answers = []
    for i, failed in enumerate(pattern):
        arm.state.evidence.add(Outcome(f"t{i}", arm.state.config.key, i, TrialStatus.OK, int(failed), 1))
        answers.append(strategy.answers.scan(arm))
    return strategy, arm, answers


def test_a_stop_without_failures_is_taken_at_once():
    _, _, answers = probe_after([False] * 108)
    assert answers[-2] == "pending" and answers[-1] == "stops"


def test_a_stop_with_failures_is_asked_again_on_fresh_runs():
    # 2 failed runs early, then clean: the strict test (0.3% for a set at 10%) stops after 135 runs
    strategy, arm, answers = probe_after([False, True, False, True] + [False] * 300)
    test = strategy.answers.zero_test(arm)
    assert test.answer(2, 134) == "pending" and test.answer(2, 135) == "stops"
    first = next(i for i, a in enumerate(answers) if a != "pending")
    assert answers[first] == "stops" and first + 1 == 135 + 108  # then 108 fresh clean runs
    assert arm.stop_checked and arm.scan_from == 135
    _, _, again = probe_after([False, True, False, True] + [False] * 131 + [True] + [False] * 30)
    assert again[-1] == "pending"  # a fresh run failed: not a stop yet
