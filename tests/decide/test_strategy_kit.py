"""The strategy kit over every strategy the engine drives, and over strategies that break each rule."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping

import pytest

from heisenbisect.decide.amplify import Confirmation, ConfirmSettings
from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.flag_simulation import FlagTruth, scenario
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.studies.guard import NothingRunsGuard
from heisenbisect.targets.protocol import NEVER_RAN
from heisenbisect.testing.strategy_kit import StrategyContractError, check_strategy, drive_in_order

SCREENING = ScreeningSettings(confidence=0.95, zero_rate=0.05, max_trials=80, first_look=10)
CHANGES = tuple((f"f{i}", "1") for i in range(4))
# f0 eliminates, f1 reduces the failure to 30% of its rate, f2 breaks the target (exit 125), f3 does nothing
TRUTH = FlagTruth(
    CHANGES,
    ((None, 0.5),),
    eliminators=frozenset({CHANGES[0]}),
    reducers=((CHANGES[1], 0.3),),
    breakers=frozenset({CHANGES[2]}),
)


def result(strategy):
    return strategy.result()


def screening() -> Screening:
    return Screening(Config(), [Config((c,)) for c in CHANGES], SCREENING)


@pytest.mark.slow
@pytest.mark.parametrize("capacity", [1, 4])
def test_screening_keeps_the_strategy_contract(capacity):
    run = check_strategy(screening, TRUTH.outcome, decision=result, capacity=capacity)
    assert run.finished


def test_group_screening_keeps_the_strategy_contract():
    truth = scenario(12, 0.5, eliminators=1, breakers=1, seed=3)
    settings = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, max_trials=120, first_look=15))
    run = check_strategy(lambda: GroupScreening(Config(), list(truth.changes), settings), truth.outcome, decision=result)
    assert run.finished


def commit_target(commits: list[str], culprit: int, broken: int):
    """A bad commit fails 40% of runs, a good one never; ``broken`` cannot be built (an error)."""

    def outcome(config: Config, index: int, rng: random.Random) -> Outcome:
        at = commits.index(config.commit) if config.commit in commits else -1  # -1: the good end
        if at == broken:
            return Outcome("", config.key, index, TrialStatus.ERROR, detail="build failed")
        failed = at >= culprit and rng.random() < 0.4
        return Outcome("", config.key, index, TrialStatus.OK, int(failed), 1)

    return outcome


COMMITS = [f"c{i:02d}" for i in range(16)]


def bisection(p_bad: float | None = 0.4) -> CommitStrategy:
    return CommitStrategy(COMMITS, "good", Settings(p_bad=p_bad, p_good=0.0 if p_bad else None, max_trials=400))


@pytest.mark.parametrize("p_bad", [0.4, None], ids=["known_rates", "learned_rates"])
def test_commit_bisection_keeps_the_strategy_contract(p_bad):
    run = check_strategy(lambda: bisection(p_bad), commit_target(COMMITS, culprit=9, broken=4), decision=result)
    assert run.finished


def test_amplify_confirmation_keeps_the_strategy_contract():
    best, current = Config((("load", "8"),)), Config()

    def outcome(config: Config, index: int, rng: random.Random) -> Outcome:
        p, seconds = (0.4, 1.0) if config == best else (0.1, 1.0)
        if rng.random() < 0.05:
            return Outcome("", config.key, index, TrialStatus.ERROR, detail="timed out")
        return Outcome("", config.key, index, TrialStatus.OK, int(rng.random() < p), 1, duration_s=seconds * (0.5 + rng.random()))

    run = check_strategy(lambda: Confirmation(best, current, ConfirmSettings(first_look=10, max_runs=80)), outcome, decision=result)
    assert run.finished


def never_runs(config: Config, index: int, rng: random.Random) -> Outcome:
    return Outcome("", config.key, index, TrialStatus.ERROR, detail=f"{NEVER_RAN}: command not found")


@pytest.mark.parametrize("target", [commit_target(COMMITS, culprit=9, broken=4), never_runs], ids=["runs", "never_runs"])
def test_nothing_runs_guard_keeps_the_strategy_contract(target):
    run = check_strategy(lambda: NothingRunsGuard(bisection(), 0, give_up_after=10), target)
    assert run.finished


# -- strategies that break one rule each: the kit must say which ------------------------------------


class RunEachTwice:
    """Runs each of its configs twice, then is finished: keeps the contract."""

    def __init__(self, configs: tuple[Config, ...] = (Config(), Config((("a", "1"),)))):
        self.configs = configs
        self.seen: Counter[Config] = Counter()

    def observe(self, config: Config, outcome: Outcome) -> None:
        self.seen[config] += 1

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        wanted = [c for c in self.configs for _ in range(max(0, 2 - self.seen[c] - in_flight.get(c, 0)))]
        return wanted[: max(0, slots)]

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return []

    def finished(self) -> bool:
        return all(self.seen[c] >= 2 for c in self.configs)


class OneTooMany(RunEachTwice):
    def propose(self, in_flight, slots):
        return super().propose(in_flight, slots) + [self.configs[0]]


class ProposesWhenFinished(RunEachTwice):
    def propose(self, in_flight, slots):
        return super().propose(in_flight, slots) or [self.configs[0]][: max(0, slots)]


class OneKeyTwoConfigs(RunEachTwice):
    def __init__(self):
        super().__init__((Config(), Config(commit="")))  # unequal configs, both keyed "baseline"


class DrawsItsOwnLuck(RunEachTwice):
    """Picks what runs next with the process's random module: not what it was constructed with."""

    def __init__(self):
        super().__init__(tuple(Config(((f"f{i}", "1"),)) for i in range(6)))

    def propose(self, in_flight, slots):
        wanted = super().propose(in_flight, 2 * len(self.configs))
        random.shuffle(wanted)
        return wanted[: max(0, slots)]


