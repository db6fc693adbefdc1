"""Group decisions against brute-force enumeration: small studies without noise.

Every cause fires in every run and a failed run fails its one session, so a config either
always fails or never does (the Z channel without noise, and no chance differences for the
claims' tests), and the right answer can be computed by trying every change and every subset
on the truth itself. The search must reach exactly it: eliminators, breakers, no-effect
changes, and a 1-minimal eliminating combination when two causes each need their own change.
"""

from __future__ import annotations

import itertools
import random

import pytest

from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.flag_simulation import FlagTruth
from heisenbisect.records import Config
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.2, min_reduction=0.5, max_trials=16, first_look=8))
CHANGES = tuple((f"f{i}", "1") for i in range(6))


def truths() -> list[tuple[frozenset, frozenset, tuple]]:
    """(eliminators, breakers, OR pair) over six changes: one placement, drawn from all of them,
    for each kind of truth (0-2 eliminators, with or without a breaker, with or without a pair)."""
    kinds: dict[tuple, list] = {}
    for k in (0, 1, 2):
        for elim in itertools.combinations(CHANGES, k):
            rest = [c for c in CHANGES if c not in elim]
            for breaker in [()] + [(c,) for c in rest]:
                free = [c for c in rest if c not in breaker]
                for pair in [()] + list(itertools.combinations(free, 2)):
                    kinds.setdefault((k, len(breaker), len(pair)), []).append((frozenset(elim), frozenset(breaker), pair))
    rng = random.Random(11)
    return [rng.choice(cases) for _, cases in sorted(kinds.items())]


def truth_of(elim: frozenset, breakers: frozenset, pair: tuple) -> FlagTruth:
    causes = tuple((c, 1.0) for c in pair) if pair else ((None, 1.0),)
    return FlagTruth(CHANGES, causes, eliminators=elim, breakers=breakers, sessions=1, severity=1.0)


def brute_force(truth: FlagTruth) -> tuple[dict, set[frozenset]]:
    """Each change's verdict, by trying it alone; every 1-minimal eliminating subset of the rest."""
    base = truth.run_rate(Config())
    verdicts = {}
    for change in CHANGES:
        alone = truth.run_rate(Config((change,)))
        if change in truth.breakers:
            verdicts[change] = "untestable"
        elif alone == 0:
            verdicts[change] = "eliminates"
        else:
            assert 0.5 <= alone / base <= 2  # these truths hold no partial effects
            verdicts[change] = "no_effect"
    usable = [c for c in CHANGES if verdicts[c] == "no_effect"]

    def stops(subset) -> bool:
        return truth.run_rate(Config(tuple(sorted(subset)))) == 0

    minimal = set()
    for size in range(2, len(usable) + 1):
        for subset in itertools.combinations(usable, size):
            if stops(subset) and not any(stops(set(subset) - {x}) for x in subset):
                minimal.add(frozenset(subset))
    return verdicts, minimal


def run(truth: FlagTruth, seed: int) -> GroupScreening:
    rng = random.Random(seed)
    strategy = GroupScreening(Config(), list(CHANGES), SETTINGS)
    drive_in_order(strategy, lambda config, n: truth.outcome(config, n, rng))
    return strategy


@pytest.mark.parametrize("elim,breakers,pair", truths())
def test_search_reaches_what_enumeration_says(elim, breakers, pair):
    truth = truth_of(elim, breakers, pair)
    expected, minimal = brute_force(truth)
    result = run(truth, seed=len(elim) * 7 + len(pair)).result()
    assert result.finished
    assert {v.change: v.verdict for v in result.changes} == expected
    assert {b.change for b in result.untestable} == set(breakers)
    found = {frozenset(c.changes) for c in result.combinations if c.verdict.value == "eliminates"}
    assert found <= minimal
    assert bool(found) == bool(minimal)  # a combination exactly when enumeration finds one
