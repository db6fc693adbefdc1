"""ddmin under a noisy oracle: each probe answered by the search's sequential test on fresh
simulated runs, checked against brute force over every subset of small cases."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from scipy import stats

from heisenbisect.decide.combinations import Reduction
from heisenbisect.decide.sequential import ZeroTest

ZERO, MISS, CAP = 0.05, 0.01, 960
STRICT = ZeroTest(ZERO, 2 * ZERO, MISS, CAP)


def run_test(test: ZeroTest, rate: float, rng: random.Random) -> tuple[str, int]:
    """The test's answer on simulated runs failing at ``rate``, and the runs it took."""
    failed = runs = 0
    while (got := test.answer(failed, runs)) == "pending":
        failed += rng.random() < rate
        runs += 1
    return got, runs


def test_the_search_test_is_the_binomial_likelihood_ratio_and_holds_its_error_rates():
    for failed, runs in ((0, 0), (1, 7), (3, 40), (12, 13)):
        expected = stats.binom.logpmf(failed, runs, 2 * ZERO) - stats.binom.logpmf(failed, runs, ZERO)
        assert STRICT.log_ratio(failed, runs) == pytest.approx(expected)
    rng = random.Random(3)

    def answer(rate: float) -> str:
        return run_test(STRICT, rate, rng)[0]

    at_zero = [answer(ZERO) for _ in range(300)]
    at_above = [answer(2 * ZERO) for _ in range(300)]
    # Wald's bounds: each error at most about miss_rate; 300 draws, 99.9% binomial margin
    limit = stats.binom.ppf(0.999, 300, MISS * 1.1)
    assert at_zero.count("fails") <= limit and at_above.count("stops") <= limit
    assert "fails" not in [answer(0.014) for _ in range(100)]  # eager under sharing: not "holds no eliminator"


def rate_of(causes, residual: float):
    """A monotone model: each cause (its firing rate, the changes that each remove it) fires unless
    removed; ``residual`` fires whatever is applied (a near-zero floor below zero_rate)."""

    def rate(subset: frozenset) -> float:
        clean = 1.0 - residual
        for fire, removers in causes:
            if not removers & subset:
                clean *= 1.0 - fire
        return 1.0 - clean

    return rate


def brute_force_minimal(stops, universe) -> set[frozenset]:
    found = set()
    for size in range(len(universe) + 1):
        for subset in itertools.combinations(universe, size):
            s = frozenset(subset)
            if stops(s) and not any(stops(s - {x}) for x in s):
                found.add(s)
    return found


def noisy_reduce(universe, rate, rng: random.Random, budget: int | None) -> tuple[Reduction, int]:
    """ddmin with each new probe answered by the strict test on fresh runs, a probe seen before
    answered from its runs (as the strategy reuses an arm of the same config); the runs spent."""
    reduction = Reduction(tuple((str(x), "1") for x in universe), budget=budget)
    answers: dict[frozenset, str] = {}
    spent = 0
    while (probe := reduction.probe()) is not None:
        key = frozenset(int(f) for f, _ in probe)
        ran = key not in answers
        if ran:
            got, runs = run_test(STRICT, rate(key), rng)
            answers[key] = "fails" if got == "undecided" else got
            spent += runs
        reduction.record(answers[key] == "stops", ran=ran)
    return reduction, spent


def random_model(rng: random.Random, n: int):
    causes = []
    for _ in range(rng.randint(1, 3)):
        removers = frozenset(rng.sample(range(n), rng.randint(1, 2)))
        causes.append((rng.choice((0.15, 0.3, 0.6)), removers))
    return causes, rng.choice((0.0, 0.01))  # no subset lies between zero_rate and twice it


def test_noisy_ddmin_returns_a_one_minimal_stopping_set_as_brute_force_says():
    rng = random.Random(11)
    minimal = stopping = cases = 0
    for case in range(60):
        n = rng.choice((3, 4, 5, 6))
        causes, residual = random_model(rng, n)
        rate = rate_of(causes, residual)
        universe = tuple(range(n))
        stops = lambda s: rate(s) <= ZERO  # noqa: E731
        reduction, _ = noisy_reduce(universe, rate, rng, budget=None)
        got = frozenset(int(f) for f, _ in reduction.current)
        cases += 1
        stopping += stops(got)
        minimal += got in brute_force_minimal(stops, universe)
    # each probe errs with chance <= 1%; a reduction takes 2-12 probes
    assert stopping >= cases - 3
    assert minimal >= math.floor(0.9 * cases)


def test_a_spent_budget_reports_the_smallest_set_shown_to_stop_never_an_untested_one():
    rng = random.Random(5)
    causes = [(0.3, frozenset({1})), (0.3, frozenset({6}))]  # an OR pair among 8
    rate = rate_of(causes, 0.0)
    universe = tuple(range(8))
    for budget in (1, 3, 5):
        reduction, _ = noisy_reduce(universe, rate, rng, budget=budget)
        assert reduction.exhausted and reduction.probes_run == budget
        got = frozenset(int(f) for f, _ in reduction.current)
        assert {1, 6} <= got  # still a stopping set: every narrowing step was a probe that stopped
    full, spent = noisy_reduce(universe, rate, random.Random(5), budget=None)
    assert not full.exhausted and frozenset(int(f) for f, _ in full.current) == {1, 6}
    assert spent > 0


