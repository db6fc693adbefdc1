"""The culprit posterior and the probe selection against brute-force references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from heisenbisect.decide.ends import information_by_size
from heisenbisect.decide.posterior import (
    LEARNED_P_BAD,
    LEARNED_P_GOOD,
    RatePrior,
    RunCounts,
    culprit_posterior,
    rate_priors,
    skip_groups,
)
from heisenbisect.decide.probes import GOOD_END, choose_probes, good_end_gain, information_gain

PRIORS = [
    RatePrior(known=0.3),
    RatePrior(known=0.0),
    RatePrior(a=1.0, b=1.0),
    RatePrior(a=1.0, b=3.0),
    RatePrior(a=1.0, b=19.0, zero=0.5),
]


def brute_rate(prior: RatePrior, runs: list[int]) -> tuple[float, float]:
    """(marginal likelihood, E[rate | runs]) by multiplying Bernoulli terms run by run and
    integrating the rate numerically: no conjugacy, no counts."""

    def lik(r: float) -> float:
        out = 1.0
        for failed in runs:
            out *= r if failed else 1.0 - r
        return out

    if prior.known is not None:
        return lik(prior.known), prior.known
    density = stats.beta(prior.a, prior.b).pdf
    slab = integrate.quad(lambda r: lik(r) * density(r), 0, 1, epsabs=1e-14)[0]
    slab_mean = integrate.quad(lambda r: r * lik(r) * density(r), 0, 1, epsabs=1e-14)[0]
    spike = lik(0.0)
    total = prior.zero * spike + (1 - prior.zero) * slab
    return total, (1 - prior.zero) * slab_mean / total


def brute_posterior(runs: list[list[int]], good_runs: list[int], bad_prior: RatePrior, good_prior: RatePrior):
    """Enumerate culprits; for each, split the runs into good and bad commits explicitly."""
    n = len(runs)
    joint, rb, rg = [], [], []
    for j in range(n):
        bad_runs = [y for i in range(j, n) for y in runs[i]]
        good = good_runs + [y for i in range(j) for y in runs[i]]
        lb, mb = brute_rate(bad_prior, bad_runs)
        lg, mg = brute_rate(good_prior, good)
        joint.append(lb * lg / n)
        rb.append(mb)
        rg.append(mg)
    return np.array(joint), np.array(rb), np.array(rg)


def evidence_of(runs: list[list[int]], good_runs: list[int]) -> RunCounts:
    return RunCounts(
        np.array([len(r) for r in runs]),
        np.array([sum(r) for r in runs]),
        len(good_runs),
        sum(good_runs),
    )


runs_strategy = st.lists(st.lists(st.integers(0, 1), max_size=4), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    runs=runs_strategy,
    good_runs=st.lists(st.integers(0, 1), max_size=3),
    bad_prior=st.sampled_from([p for p in PRIORS if p.known != 0.0]),
    good_prior=st.sampled_from(PRIORS[1:] + [RatePrior(known=0.05)]),
)
def test_posterior_matches_enumeration(runs, good_runs, bad_prior, good_prior):
    post = culprit_posterior(evidence_of(runs, good_runs), bad_prior, good_prior)
    joint, rb, rg = brute_posterior(runs, good_runs, bad_prior, good_prior)
    assert post.consistent == (joint.sum() > 0)  # a known rate of 0 contradicted: impossible evidence
    if not post.consistent:
        return
    np.testing.assert_allclose(post.probs, joint / joint.sum(), rtol=1e-6, atol=1e-9)
    keep = joint > 0  # the predictive rates given an impossible culprit are meaningless
    np.testing.assert_allclose(post.rate_bad[keep], rb[keep], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(post.rate_good[keep], rg[keep], rtol=1e-5, atol=1e-9)


def test_a_failure_at_a_known_perfect_good_end_is_a_contradiction():
    post = culprit_posterior(RunCounts(np.zeros(4, int), np.zeros(4, int), 3, 1), RatePrior(known=0.2), RatePrior(known=0.0))
    assert not post.consistent
    np.testing.assert_allclose(post.probs, 0.25)


def test_one_failure_proves_badness_when_good_commits_never_fail():
    runs = [[0], [], [1], [], []]
    post = culprit_posterior(evidence_of(runs, []), RatePrior(known=0.2), RatePrior(known=0.0))
    assert post.probs[3:].sum() == 0.0
    assert post.probs[:3].sum() == pytest.approx(1.0)


def test_monte_carlo_reference_with_learned_rates():
    """Sample (culprit, p, q) from the prior, simulate a fixed design, keep samples that
    reproduce the observed counts: their culprit frequencies approach the posterior."""
    rng = np.random.default_rng(7)
    bad_prior, good_prior = RatePrior(a=1.0, b=2.0), RatePrior(a=1.0, b=8.0, zero=0.5)
    trials = np.array([3, 0, 3, 0, 3])
    observed = np.array([0, 0, 1, 0, 2])
    draws = 2_000_000
    j = rng.integers(0, 5, draws)
    p = rng.beta(1.0, 2.0, draws)
    q = np.where(rng.random(draws) < 0.5, 0.0, rng.beta(1.0, 8.0, draws))
    fails = np.stack([rng.binomial(trials[i], np.where(i >= j, p, q)) for i in range(5)], axis=1)
    keep = (fails == observed).all(axis=1)
    freq = np.bincount(j[keep], minlength=5) / keep.sum()
    post = culprit_posterior(RunCounts(trials, observed), bad_prior, good_prior)
    np.testing.assert_allclose(post.probs, freq, atol=0.02)
    assert keep.sum() > 2000


def brute_gain(post, pending: list[int], commit: int) -> float:
    """I(J; Y_commit | Y_pending) by enumerating every joint outcome."""
    n = len(post.probs)

    def rate(i, j):
        return post.rate_bad[j] if i >= j else post.rate_good[j]

    def h_joint(probes):
        total = 0.0
        for ys in itertools.product([0, 1], repeat=len(probes)):
            pr = sum(
                post.probs[j] * np.prod([rate(i, j) if y else 1 - rate(i, j) for i, y in zip(probes, ys)])
                for j in range(n)
            )
            total -= pr * np.log2(pr) if pr > 0 else 0.0
        return total

    def h_cond(i):
        return sum(post.probs[j] * stats.bernoulli(rate(i, j)).entropy() / np.log(2) for j in range(n))

    return h_joint(pending + [commit]) - h_joint(pending) - h_cond(commit)


@settings(max_examples=30, deadline=None)
@given(
    runs=st.lists(st.lists(st.integers(0, 1), max_size=3), min_size=2, max_size=6),
    pending=st.lists(st.integers(GOOD_END, 5), max_size=3),
    learned=st.booleans(),
)
def test_information_gain_matches_enumeration(runs, pending, learned):
    bad, good = rate_priors(None, None) if learned else rate_priors(0.3, 0.02)
    post = culprit_posterior(evidence_of(runs, []), bad, good)
    pending = [i for i in pending if i < len(runs)]  # GOOD_END stays: a run at the good end
    gains = information_gain(post, pending)
    expected = [brute_gain(post, pending, c) for c in range(len(runs))]
    np.testing.assert_allclose(gains, expected, atol=1e-9)
    assert good_end_gain(post, pending) == pytest.approx(brute_gain(post, pending, GOOD_END), abs=1e-9)


def test_first_probe_of_a_noiseless_search_is_the_middle():
    bad, good = rate_priors(1.0, 0.0)
    post = culprit_posterior(RunCounts.empty(16), bad, good)
    assert choose_probes(post, np.ones(16, bool), [], 1) in ([7], [8])


def test_parallel_probes_spread_out_and_skip_untestable():
    bad, good = rate_priors(0.9, 0.0)
    post = culprit_posterior(RunCounts.empty(32), bad, good)
    testable = np.ones(32, bool)
    testable[14:18] = False
    picks = choose_probes(post, testable, [], 3)
    assert len(picks) == 3 and not set(picks) & set(range(14, 18))
    assert len(set(picks)) == 3  # with near-certain outcomes, repeating a commit teaches little


def test_skip_groups_join_untestable_runs_to_the_next_testable_commit():
    groups = skip_groups(np.array([False, True, True, False, False, True]))
    assert groups.tolist() == [0, 1, 1, 1, 2, 3]


def grid_posterior(runs: list[list[int]], good_runs: list[int], points: int = 600) -> np.ndarray:
    """P(J = j | runs) under the default learned priors, by brute force: every culprit enumerated,
    the runs multiplied one by one, and (p, q) integrated jointly on a grid (midpoint rule in
    u = sqrt(rate), which makes Beta(1/2, b)'s density smooth), no Beta functions."""
    u = (np.arange(points) + 0.5) / points
    rate = u**2
    p, q = rate[:, None], rate[None, :]
    density = stats.beta(LEARNED_P_BAD.a, LEARNED_P_BAD.b).pdf(p) * 2 * u[:, None]
    density = density * stats.beta(LEARNED_P_GOOD.a, LEARNED_P_GOOD.b).pdf(q) * 2 * u[None, :]
    n = len(runs)
    joint = np.zeros(n)
    for j in range(n):
        lik = np.ones_like(density)
        for i, commit_runs in enumerate(runs):
            r = p if i >= j else q
            for failed in commit_runs:
                lik = lik * (r if failed else 1 - r)
        for failed in good_runs:
            lik = lik * (q if failed else 1 - q)
        joint[j] = (lik * density).sum() / points**2 / n
    return joint / joint.sum()


@pytest.mark.parametrize("seed", range(6))
def test_default_learned_posterior_matches_a_grid_over_both_rates(seed):
    """The posterior `bisect commits` prints with p and q learned (no point mass anywhere) against
    enumeration over the culprit and a joint grid over (p, q), on small random histories."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    truth = int(rng.integers(n))
    runs = [[int(rng.random() < (0.4 if i >= truth else 0.05)) for _ in range(rng.integers(0, 5))] for i in range(n)]
    good_runs = [int(rng.random() < 0.05) for _ in range(rng.integers(0, 4))]
    bad, good = rate_priors(None, None)
    post = culprit_posterior(evidence_of(runs, good_runs), bad, good)
    np.testing.assert_allclose(post.probs, grid_posterior(runs, good_runs), rtol=2e-3, atol=1e-4)


def test_the_learned_good_rate_has_no_point_mass():
    """Issue 27: a point mass at q = 0 made 137 good-side passes with no failure 0.48 likely, ten
    times what a flat prior gives, and a false boundary reached 0.964. Integrated over the
    continuous prior they are 0.13 likely."""
    _, good = rate_priors(None, None)
    assert good.zero == 0.0
    likelihood = float(np.exp(good.log_marginal(np.array([0.0]), np.array([137.0]))[0]))
    assert likelihood == pytest.approx(0.127, abs=0.002)


def brute_block_information(prior: RatePrior, past: list[tuple[int, int]], w: np.ndarray, m: int) -> float:
    """I(J; Y_1..Y_m) for m more runs at an end, by enumerating their 2^m outcome sequences, each
    one's probability under a segment integrated run by run (`brute_rate`): no counts, no
    Beta-binomial, no thinning."""
    seqs = list(itertools.product([0, 1], repeat=m))
    cond = np.empty((len(seqs), len(past)))
    for j, (f, s) in enumerate(past):
        before = [1] * f + [0] * s
        base = brute_rate(prior, before)[0]
        cond[:, j] = [brute_rate(prior, before + list(seq))[0] / base for seq in seqs]
    joint = cond @ w
    return float(stats.entropy(joint, base=2) - w @ [stats.entropy(cond[:, j], base=2) for j in range(len(past))])


@pytest.mark.parametrize("prior", [RatePrior(a=0.5, b=2.5), RatePrior(a=1.0, b=19.0, zero=0.5)], ids=["beta", "spike"])
@pytest.mark.parametrize("pending", [0, 1])
def test_block_information_at_an_end_matches_enumeration_of_outcome_sequences(prior, pending):
    """The ends are valued by blocks of runs (decide/ends.py): I(J; failures among m runs) from a
    Beta-binomial per segment, thinned from the largest block. Against sequences enumerated."""
    past = [(0, 6), (1, 5), (3, 2)]  # (failures, passes) on the end's side under each segment
    w = np.array([0.5, 0.3, 0.2])
    f, s = (np.array(x, dtype=float) for x in zip(*past))
    info = information_by_size(prior, f, s, w, pending)
    sizes = [pending + m for m in (0, 1, 2, 4)[: 4 - pending]]  # the BLOCKS 1, 2, (4) on top of pending
    expected = [brute_block_information(prior, past, w, m) if m else 0.0 for m in sizes]
    np.testing.assert_allclose(info[: len(sizes)], expected, atol=1e-7)
