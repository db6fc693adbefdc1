"""The paired sequential test and culprit verification: error rates against their nominal
levels, by exact enumeration of the test's walk and by simulation of the whole verification."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from heisenbisect.decide.paired import Paired, PairedTest, scan, theta_for
from heisenbisect.decide.verify import VerifySettings, VerifyState, judge, verify_runs


def exact_outcome(test: PairedTest, p_a: float, p_b: float, steps: int) -> dict[Paired, float]:
    """P(the test ends above / not above / is still pending after ``steps`` discordant rounds)
    by dynamic programming over the A-only count: the brute-force reference of `scan`. Rounds
    where both sides agree leave the walk where it is, so the walk over discordant rounds alone
    holds every answer the test can give (its chance of "above" only grows with ``steps``)."""
    theta = p_a * (1 - p_b) / (p_a * (1 - p_b) + p_b * (1 - p_a))
    live = {0: 1.0}  # A-only count -> probability, after k discordant rounds
    ended = {Paired.ABOVE: 0.0, Paired.NOT_ABOVE: 0.0}
    for k in range(steps):
        nxt: dict[int, float] = {}
        for a, mass in live.items():
            for na, step in ((a + 1, theta), (a, 1.0 - theta)):
                if step == 0.0:
                    continue
                decided = test.decision(na, k + 1 - na)
                if decided is Paired.PENDING:
                    nxt[na] = nxt.get(na, 0.0) + mass * step
                else:
                    ended[decided] += mass * step
        live = nxt
    return {**ended, Paired.PENDING: sum(live.values())}


@pytest.mark.parametrize("theta1", [0.6, 0.75, 0.9, 0.99])
@pytest.mark.parametrize("rate", [0.02, 0.15, 0.5, 0.9])
def test_equal_rates_are_claimed_different_at_most_alpha_of_the_time(theta1, rate):
    test = PairedTest(theta1, alpha=0.05, beta=0.05)
    exact = exact_outcome(test, rate, rate, 1000)
    assert exact[Paired.ABOVE] <= 0.05


@pytest.mark.parametrize(("p_a", "p_b"), [(0.1, 0.3), (0.01, 0.2), (0.14, 0.15)])
def test_a_side_that_fails_less_often_is_claimed_above_at_most_alpha_of_the_time(p_a, p_b):
    test = PairedTest(theta_for(0.15, 0.01), alpha=0.05, beta=0.05)
    assert exact_outcome(test, p_a, p_b, 1000)[Paired.ABOVE] <= 0.05


@pytest.mark.parametrize(("p", "q"), [(0.15, 0.0), (0.3, 0.01), (0.05, 0.0), (0.5, 0.1)])
def test_a_true_difference_is_missed_at_most_about_beta_of_the_time(p, q):
    """Wald's bound on the miss rate is beta / (1 - alpha) at theta1 itself."""
    test = PairedTest(theta_for(p, q), alpha=0.05, beta=0.05)
    exact = exact_outcome(test, p, q, 1000)
    assert exact[Paired.NOT_ABOVE] <= 0.05 / 0.95 + 1e-9
    assert exact[Paired.PENDING] < 0.01


def test_scan_matches_the_exact_walk_by_simulation():
    """Long enough that the walk always ends: `scan` over simulated rounds against the DP."""
    rng = np.random.default_rng(7)
    test = PairedTest(theta_for(0.3, 0.05))
    runs = 4000
    above = sum(
        scan(test, rng.random(400) < 0.3, rng.random(400) < 0.05, 400).decision is Paired.ABOVE
        for _ in range(runs)
    )
    expected = exact_outcome(test, 0.3, 0.05, 400)
    assert expected[Paired.PENDING] < 1e-6
    assert binomtest(above, runs, expected[Paired.ABOVE]).pvalue > 0.001


def simulate(p_culprit: float, p_before: float, settings: VerifySettings, sims: int, seed: int):
    rng = np.random.default_rng(seed)
    n = settings.max_rounds
    return [
        judge(list(rng.random(n) < p_culprit), list(rng.random(n) < p_before), settings)
        for _ in range(sims)
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("p_true", "p_claimed", "q_claimed"), [
    (0.15, 0.15, 0.0),  # both sides bad: the culprit is a later commit than the true one
    (0.0, 0.15, 0.0),  # both sides good: the culprit is an earlier commit
    (0.3, 0.3, 0.01),
    (0.05, 0.05, 0.02),
])
def test_a_wrongly_named_culprit_is_verified_at_most_alpha_of_the_time(p_true, p_claimed, q_claimed):
    settings = VerifySettings(p_bad=p_claimed, p_good=q_claimed, confidence=0.95)
    found = simulate(p_true, p_true, settings, 3000, seed=11)
    verified = sum(v.state is VerifyState.VERIFIED for v in found)
    # the observed rate may exceed 0.05 only by sampling error
    assert binomtest(verified, len(found), 0.05, alternative="greater").pvalue > 0.001, verified
    assert all(v.state is not VerifyState.RUNNING for v in found)


@pytest.mark.slow
@pytest.mark.parametrize(("p", "q"), [(0.15, 0.0), (0.3, 0.01), (0.5, 0.0), (0.15, 0.01)])
def test_a_true_culprit_is_verified(p, q):
    settings = VerifySettings(p_bad=p, p_good=q, confidence=0.95)
    found = simulate(p, q, settings, 1000, seed=3)
    verified = sum(v.state is VerifyState.VERIFIED for v in found)
    # misses: the paired test's lower boundary and the futility test's, each at about 0.01
    assert binomtest(verified, len(found), 0.97, alternative="less").pvalue > 0.001, verified


def test_verify_runs_calls_each_side_in_rounds_and_counts_every_run():
    rng = np.random.default_rng(5)
    calls: list[str] = []

    def side(name: str, rate: float):
        def run():
            calls.append(name)
            return None if rng.random() < 0.05 else bool(rng.random() < rate)

        return run

    found = verify_runs(
        side("culprit", 0.5), side("before", 0.0), VerifySettings(0.5, 0.0), side("revert", 0.0)
    )
    assert found.state is VerifyState.VERIFIED and found.runs == len(calls)
    assert calls[:6] == ["culprit", "before", "revert"] * 2
    assert found.revert is not None and found.culprit.failed > 0 and found.before.failed == 0


def test_runs_past_the_decision_do_not_change_it():
    settings = VerifySettings(p_bad=0.5, p_good=0.0)
    culprit = [True, True, True, True, True, False]
    before = [False] * 6
    first = judge(culprit, before, settings)
    assert first.state is VerifyState.VERIFIED
    later = judge(culprit + [False] * 40, before + [True] * 40, settings)
    assert (later.state, later.rounds, later.culprit) == (first.state, first.rounds, first.culprit)
