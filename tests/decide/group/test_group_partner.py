"""An OR pair whose members the search separated (issue 23): one reaches an arm of its own through a
breaker's splits, the other is left for the clearing group, which then fails less often than the
baseline. One probe of the single reducer with that group asks whether they stop the failure
together before the group is halved level by level (each half an equivalence test at a 15%
baseline: 8 000-9 000 runs where the pair costs about 2 000, and inconclusive members when a level
runs out of looks). Simulated runs through the real strategy."""

from __future__ import annotations

import random

from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.flag_simulation import FlagTruth
from heisenbisect.records import Config
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=960, first_look=15))
CHANGES = tuple((f"f{i:02d}", "1") for i in range(16))
EACH = 1 - 0.85**0.5  # two causes that together fail 15% of runs: each member alone 7.8%
# groups of four (Hwang for 16 changes, 2 effects): f00 shares its group with the breaker f01, so it
# reaches a single arm by splits; f08 sits in another group, which the search closes
TRUTH = FlagTruth(
    changes=CHANGES,
    causes=((("f00", "1"), EACH), (("f08", "1"), EACH)),
    breakers=frozenset({("f01", "1")}),
    sessions=1,
    severity=1.0,
)


def run(seed: int) -> GroupScreening:
    rng = random.Random(seed)
    strategy = GroupScreening(Config(), list(CHANGES), SETTINGS)
    drive_in_order(strategy, lambda config, n: TRUTH.outcome(config, n, rng))
    return strategy


def test_a_single_reducer_and_a_lower_clearing_group_are_probed_together_before_any_split():
    # the member with an arm of its own gets it when its search test is undecided at the cap and its
    # failures are far below the baseline's; with the baseline read from the runs it has kept pace with
    # the search since issue 38, that happens in one seed of 0-4 (seeds 2 and 3 until the baseline also
    # kept pace while its upper bound may ask the level test, issue 38's fifth round; the others find
    # the pair when the clearing group holding both members stops)
    partnered = found = 0
    seeds = 5
    for seed in range(seeds):
        strategy = run(seed)
        result = strategy.result()
        verdicts = {v.change: v.verdict for v in result.changes}
        assert verdicts[("f01", "1")] == "untestable"
        assert all(verdicts[c] in ("no_effect", "inconclusive") for c in CHANGES if c[0] not in ("f00", "f01", "f08"))
        assert not any(v == "eliminates" for v in verdicts.values())  # neither member stops the failure alone
        eliminating = [set(c.changes) for c in result.combinations if c.verdict.value == "eliminates"]
        assert all(c == {("f00", "1"), ("f08", "1")} for c in eliminating)
        found += bool(eliminating)
        if any("with the single reducers it stopped the failure" in a.decision for a in result.arms):
            partnered += 1
            assert eliminating == [{("f00", "1"), ("f08", "1")}]
            assert not any(a.role == "clear" and a.decision.startswith("split") for a in result.arms)
    assert partnered >= 1
    assert found == seeds


def test_no_partner_probe_when_the_single_reducers_stop_together_already():
    """Both members already found: a probe of them with the group would stop on them alone, and the
    group's changes would be set aside for a reduction that finds nothing of theirs."""
    from heisenbisect.decide.group.records import Role
    from heisenbisect.records import Outcome, TrialStatus, Verdict

    strategy = GroupScreening(Config(), list(CHANGES), SETTINGS)
    for i in range(30):
        strategy.baseline.evidence.add(Outcome(f"b{i}", "", i, TrialStatus.OK, int(i % 6 == 0), 1))
    pair = (("f00", "1"), ("f08", "1"))
    for change in pair:
        single = strategy.tree.add((change,), Role.SINGLE, None, offset=0)
        for i in range(100):
            single.state.evidence.add(Outcome(f"s{i}", single.state.config.key, i, TrialStatus.OK, int(i % 12 == 0), 1))
    combination = strategy.tree.add(pair, Role.COMBINATION, None, offset=0)
    combination.state.verdict = Verdict.ELIMINATES
    group = strategy.tree.add(tuple(c for c in CHANGES if c not in pair), Role.CLEAR, None, offset=0)
    group.state.verdict = Verdict.REDUCES
    assert strategy.clearing.partial_reducers(group) == pair  # each alone fails 1 run in 12, under the baseline's 1 in 6
    assert strategy.clearing.partner_wait(group) is False and group.partner == -1
