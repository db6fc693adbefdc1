"""Skipped runs in a group screening (`decide.skips`, applied by `decide.group.claims`): a change
whose runs turn the failure into a skip is held `untestable`, never claimed to eliminate it, and
benign skips on every side leave the eliminator found. Simulated runs through the real strategy."""

from __future__ import annotations

import random

import pytest

from heisenbisect.decide.exit_code import exit_code
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.exit_codes import ExitCode
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.1, min_reduction=0.5, max_trials=160, first_look=10))
CHANGES = [(f"f{i}", "1") for i in range(8)]
FLAG = ("f3", "1")
TRACEBACK = "could not run: exit 1 after FileNotFoundError: [Errno 2] race.tmp"


def study(seed: int, hides: bool, benign_skips: float = 0.0) -> GroupScreening:
    """A 40% baseline; with ``hides`` FLAG turns every failing run into a skip, else FLAG eliminates."""
    rng = random.Random(seed)

    def outcome(config: Config, n: int) -> Outcome:
        failed = rng.random() < 0.4 and not (FLAG in config.changes and not hides)
        if rng.random() < benign_skips or failed and hides and FLAG in config.changes:
            return Outcome(f"t{n}", config.key, n, TrialStatus.SKIP, detail=TRACEBACK)
        return Outcome(f"t{n}", config.key, n, TrialStatus.OK, int(failed), 1)

    strategy = GroupScreening(Config(), CHANGES, SETTINGS)
    drive_in_order(strategy, outcome)
    return strategy


def verdict_of(strategy: GroupScreening, change) -> tuple[str, str]:
    found = next(v for v in strategy.result().changes if v.change == change)
    return found.verdict, found.note


def test_a_change_whose_failures_became_skips_is_untestable_and_leaves_the_study_undecided():
    for seed in range(5):
        strategy = study(seed, hides=True)
        verdict, note = verdict_of(strategy, FLAG)
        assert verdict == "untestable", (seed, verdict, note)
        assert note.startswith("untestable rather than eliminates") and "FileNotFoundError" in note
        result = strategy.result()
        assert [v.change for v in result.held_by_skips()] == [FLAG] and not result.untestable
        assert exit_code(result) is ExitCode.UNDECIDED


@pytest.mark.slow
def test_benign_skips_on_every_side_still_find_the_eliminator_mostly():
    # 10% skips everywhere: the last look bounds the arm's extra skips below zero_rate 0.1 in about
    # 5 studies of 6 (15 of these 20 seeds, 25 of 30); the others are `untestable`, a refusal,
    # never a wrong claim (benchmarks/skips_calibration.py measures the rate)
    found = [verdict_of(study(seed, hides=False, benign_skips=0.1), FLAG)[0] for seed in range(20)]
    assert found.count("eliminates") >= 13 and set(found) <= {"eliminates", "untestable"}, found
    assert "eliminates" not in {verdict_of(study(0, hides=False, benign_skips=0.1), c)[0] for c in CHANGES if c != FLAG}
