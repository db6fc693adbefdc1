"""Group screening is pure: drive it with simulated outcomes and check its decisions."""

from __future__ import annotations

import itertools
import random

import pytest

from heisenbisect.decide.combinations import Reduction
from heisenbisect.decide.group.records import Role
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.group.tree import hwang_group_size, initial_groups
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.flag_simulation import FlagTruth, scenario
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=480, first_look=15))


def drive(truth: FlagTruth, seed: int, settings: GroupSettings = SETTINGS, stop_after: int | None = None):
    rng = random.Random(seed)
    strategy = GroupScreening(Config(), list(truth.changes), settings)
    seen = drive_in_order(strategy, lambda config, n: truth.outcome(config, n, rng), stop_after=stop_after)
    return strategy, seen


def verdicts(strategy: GroupScreening) -> dict:
    return {v.change: v.verdict for v in strategy.result().changes}


def test_hwang_sizes_and_groups_never_hold_two_levels_of_one_factor():
    assert [hwang_group_size(n, 2) for n in (1, 2, 16, 64, 256, 512)] == [1, 1, 4, 16, 64, 128]
    candidates = [(f"f{i}", level) for i in range(10) for level in ("a", "b", "c")[: 1 + i % 3]]
    groups = initial_groups(candidates, 4)
    assert sorted(c for g in groups for c in g) == sorted(candidates)
    assert all(len({f for f, _ in g}) == len(g) for g in groups)


def brute_force_minimal(stops, universe) -> set[frozenset]:
    """Every 1-minimal stopping subset, by enumeration."""
    found = set()
    for size in range(len(universe) + 1):
        for subset in itertools.combinations(universe, size):
            s = frozenset(subset)
            if stops(s) and not any(stops(s - {x}) for x in s):
                found.add(s)
    return found


@pytest.mark.parametrize("required", [frozenset(c) for n in (1, 2, 3) for c in itertools.combinations(range(6), n)][::3])
def test_reduction_finds_a_one_minimal_set_as_enumeration_does(required):
    universe = tuple(range(6))
    alternative = frozenset({0, 5})  # a second, overlapping way to stop: the answer must be 1-minimal
    stops = lambda s: required <= s or alternative <= s  # noqa: E731  monotone
    reduction = Reduction(tuple((str(x), "1") for x in universe))
    while (probe := reduction.probe()) is not None:
        reduction.record(stops(frozenset(int(f) for f, _ in probe)))
    got = frozenset(int(f) for f, _ in reduction.current)
    assert got in brute_force_minimal(stops, universe)


@pytest.mark.parametrize("position", [0, 6])
def test_small_study_finds_the_eliminator_and_the_breaker_wherever_they_are(position):
    changes = tuple((f"f{i}", "1") for i in range(8))
    breaker = changes[(position + 4) % 8]
    truth = FlagTruth(changes, ((None, 0.5),), eliminators=frozenset({changes[position]}), breakers=frozenset({breaker}))
    strategy, _ = drive(truth, seed=position, settings=GroupSettings(SETTINGS.screening, group_size=4))
    got = verdicts(strategy)
    assert got[changes[position]] == "eliminates"
    assert got[breaker] == "untestable"
    assert [b.change for b in strategy.result().untestable] == [breaker]
    assert all(v in ("no_effect", "inconclusive") for c, v in got.items() if c not in (changes[position], breaker))


@pytest.mark.slow
def test_or_pair_is_found_as_a_combination_and_no_claim_is_wrong():
    truth = scenario(32, 0.5, eliminators=1, or_pair=True, seed=3)
    strategy, seen = drive(truth, seed=5)
    result = strategy.result()
    assert result.finished
    pair = {c for c, v in truth.expected.items() if v == "reduces"}
    for change, verdict in verdicts(strategy).items():
        # alone, an OR member keeps 59% of the failure: inside the no-effect margin, so no_effect is right too
        allowed = ("reduces", "no_effect") if change in pair else (truth.expected[change],)
        assert verdict in (*allowed, "inconclusive"), (change, verdict)
    combos = [set(c.changes) for c in result.combinations if c.verdict.value == "eliminates"]
    assert pair in combos
    assert len(seen) < 32 * 200  # far fewer runs than one arm per flag to its equivalence


