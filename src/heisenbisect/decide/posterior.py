"""The posterior over the culprit of a flaky regression, with the failure rates integrated out.

Model: candidates c_0..c_{N-1} (oldest first, the last one is the known-bad end). The
culprit J is the first bad commit; every candidate at or after J fails a run with
probability p, every one before it (and the known-good end) with probability q. Each rate
is either known, or has a conjugate prior (a Beta, optionally with extra mass at exactly
0, because "good commits never fail" is the usual case and makes one failure decisive).

Given J the runs split into a good part and a bad part, so the marginal likelihood of J is
a product of two Beta-function ratios: the rates are integrated out exactly, never plugged
in. The likelihood only depends on which probed commits lie before J, so it is constant
between probed commits; it is computed once per such segment (K + 1 segments for K probed
commits) and spread over the candidates of each segment by the prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaln, xlog1py, xlogy


@dataclass(frozen=True)
class RatePrior:
    """What is believed about one failure rate before any trial.

    ``known`` fixes the rate. Otherwise the rate is ``zero`` mass at exactly 0 plus
    ``1 - zero`` times Beta(a, b).
    """

    known: float | None = None
    a: float = 1.0
    b: float = 1.0
    zero: float = 0.0

    def __post_init__(self) -> None:
        if self.known is not None and not 0.0 <= self.known <= 1.0:
            raise ValueError(f"a known rate lies in [0, 1], got {self.known}")
        if self.a <= 0 or self.b <= 0 or not 0.0 <= self.zero < 1.0:
            raise ValueError(
                f"need a, b > 0 and 0 <= zero < 1, got {self.a}, {self.b}, {self.zero}"
            )

    def log_marginal(self, failures: np.ndarray, passes: np.ndarray) -> np.ndarray:
        """log P(these runs' outcomes, in a fixed order), the rate integrated over this prior."""
        f = np.asarray(failures, dtype=float)
        s = np.asarray(passes, dtype=float)
        if self.known is not None:
            return xlogy(f, self.known) + xlog1py(s, -self.known)
        slab = betaln(self.a + f, self.b + s) - betaln(self.a, self.b)
        if self.zero == 0.0:
            return slab
        spike = np.where(f == 0, 0.0, -np.inf)
        return np.logaddexp(np.log(self.zero) + spike, np.log1p(-self.zero) + slab)

    def predictive(self, failures: np.ndarray, passes: np.ndarray) -> np.ndarray:
        """P(the next run fails | these outcomes): the posterior mean of the rate."""
        f = np.asarray(failures, dtype=float)
        s = np.asarray(passes, dtype=float)
        if self.known is not None:
            return np.full(np.broadcast(f, s).shape, self.known)
        mean = (self.a + f) / (self.a + self.b + f + s)
        if self.zero == 0.0:
            return mean
        slab = betaln(self.a + f, self.b + s) - betaln(self.a, self.b)
        log_slab = np.log1p(-self.zero) + slab
        log_spike = np.where(f == 0, np.log(self.zero), -np.inf)
        slab_weight = np.exp(log_slab - np.logaddexp(log_slab, log_spike))
        return slab_weight * mean


# Defaults when the spec leaves a rate out. A bad commit's rate is anything in (0, 1), low
# rates likelier: Beta(1/2, 5/2), mean 1/6, 37% of its mass below 5%, because the
# failures this tool chases corrupt "a few percent" of requests. A prior that expects high
# rates trusts a few passes too much: with Beta(1, 1) a "95%" culprit was right only 87% of
# the time at p = 0.15, and with Beta(1, 5) 89% at p = 0.05 (93% with this one, which
# costs about 3% more trials at p = 0.15; see docs/bisection.md, "Calibration").
# A good commit's rate is integrated over the same continuous Beta(1/2, 5/2): no point mass.
# The old prior (exactly 0 with probability 0.3, else Beta(1, 49)) bet that good commits never
# fail, so n passes on the good side with no failure cost a false boundary little (0.48 at
# n = 137, against 0.13 here): at N = 1200, p = 0.05, q = 0.01 its "95%" culprit was right in
# 0.911 of searches (issue 27). With Beta(1/2, ...) the predictive q after n good-side passes is
# 1/(2n + 6), so once the good side holds passes a failure is near-decisive anyway.
LEARNED_P_BAD = RatePrior(a=0.5, b=2.5)
LEARNED_P_GOOD = RatePrior(a=0.5, b=2.5)


def rate_priors(
    p_bad: float | None, p_good: float | None, stored_bad: tuple[int, int] = (0, 0)
) -> tuple[RatePrior, RatePrior]:
    """The priors a bisection starts from. ``stored_bad`` = (runs, failed runs) already stored at
    the bad commit under the same target and config (by `bisect run` or `bisect amplify`): a
    learned p then starts from the posterior those runs leave, exactly as if they had been
    probed at the bad end (a run there fails at p under every culprit)."""
    runs, failed = stored_bad
    if not 0 <= failed <= runs:
        raise ValueError(f"need 0 <= failed <= runs, got {failed}, {runs}")
    if p_bad is not None:
        bad = RatePrior(known=p_bad)
    else:
        bad = RatePrior(a=LEARNED_P_BAD.a + failed, b=LEARNED_P_BAD.b + runs - failed)
    good = RatePrior(known=p_good) if p_good is not None else LEARNED_P_GOOD
    return bad, good


@dataclass(frozen=True)
class RunCounts:
    """Finished runs and failed runs: per candidate (oldest first) and at the known-good end."""

    trials: np.ndarray  # (N,) ints
    failures: np.ndarray  # (N,) ints
    good_trials: int = 0
    good_failures: int = 0

    @classmethod
    def empty(cls, n: int) -> RunCounts:
        return cls(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64))