class CountsProposalsAsRuns(RunEachTwice):
    """Changes its state when asked for proposals: a replay from the store, which only observes, differs."""

    def propose(self, in_flight, slots):
        wanted = super().propose(in_flight, slots)
        self.seen.update(wanted[:1])
        return wanted


def ok(config: Config, index: int, rng: random.Random) -> Outcome:
    return Outcome("", config.key, index, TrialStatus.OK, int(rng.random() < 0.5), 1)


def test_a_strategy_that_keeps_the_contract_passes():
    run = check_strategy(RunEachTwice, ok, capacity=2)
    assert run.finished and len(run.outcomes) == 4 and run.proposed == 4


@pytest.mark.parametrize(
    ("strategy", "rule"),
    [
        (OneTooMany, "proposals within the free slots"),
        (ProposesWhenFinished, "finished means nothing proposed"),
        (OneKeyTwoConfigs, "trial ids unique"),
        (DrawsItsOwnLuck, "replay determinism"),
        (CountsProposalsAsRuns, "replay determinism"),
    ],
)
def test_the_kit_names_the_rule_a_strategy_breaks(strategy, rule):
    random.seed(1)
    with pytest.raises(StrategyContractError, match=f"^{rule}: "):
        check_strategy(strategy, ok, capacity=2, seed=5)


def two_sides(rates: dict[Config, float], error_rate: float = 0.0):
    """Each config fails at its rate; a share ``error_rate`` of runs do not run cleanly."""

    def outcome(config: Config, index: int, rng: random.Random) -> Outcome:
        if rng.random() < error_rate:
            return Outcome("", config.key, index, TrialStatus.TIMEOUT, detail="timed out")
        return Outcome("", config.key, index, TrialStatus.OK, int(rng.random() < rates[config]), 1)

    return outcome


@pytest.mark.parametrize(("bad_rate", "good_rate"), [(0.4, 0.0), (0.0, 0.3), (0.0, 0.0)])
def test_the_range_check_keeps_the_strategy_contract(bad_rate, good_rate):
    from heisenbisect.decide.range_check import RangeCheckStrategy, RangeSettings

    bad, good = Config(commit="bad"), Config(commit="good")
    target = two_sides({bad: bad_rate, good: good_rate}, error_rate=0.05)
    run = check_strategy(lambda: RangeCheckStrategy(bad, good, RangeSettings()), target, decision=result)
    assert run.finished


@pytest.mark.parametrize(("culprit_rate", "revert"), [(0.4, True), (0.0, False)])
def test_verification_keeps_the_strategy_contract(culprit_rate, revert):
    from heisenbisect.decide.verify import VerifySettings, VerifyStrategy

    culprit, before, reverted = Config(commit="c9"), Config(commit="c8"), Config(commit="r")
    target = two_sides({culprit: culprit_rate, before: 0.0, reverted: 0.0}, error_rate=0.05)
    settings = VerifySettings(p_bad=0.4, p_good=0.0)

    def make() -> VerifyStrategy:
        return VerifyStrategy(culprit, before, settings, reverted if revert else None)

    run = check_strategy(make, target, decision=result)
    assert run.finished


# -- drive_in_order: the plain drive tests and benchmarks share -------------------------------------


def numbered(config: Config, n: int) -> Outcome:
    return Outcome(f"t{n}", config.key, n, TrialStatus.OK, 0, 1)


class KeepsTheAsks(RunEachTwice):
    def __init__(self):
        super().__init__()
        self.asks: list[tuple[dict, int]] = []

    def propose(self, in_flight, slots):
        self.asks.append((dict(in_flight), slots))
        assert len(self.asks) <= 10, "asked again and again: the drive does not end"
        return super().propose(in_flight, slots)


@pytest.mark.parametrize(("slots", "asked"), [(1, 4), (3, 2)])
def test_drive_in_order_observes_each_proposal_in_order_and_counts_outcomes_across_configs(slots, asked):
    strategy, a = KeepsTheAsks(), Config((("a", "1"),))
    seen = drive_in_order(strategy, numbered, slots=slots)
    assert [(config, outcome.index) for config, outcome in seen] == [(Config(), 0), (Config(), 1), (a, 2), (a, 3)]
    assert strategy.finished() and strategy.asks == [({}, slots)] * asked  # nothing ever in flight


class StopsProposing(RunEachTwice):
    """Proposes one run, then nothing though not finished; asked again after that, it objects."""

    def __init__(self):
        super().__init__()
        self.refused = False

    def propose(self, in_flight, slots):
        assert not self.refused, "asked again after proposing nothing"
        self.refused = sum(self.seen.values()) >= 1
        return [] if self.refused else super().propose(in_flight, 1)


def test_drive_in_order_ends_when_nothing_is_proposed():
    strategy = StopsProposing()
    seen = drive_in_order(strategy, numbered, slots=2)
    assert len(seen) == 1 and not strategy.finished()


@pytest.mark.parametrize("slots", [1, 2])
def test_drive_in_order_stops_after_the_outcomes_asked_for_even_inside_a_batch(slots):
    strategy = KeepsTheAsks()
    seen = drive_in_order(strategy, numbered, slots=slots, stop_after=3)
    assert [outcome.index for _, outcome in seen] == [0, 1, 2]
    assert sum(strategy.seen.values()) == 3 and not strategy.finished()
    assert len(strategy.asks) == 3 // slots + (3 % slots > 0)  # not asked again once 3 are in
