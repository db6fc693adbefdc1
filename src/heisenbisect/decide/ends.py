"""The two ends of the range as probes, valued by a block of runs rather than one.

A run at the known-good end fails at q under every culprit, a run at the known-bad end at p:
one run there says next to nothing about the culprit, so a one-step information gain rarely
asks for them, yet a block of runs can say much. Runs elsewhere can look like "bad commits
failing at p" or "good commits failing at a q nearly as high"; only the ends tell the two
apart, and only after several runs (a search at N = 1200, p = 0.15, q = 0.01 whose good end
failed once in its first 6 runs spent 5 890 trials among interior commits; with the ends valued
by blocks, 1 260). The value of m more runs at an end is I(J; K_m), K_m the failures among them,
which under culprit J is Beta-binomial: the rate's posterior under J, from the runs that J puts
on the same side. An end earns a run when that value per run, for the best block size, beats
the best single run elsewhere. The bad end's first `bad_end_trials` runs stay: learning p early
sharpens every later probe, which a gain about J alone does not count (docs/bisection.md).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import betaln, entr

from heisenbisect.decide.posterior import RatePrior

# block sizes tried; the gain per run is taken at the best one
BLOCKS = (1, 2, 4, 8, 16, 32)
# segments holding less than this share of the largest one's posterior are left out
NEGLIGIBLE = 1e-6


def block_gain(
    prior: RatePrior, failures: np.ndarray, passes: np.ndarray, mass: np.ndarray, pending: int = 0
) -> float:
    """Bits about the culprit per run from the best block of runs at one end, given ``pending``
    runs already asked of it. ``failures``/``passes``: the runs on that end's side under each
    segment of culprits; ``mass``: the segments' posterior."""
    if prior.known is not None:
        return 0.0  # a known rate: runs at the end say nothing
    keep = mass > NEGLIGIBLE * mass.max()
    info = information_by_size(
        prior, failures[keep], passes[keep], mass[keep] / mass[keep].sum(), pending
    )
    # the pending runs' outcomes are not known yet: a block is worth what it adds to them (given
    # J the runs at an end are exchangeable, so their failure count says all they say)
    return float(np.max((info[1:] - info[0]) / np.asarray(BLOCKS)))


def information_by_size(
    prior: RatePrior, f: np.ndarray, s: np.ndarray, w: np.ndarray, pending: int
) -> np.ndarray:
    """I(J; K_m) in bits for m = pending and pending + each of `BLOCKS`, K_m the failures among m
    more runs at the end, J's segments weighted by ``w``: H(K_m) - H(K_m | J)."""
    thinning, starts = _thinning(pending)
    pmf = thinning @ _pmf(prior, f, s, pending + BLOCKS[-1])  # every size's rows, stacked
    return np.add.reduceat(entr(pmf @ w) + _plogp(pmf) @ w, starts) / np.log(2.0)


def _plogp(pmf: np.ndarray) -> np.ndarray:
    """p log p elementwise (0 at p = 0): scipy's `entr` with the sign flipped, at a third of its
    cost on the (sizes x segments) array, the search's costliest step."""
    positive = pmf > 0.0
    logs = np.log(pmf, out=np.zeros_like(pmf), where=positive)
    return np.multiply(pmf, logs, out=logs)


@lru_cache(maxsize=64)
def _thinning(pending: int) -> tuple[np.ndarray, np.ndarray]:
    """From the failure count K among the largest block to K among each smaller one (the pending
    runs alone first): the first m of M exchangeable runs hold j of the k failures with the
    hypergeometric probability. Rows stacked by size, and where each size's rows start."""
    from scipy.stats import hypergeom  # scipy.stats costs a second at start-up: only when asked

    largest = pending + BLOCKS[-1]
    sizes = [pending] + [pending + m for m in BLOCKS]
    k = np.arange(largest + 1)
    rows = [hypergeom.pmf(np.arange(m + 1)[:, None], largest, k[None, :], m) for m in sizes]
    starts = np.concatenate([[0], np.cumsum([m + 1 for m in sizes])[:-1]])
    return np.concatenate(rows), starts


def _pmf(prior: RatePrior, f: np.ndarray, s: np.ndarray, m: int) -> np.ndarray:
    """P(K = k | segment) for k = 0..m, K the failures among m more runs: (m + 1, segments).

    Beta-binomial by the ratio of successive terms (no Beta function per term), mixed with the
    point mass at 0 when the prior has one."""
    a, b = prior.a + f, prior.b + s
    k = np.arange(m)[:, None]
    pmf = np.empty((m + 1, len(f)))
    pmf[0] = 1.0
    np.multiply((m - k) / (k + 1), a + k, out=pmf[1:])
    pmf[1:] /= b + m - k - 1  # the ratios, written in place
    for row in range(
        1, m + 1
    ):  # their running product, row by row: twice np.cumprod's speed along axis 0
        pmf[row] *= pmf[row - 1]
    pmf *= np.exp(betaln(a, b + m) - betaln(a, b))
    if prior.zero == 0.0:
        return pmf
    with np.errstate(divide="ignore"):
        spike = np.exp(
            np.log(prior.zero) + np.where(f == 0, 0.0, -np.inf) - prior.log_marginal(f, s)
        )
    pmf *= 1.0 - spike
    pmf[0] += spike
    return pmf