@dataclass(frozen=True)
class Posterior:
    """P(culprit = c_j) for every candidate, and the predictive failure rates given it.

    ``rate_bad[j]`` / ``rate_good[j]``: P(a new run of a bad / good commit fails | J = j,
    evidence); what the probe selection needs. ``consistent`` is False when the evidence
    is impossible under every culprit (a known rate of 0 or 1 contradicted): then
    ``probs`` is the prior.
    """

    probs: np.ndarray
    rate_bad: np.ndarray
    rate_good: np.ndarray
    consistent: bool
    mean_p_bad: float
    mean_p_good: float
    # per segment of culprits (between probed commits): its posterior, and the (failures, passes)
    # on the bad and the good side under it; what valuing runs at the two ends needs
    segment_probs: np.ndarray
    bad_side: tuple[np.ndarray, np.ndarray]
    good_side: tuple[np.ndarray, np.ndarray]


def culprit_posterior(
    evidence: RunCounts,
    bad_prior: RatePrior,
    good_prior: RatePrior,
    prior: np.ndarray | None = None,
) -> Posterior:
    """The exact posterior over the culprit; ``prior`` defaults to uniform over candidates."""
    n = len(evidence.trials)
    weights = np.full(n, 1.0 / n) if prior is None else np.asarray(prior, float) / np.sum(prior)
    probed = np.flatnonzero(evidence.trials > 0)
    fails = evidence.failures[probed].astype(float)
    passes = (evidence.trials[probed] - evidence.failures[probed]).astype(float)
    # segment s holds the culprits with exactly s probed commits before them (those are good)
    before_f = np.concatenate([[0.0], np.cumsum(fails)])
    before_s = np.concatenate([[0.0], np.cumsum(passes)])
    good_f = before_f + evidence.good_failures
    good_s = before_s + (evidence.good_trials - evidence.good_failures)
    bad_f = fails.sum() - before_f
    bad_s = passes.sum() - before_s
    log_lik = bad_prior.log_marginal(bad_f, bad_s) + good_prior.log_marginal(good_f, good_s)
    # everything below works per segment (K + 1 values) and spreads once over the N candidates
    bounds = np.concatenate(
        [[0], probed + 1, [n]]
    )  # segment s is candidates bounds[s]..bounds[s+1]-1
    segment_of = np.repeat(np.arange(len(probed) + 1), np.diff(bounds))
    starts = bounds[:-1]
    mass = np.zeros(
        len(starts)
    )  # prior mass per segment; only the last can be empty (c_{N-1} probed)
    mass[starts < n] = np.add.reduceat(weights, starts[starts < n])
    with np.errstate(divide="ignore"):
        log_joint = log_lik + np.log(mass)
    peak = np.max(log_joint)
    consistent = bool(np.isfinite(peak))
    if consistent:
        segment_prob = np.exp(log_joint - peak)
        segment_prob /= segment_prob.sum()
        share = np.divide(
            weights, mass[segment_of], out=np.zeros(n), where=weights > 0
        )  # exactly 1 alone
        probs = share * segment_prob[segment_of]
    else:
        probs = weights
        segment_prob = mass / mass.sum()
    rate_bad = bad_prior.predictive(bad_f, bad_s)[segment_of]
    rate_good = good_prior.predictive(good_f, good_s)[segment_of]
    return Posterior(
        probs=probs,
        rate_bad=rate_bad,
        rate_good=rate_good,
        consistent=consistent,
        mean_p_bad=float(probs @ rate_bad),
        mean_p_good=float(probs @ rate_good),
        segment_probs=segment_prob,
        bad_side=(bad_f, bad_s),
        good_side=(good_f, good_s),
    )


def skip_groups(untestable: np.ndarray) -> np.ndarray:
    """Group ids of candidates that no probe can tell apart: each run of untestable commits
    joins the testable commit after it (probing that one says "culprit here or earlier" for
    all of them); a trailing run of untestable commits is a group of its own."""
    testable = ~np.asarray(untestable, dtype=bool)
    return np.concatenate([[0], np.cumsum(testable)[:-1]])
