"""Where to probe next: the commits whose runs tell the most about the culprit.

The gain of one more run at commit c is the mutual information I(J; Y_c) between the
culprit and that run's outcome, with the failure rates already integrated out (the
posterior's predictive rates). For k workers the k probes are chosen greedily, each one
maximizing I(J; Y_c | outcomes of the runs already in flight or chosen), by enumerating
those runs' joint outcomes (2^m patterns for m pending runs). Pending runs are treated as
independent given the culprit; that is exact for known rates and close otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import entr

from heisenbisect.decide.ends import block_gain
from heisenbisect.decide.posterior import Posterior, RatePrior

# pending runs enumerated jointly; older ones beyond this are ignored by the selection
MAX_JOINT = 10
# The known-good end as a probe. It fails at q under every culprit, so with q known its runs
# say nothing; with q learned they do (a culprit that needs a high q to explain the range's
# failures predicts failures there), and the gain says how much.
GOOD_END = -1


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """h(p) in bits, 0 at p = 0 and 1."""
    p = np.clip(p, 0.0, 1.0)
    return (entr(p) + entr(1.0 - p)) / np.log(2.0)


def information_gain(post: Posterior, pending: Sequence[int] = ()) -> np.ndarray:
    """Bits about the culprit expected from one more run at each candidate, given ``pending``."""
    patterns = _condition(post, pending)
    return _gains(post, patterns)


def good_end_gain(post: Posterior, pending: Sequence[int] = ()) -> float:
    """Bits about the culprit expected from one more run at the known-good end."""
    return _good_end_gain(post, _condition(post, pending))


def choose_probes(
    post: Posterior,
    testable: np.ndarray,
    pending: list[int],
    slots: int,
    good_end: bool = False,
    rates: tuple[RatePrior, RatePrior] | None = None,
) -> list[int]:
    """Up to ``slots`` candidates to run next (repeats allowed), greedily by information gain.

    Only ``testable`` candidates are chosen, and `GOOD_END` when ``good_end``; nothing is
    chosen once no run can tell anything. ``pending`` may hold `GOOD_END` too. With ``rates``
    (the priors of p and q) the two ends are also valued by blocks of runs (`decide.ends`).
    """
    if not testable.any() and not good_end:
        return []
    patterns = _condition(post, pending)
    chosen: list[int] = []
    last = len(testable) - 1
    for _ in range(slots):
        gains = np.where(testable, _gains(post, patterns), -np.inf)
        asked = pending + chosen
        if rates is not None and testable[last]:
            gains[last] = max(
                gains[last],
                block_gain(rates[0], *post.bad_side, post.segment_probs, asked.count(last)),
            )
        best = int(np.argmax(gains))
        gain = gains[best]
        if good_end:
            end_gain = _good_end_gain(post, patterns)
            if rates is not None:
                end_gain = max(
                    end_gain,
                    block_gain(
                        rates[1], *post.good_side, post.segment_probs, asked.count(GOOD_END)
                    ),
                )
            if end_gain > gain:
                best, gain = GOOD_END, end_gain
        if not gain > 1e-12:
            if (
                not chosen
                and not pending
                and (split := splitting_commit(post, testable)) is not None
            ):
                chosen.append(split)
            break
        chosen.append(best)
        if len(pending) + len(chosen) <= MAX_JOINT:
            patterns = _extend(post, patterns, best)
    return chosen


def splitting_commit(post: Posterior, testable: np.ndarray) -> int | None:
    """The testable commit whose runs split the culprit's posterior most evenly (None if none splits it).

    A run at c says "culprit at or before c" or "after c" whenever p and q differ, but its gain
    right now can be nil: learned rates whose predictive means happen to be equal (p's from the
    bad side's runs, q's from the good side's) make one run say nothing, while the runs after it
    would. Information gain alone then stops a search that is far from decided; this keeps it going.
    """
    at_or_before = np.cumsum(post.probs)
    splits = np.flatnonzero(testable & (at_or_before > 1e-12) & (at_or_before < 1.0 - 1e-12))
    if not len(splits):
        return None
    return int(splits[np.argmin(np.abs(at_or_before[splits] - 0.5))])


def _fail_rate(post: Posterior, commit: int) -> np.ndarray:
    """P(a run at ``commit`` fails | J = j) for every j: bad iff j <= commit (never at `GOOD_END`)."""
    rate = post.rate_good.copy()
    rate[: commit + 1] = post.rate_bad[: commit + 1]
    return rate


def _condition(post: Posterior, pending: Sequence[int]) -> np.ndarray:
    """A[y, j] = P(J = j, pending runs end as pattern y)."""
    patterns = post.probs[None, :]
    for commit in list(pending)[-MAX_JOINT:]:
        patterns = _extend(post, patterns, commit)
    return patterns


def _extend(post: Posterior, patterns: np.ndarray, commit: int) -> np.ndarray:
    rate = _fail_rate(post, commit)
    return np.concatenate([patterns * (1.0 - rate), patterns * rate])


def _gains(post: Posterior, patterns: np.ndarray) -> np.ndarray:
    """I(J; Y_c | Y_pending) for every candidate c, in O(2^m N)."""
    # P(pattern y, Y_c = 1) = sum_{j <= c} A[y, j] r_bad[j] + sum_{j > c} A[y, j] r_good[j]
    bad_part = np.cumsum(patterns * post.rate_bad, axis=1)
    good_cum = np.cumsum(patterns * post.rate_good, axis=1)
    fail_joint = bad_part + (good_cum[:, -1:] - good_cum)
    weight = patterns.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        fail_given_y = np.where(weight > 0, fail_joint / weight, 0.0)
    outcome_entropy = (weight * binary_entropy(fail_given_y)).sum(axis=0)
    # H(Y_c | J) = sum_{j <= c} P(j) h(r_bad[j]) + sum_{j > c} P(j) h(r_good[j])
    h_bad = np.cumsum(post.probs * binary_entropy(post.rate_bad))
    h_good = np.cumsum(post.probs * binary_entropy(post.rate_good))
    noise_entropy = h_bad + (h_good[-1] - h_good)
    return outcome_entropy - noise_entropy


def _good_end_gain(post: Posterior, patterns: np.ndarray) -> float:
    """I(J; Y_good | Y_pending): a good-end run fails at ``rate_good[j]`` under culprit j."""
    weight = patterns.sum(axis=1)
    fail = (patterns * post.rate_good).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fail_given_y = np.where(weight > 0, fail / weight, 0.0)
    outcome_entropy = float(weight @ binary_entropy(fail_given_y))
    return outcome_entropy - float(post.probs @ binary_entropy(post.rate_good))