def test_a_stricter_stop_holds_its_own_error_rate_and_still_shows_a_zero_within_the_cap():
    """Probes and clearing groups stop at 0.3%, not 1%: an OR pair's member alone at 7.8% (inside
    the 5-10% indifference zone) is then rarely taken for a set that stops."""
    test = ZeroTest(ZERO, 2 * ZERO, MISS, 180, stop_miss=0.003)
    rng = random.Random(7)

    def answer(rate: float) -> str:
        return run_test(test, rate, rng)[0]

    at_above = [answer(2 * ZERO) for _ in range(2000)]
    assert at_above.count("stops") <= stats.binom.ppf(0.999, 2000, 0.003 * 1.1)
    at_member = [answer(0.078) for _ in range(1000)]
    assert at_member.count("stops") <= stats.binom.ppf(0.999, 1000, 0.01)  # 3% at the plain stop
    assert at_member.count("stops") / 1000 < 0.01
    assert [answer(ZERO) for _ in range(300)].count("fails") <= stats.binom.ppf(0.999, 300, MISS * 1.1)
    assert test.answer(0, 107) == "pending" and test.answer(0, 108) == "stops"  # 85 at the plain stop
    assert STRICT.answer(0, 85) == "stops"


def scripted_reduce(universe, stops, wrong: frozenset) -> tuple[Reduction, list]:
    """ddmin with every probe answered by ``stops`` except the first probe of ``wrong``, answered
    "stops" (a chance streak of clean runs); asked again, a probe is answered afresh."""
    reduction = Reduction(tuple((str(x), "1") for x in universe))
    asked, lied = [], False
    while (probe := reduction.probe()) is not None:
        key = frozenset(int(f) for f, _ in probe)
        asked.append((key, reduction.asking_again))
        answer = stops(key)
        if key == wrong and not lied:
            answer, lied = True, True
        reduction.record(answer)
    return reduction, asked


def test_a_set_that_only_seemed_to_stop_is_asked_again_and_ddmin_steps_back_to_the_pair():
    """The 46 409-trial study: a probe holding one OR member stopped by chance, and every probe inside it
    failed; refining it ran 61 probes. Now a whole failed round of three or more complements asks the set
    again on fresh runs, and a fail there steps back to the set before it."""
    universe = tuple(range(16))
    pair = frozenset({2, 13})
    stops = lambda s: pair <= s  # noqa: E731
    wrong = frozenset(range(8))  # ddmin's second probe (the second half dropped): holds member 2 only
    reduction, asked = scripted_reduce(universe, stops, wrong)
    assert frozenset(int(f) for f, _ in reduction.current) == pair
    assert (wrong, True) in asked  # the set it stood on was asked again, and failed
    honest, asked_honest = scripted_reduce(universe, stops, frozenset({-1}))
    assert frozenset(int(f) for f, _ in honest.current) == pair
    assert len(asked) <= len(asked_honest) + 12  # the detour: the wrong set's rounds at 2 and 4, and the question


def test_asking_again_only_at_three_chunks_or_more_a_true_pair_is_never_asked_again():
    """A pair split between the halves fails a whole round at 2 legitimately; at 3 chunks or more one chunk
    holds neither member, so with honest answers a pair's reduction never asks again (no cost)."""
    for n in (5, 8, 13, 31):
        for pair in itertools.combinations(range(n), 2):
            reduction, asked = scripted_reduce(tuple(range(n)), lambda s: set(pair) <= s, frozenset({-1}))  # noqa: B023
            assert frozenset(int(f) for f, _ in reduction.current) == frozenset(pair)
            assert not any(again for _, again in asked)


def test_noisy_ddmin_with_a_member_in_the_indifference_zone_still_ends_on_a_stopping_set():
    """An OR pair whose members alone fail 7.8% (inside the strict test's 5-10% zone) among 12, each probe
    answered on fresh runs, the question asked again on fresh runs too: the set found stops."""
    rng = random.Random(23)
    each = 1 - (1 - 0.15) ** 0.5
    test = ZeroTest(ZERO, 2 * ZERO, MISS, 180, stop_miss=0.003)
    rate = rate_of([(each, frozenset({3})), (each, frozenset({9}))], 0.0)
    found = 0
    for _ in range(30):
        reduction = Reduction(tuple((str(x), "1") for x in range(12)))
        while (probe := reduction.probe()) is not None:
            key = frozenset(int(f) for f, _ in probe)
            failed = runs = 0
            while (got := test.answer(failed, runs)) == "pending":
                failed += rng.random() < rate(key)
                runs += 1
            reduction.record(got == "stops")
        found += frozenset(int(f) for f, _ in reduction.current) == {3, 9}
    assert found >= 29