def test_replaying_the_same_observations_takes_the_same_decisions():
    truth = scenario(16, 0.5, eliminators=1, or_pair=False, seed=1)
    live, seen = drive(truth, seed=2, stop_after=300)
    replayed = GroupScreening(Config(), list(truth.changes), SETTINGS)
    for config, outcome in seen:
        replayed.observe(config, outcome)
    assert [(a.changes, a.state.verdict, a.closed) for a in replayed.arms] == [
        (a.changes, a.state.verdict, a.closed) for a in live.arms
    ]
    assert replayed.propose({}, 4) == live.propose({}, 4)


def test_a_group_config_sets_env_and_arg_factors_and_one_level_per_factor(tmp_path):
    from heisenbisect.hypotheses import load_spec
    from heisenbisect.studies.group import new_group_screening

    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        "study: mix\ntarget: {command: [python, t.py]}\nstatistics: {strategy: group, group_size: 8}\nfactors:\n"
        "  - {name: graph, kind: arg, levels: [[], [--disable-cuda-graph]]}\n"
        "  - {name: dtype, kind: arg, levels: ['--kv auto', '--kv fp8', '--kv bf16']}\n"
        + "".join(f"  - {{name: e{i}, levels: ['0', '1']}}\n" for i in range(16))
    )
    spec = load_spec(spec_file)
    assert spec.uses_groups
    strategy = new_group_screening(spec)
    assert len(strategy.candidates) == 19  # one per non-baseline level
    strategy._start()
    configs = [arm.state.config for arm in strategy.arms]
    assert all(len({f for f, _ in c.changes}) == len(c.changes) for c in configs)
    first = configs[0]
    assert spec.arguments(first)[:1] == ["--disable-cuda-graph"] and "--kv" in spec.arguments(first)
    assert sum(v == "1" for v in spec.environment(first).values()) == len(first.changes) - 2


def test_the_search_leaves_one_clearing_group_that_clears_every_inert_change_at_once():
    truth = scenario(64, 0.5, eliminators=1, or_pair=False, seed=4)
    strategy, seen = drive(truth, seed=6)
    result = strategy.result()
    clearing = [a for a in result.arms if a.role == "clear"]
    inert = {c for c, v in truth.expected.items() if v == "no_effect"}
    assert len(clearing) == 1 and set(clearing[0].changes) == inert
    assert all(v.verdict == "no_effect" and v.via_group and v.arm == clearing[0].id for v in result.changes if v.change in inert)
    # search groups make no claims: the Holm family is the eliminator's arm and the clearing group
    assert result.family == 2
    assert len(seen) < 64 * 20


def test_a_claim_is_never_read_from_the_runs_that_selected_it():
    """A change whose configs happen to run clean exactly while the search watches them (while each
    config holding it is a search group), then fail like the baseline. The search promotes it to a
    claim after its clean runs; read from those runs, the claim said `eliminates` (the selection
    effect behind the benchmark's one wrong combination). From fresh runs it is not."""
    lucky = ("flag3", "1")
    changes = [(f"flag{i}", "1") for i in range(8)]
    strategy = GroupScreening(Config(), changes, SETTINGS)
    rng, runs_of = random.Random(7), {}
    while not strategy.finished():
        (config,) = strategy.propose({}, 1)
        n = runs_of[config] = runs_of.get(config, 0) + 1
        selected = lucky in config.changes and strategy.tree.arm_of(config).role is Role.GROUP
        failures = 0 if selected else int(rng.random() < 0.5)
        strategy.observe(config, Outcome(f"t{sum(runs_of.values())}", config.key, n, TrialStatus.OK, failures, 1))
    single = next(a for a in strategy.arms if a.changes == (lucky,))
    assert single.seen.runs > single.state.evidence.runs  # the search's runs stay apart from the claim's
    assert verdicts(strategy)[lucky] != "eliminates"


def test_every_probe_run_counts_against_the_reduction_budget():
    """A probe's own arm once answered it as "implied by earlier arms", so no probe was counted and the
    budget never bound (a reduction ran 66 probes against a budget of 48). With a budget of one probe, the
    OR pair's reduction stops after it and says it could not separate the combination's members."""
    truth = scenario(8, 0.5, eliminators=0, or_pair=True, seed=3)
    settings = GroupSettings(SETTINGS.screening, reduction_probes=1)
    strategy, rng = GroupScreening(Config(), list(truth.changes), settings), random.Random(5)
    for index in range(20_000):  # until the reduction reports its combination
        (config,) = strategy.propose({}, 1)
        strategy.observe(config, truth.outcome(config, index, rng))
        if strategy.combinations:
            break
    origins = [origin for _, origin in strategy.combinations]
    assert origins and "used its budget of 1 probes" in origins[0]
