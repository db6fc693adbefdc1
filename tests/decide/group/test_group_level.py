"""Issue 38: a reducer inside a search group is found by the search, not by halving clearing groups.

A search group holding a reducer (0.30 -> 0.12) fails, so the zero test alone closed it as "holds no
eliminator" (or ran it to its cap), and its changes went into the clearing group, which was then
halved level by level, each half an equivalence test against the baseline: 5 000-6 600 trials at 128
flags. The level test (far below the baseline's rate?) splits it instead; the changes the search
left join one clearing group. Simulated runs through the real strategy."""

from __future__ import annotations

import random

from heisenbisect.decide.group.answers import SearchAnswers
from heisenbisect.decide.group.records import LOWER, SEARCHED, Arm, Role
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.decide.sequential import ArmState
from heisenbisect.flag_simulation import scenario
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = GroupSettings(ScreeningSettings(max_trials=320, first_look=10))


def run(seed: int, factors: int = 32):
    truth = scenario(factors, 0.30, eliminators=1, reducer=0.4, breakers=0, seed=seed)
    strategy, rng = GroupScreening(Config(), list(truth.changes), SETTINGS), random.Random(seed)
    trials = len(drive_in_order(strategy, lambda config, n: truth.outcome(config, n, rng)))
    return truth, strategy, trials


def test_the_search_finds_the_reducer_and_one_clearing_group_clears_the_rest():
    found = 0
    for seed in range(3):
        truth, strategy, trials = run(seed)
        (reducer, _), = truth.reducers
        verdicts = {v.change: v.verdict for v in strategy.result().changes}
        assert verdicts[reducer] in ("reduces", "inconclusive")
        assert all(verdicts[c] in ("no_effect", "inconclusive") for c, v in truth.expected.items() if v == "no_effect")
        single = next(a for a in strategy.arms if a.changes == (reducer,))
        if single.role is Role.SINGLE and single.first_role is Role.GROUP:  # promoted by the search
            found += 1
            assert any(a.answer == LOWER for a in strategy.arms)  # a group split as far below the baseline
            assert sum(a.role is Role.CLEAR for a in strategy.arms) == 1  # one clearing group, never split
    assert found >= 2


def test_a_lower_group_is_split_before_the_search_cap():
    for seed in range(3):
        _, strategy, _ = run(seed)
        cap = strategy.answers.cap()
        assert all(a.seen.runs < cap for a in strategy.arms if a.answer == LOWER)


def test_the_cost_by_part_adds_up_to_every_trial():
    _, strategy, trials = run(1)
    result = strategy.result()
    assert result.cost is not None
    assert result.cost.total == result.trials_total == trials
    assert result.cost.baseline == strategy.baseline.evidence.attempts
    assert result.cost.own_arms > 0 and result.cost.search > 0 and result.cost.clearing > 0


def test_at_a_15_percent_baseline_the_level_test_is_not_asked():
    """Telling 7.5% from 15% would cost every inert group about 90 runs; there a change far below the
    baseline fails near twice zero_rate, where the zero tests already give it an arm of its own."""
    truth = scenario(32, 0.15, eliminators=1, breakers=0, seed=4)
    strategy, rng = GroupScreening(Config(), list(truth.changes), SETTINGS), random.Random(4)
    drive_in_order(strategy, lambda config, n: truth.outcome(config, n, rng))
    assert not strategy.answers.levels()
    assert not any(a.answer == LOWER for a in strategy.arms)


def ran(state: ArmState, failed: int, runs: int) -> ArmState:
    """``runs`` runs of a config, the first ``failed`` of them failed (6 of 60 sessions)."""
    for i in range(runs):
        state.evidence.add(Outcome(f"t{i}", state.config.key, i, TrialStatus.OK, 6 if i < failed else 0, 60))
    return state


def answers_with(parent_answer: str) -> tuple[SearchAnswers, Arm]:
    """A 30% baseline (30 of 100 runs), a group answered ``parent_answer`` and one half of it that has
    failed 4 of its first 9 runs: above the baseline's rate so far, as a group at 12% does now and then."""
    baseline = ran(ArmState(Config()), 30, 100)
    arms: list[Arm] = []
    answers = SearchAnswers(SETTINGS, baseline, arms)
    changes = tuple((f"f{i}", "1") for i in range(8))
    parent = Arm(0, changes, Role.GROUP, ArmState(Config(changes)), 0, answer=parent_answer, children=[1])
    half = Arm(1, changes[:4], Role.GROUP, ran(ArmState(Config(changes[:4])), 4, 9), 0, parent=0)
    arms += [parent, half]
    return answers, half


def test_a_half_of_a_lower_group_waits_for_its_level_test_before_it_closes():
    """The reducer its parent's rate says is there is in one of the halves: one that fails above the
    baseline's rate on its first runs is not closed as holding no eliminator (which took the reducer
    into the clearing group, halved level by level: 3 000 trials more), unless a sibling explains it."""
    for parent_answer in (LOWER, SEARCHED):
        answers, half = answers_with(parent_answer)
        assert answers.status(half) == "pending"
        half.awaits_level = False  # a sibling was shown far below the baseline: it explains the parent
        assert answers.status(half) == "fails"
    answers, half = answers_with("stops")  # an eliminator's group: nothing says a reducer is in this half
    assert answers.status(half) == "fails"


def test_a_baseline_calibrated_low_keeps_pace_with_the_level_tests():
    """2 of 11 runs of a 30% baseline (a point estimate of 18%, under the 20% at which the level test is
    asked) left the baseline without a run for the whole search, so the reducer was never looked for;
    its upper bound may still ask the level test, so it runs on until that is told."""
    assert SearchAnswers(SETTINGS, ran(ArmState(Config()), 2, 11), []).may_level()
    assert not SearchAnswers(SETTINGS, ran(ArmState(Config()), 1, 15), []).may_level()
