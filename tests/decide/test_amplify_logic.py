"""The pure parts of `bisect amplify`: the objective, the repeat logic, the confirmation test.

References are brute force or simulation: the capacity against a grid maximization of the
mutual information, the posterior mean against Monte Carlo, the confirmation's error rate
against simulated runs of two equally good settings.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy.special import entr

from heisenbisect.decide.amplify import (
    Claim,
    Confirmation,
    ConfirmSettings,
    Search,
    SearchSettings,
    TimedRuns,
    capacity,
    estimate,
    improvement_pvalue,
)
from heisenbisect.records import Config, Outcome, TrialStatus

CURRENT = Config()


def run(config: Config, failed: bool, seconds: float = 1.0, status: TrialStatus = TrialStatus.OK) -> Outcome:
    return Outcome("t", config.key, 0, status, int(failed), 1, duration_s=seconds)


def bits(x):
    return (entr(x) + entr(1 - np.asarray(x))) / math.log(2)


@pytest.mark.parametrize("p", [0.01, 0.05, 0.15, 0.5, 0.9, 1.0])
def test_capacity_is_the_best_mutual_information_of_one_run(p):
    share = np.linspace(0, 1, 200001)  # share of bad inputs; a good commit never fails
    info = bits(share * p) - share * bits(p)
    assert float(capacity(p)) == pytest.approx(info.max(), abs=1e-6)


def test_capacity_rises_with_the_failure_rate():
    p = np.linspace(0.001, 1, 500)
    assert np.all(np.diff(capacity(p)) > 0)


def test_estimate_is_the_posterior_mean_of_bits_per_second():
    ev = TimedRuns([True] * 3 + [False] * 17, [2.0] * 20, 20)
    est = estimate(ev)
    draws = np.random.default_rng(0).beta(3.5, 17.5, 400000)
    assert est.value == pytest.approx(float(np.mean(capacity(draws))) / 2.0, rel=0.01)
    assert est.interval[0] < est.value < est.interval[1]
    assert est.runs_per_s == pytest.approx(0.5)


def test_errors_count_as_attempts_but_not_as_runs():
    ev = TimedRuns()
    ev.add(run(CURRENT, True, 1.0))
    ev.add(run(CURRENT, False, 9.0, TrialStatus.ERROR))
    assert (ev.runs, ev.attempts, ev.failed_runs, ev.seconds) == (1, 2, 1, 1.0)
    assert estimate(TimedRuns()).value == 0.0


def drive(search: Search, rates: dict[Config, float], proposals: list[Config], rng) -> None:
    """Run a search one run at a time; ``proposals`` stand in for the sampler."""
    queue = list(proposals)
    while not search.finished():
        wanted = search.propose(Counter(), 1)
        if not wanted:
            if not search.wants_candidate(Counter()) or not queue:
                break
            search.add(queue.pop(0), len(proposals) - len(queue))
            continue
        config = wanted[0]
        search.observe(config, run(config, rng.random() < rates[config]))


def test_search_spends_exactly_its_budget_and_gives_the_contender_the_most_runs():
    good, bad = Config((("k", "good"),)), Config((("k", "bad"),))
    others = [Config((("k", f"x{i}"),)) for i in range(40)]
    rates = {CURRENT: 0.1, good: 0.8, bad: 0.0, **{c: 0.05 for c in others}}
    search = Search(CURRENT, SearchSettings(max_runs=120, first_runs=3, max_candidate_runs=24))
    drive(search, rates, [bad, good, *others], np.random.default_rng(1))
    assert search.used == 120 and search.finished()
    assert search.best() == good
    runs = {c: cand.evidence.runs for c, cand in search.candidates.items()}
    assert runs[good] >= 24 and runs[bad] <= 6 and max(runs.get(c, 0) for c in others) < runs[good]
    closed_tokens = [token for _, token in search.pop_closed()]
    assert None in closed_tokens and 2 in closed_tokens  # the current settings and the good candidate's look


def test_a_candidate_proposed_again_is_measured_further_not_twice():
    a = Config((("k", "a"),))
    search = Search(CURRENT, SearchSettings(max_runs=100, first_runs=4, max_candidate_runs=8))
    drive(search, {CURRENT: 0.5, a: 0.0}, [a], np.random.default_rng(0))
    before = search.candidates[a].evidence.runs
    search.add(a, 99)
    assert search.propose(Counter(), 10) == [a] * 4 and before == 4


def test_replaying_the_same_calls_rebuilds_the_same_state():
    rng = np.random.default_rng(3)
    configs = [Config((("k", str(i)),)) for i in range(30)]
    rates = {CURRENT: 0.2, **{c: rng.uniform(0, 1) for c in configs}}
    log: list[tuple] = []
    live = Search(CURRENT, SearchSettings(max_runs=90, first_runs=2, max_candidate_runs=16))
    queue = list(configs)
    while not live.finished():
        wanted = live.propose(Counter(), 1)
        if not wanted:
            config = queue.pop(0)
            live.add(config, config.key)
            log.append(("add", config))
            continue
        outcome = run(wanted[0], rng.random() < rates[wanted[0]])
        live.observe(wanted[0], outcome)
        log.append(("observe", wanted[0], outcome))
    again = Search(CURRENT, live.settings)
    for event in log:
        again.add(event[1], event[1].key) if event[0] == "add" else again.observe(event[1], event[2])
    assert again.estimates() == live.estimates() and again.best() == live.best()
    assert [c.target for c in again.candidates.values()] == [c.target for c in live.candidates.values()]


def confirm(p_best: float, p_current: float, d_best: float, d_current: float, seed: int, max_runs: int = 100):
    rng = np.random.default_rng(seed)
    best = Config((("k", "best"),))
    c = Confirmation(best, CURRENT, ConfirmSettings(confidence=0.95, first_look=10, max_runs=max_runs))
    rates = {best: (p_best, d_best), CURRENT: (p_current, d_current)}
    while not c.finished():
        proposed = c.propose(Counter(), 2)
        assert proposed, "a running confirmation always wants runs"
        for config in proposed:
            p, d = rates[config]
            c.observe(config, run(config, rng.random() < p, d * rng.lognormal(0, 0.2)))
    return c


@pytest.mark.parametrize(("p", "d_best"), [(0.1, 1.0), (0.3, 1.0), (0.03, 1.0)])
def test_confirmation_claims_no_improvement_that_is_not_there(p, d_best):
    """Equal bits per second: a false claim at most alpha = 5% of the time (simulated)."""
    claims = sum(confirm(p, p, d_best, 1.0, seed).claim is Claim.CONFIRMED for seed in range(200))
    assert claims / 200 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)


def test_confirmation_confirms_a_clear_improvement_early_and_runs_interleaved():
    c = confirm(0.6, 0.1, 0.5, 1.0, seed=0)
    assert c.claim is Claim.CONFIRMED and c.looks_done <= 2
    runs = [ev.runs for ev in c.evidence.values()]
    assert abs(runs[0] - runs[1]) <= 2


def test_improvement_pvalue_is_one_sided():
    worse = TimedRuns([False] * 30, [1.0] * 30, 30)
    better = TimedRuns([True] * 15 + [False] * 15, [1.0] * 30, 30)
    assert improvement_pvalue(better, worse) < 0.01 < 0.99 < improvement_pvalue(worse, better)


def test_confirmation_is_calibrated_when_rate_and_duration_trade_off():
    """Equal bits per second from a higher rate in longer runs: still at most alpha false claims."""
    d_best = float(capacity(0.3) / capacity(0.1))  # C(0.3) / d_best == C(0.1) / 1
    claims = sum(confirm(0.3, 0.1, d_best, 1.0, seed).claim is Claim.CONFIRMED for seed in range(200))
    assert claims / 200 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 200)
