"""Commits whose skips may be the failure: a bisection does not read their clean runs as good.

A skipped run (a could-not-run traceback, exit 125) leaves the statistics. When the failure
under study is itself such a traceback at some commits (a lazily imported module that is
sometimes missing, a temp-file race raising FileNotFoundError, a check added in one commit and
removed later that raises where the corruption used to be silent), those commits skip where they
would fail, and their clean runs read them as good: the culprit moves to the first commit where
the failure shows again, at full confidence (in 199 of 200 simulated studies before this rule).

So each commit with no failed run is read against the commits whose failures do show (the bad
end always among them): are its skips their skip share s (benign), or s plus its failures
hidden, s + p (1 - s)? Wald's sequential probability ratio test between the two binomials, on
its skips and attempts, says *hiding* (untestable; its runs leave the evidence), *benign*, or not
yet; the ratio is recomputed from the counts at each look, since both rates are re-read as the
failing commits run (`decide.sprt` keeps fixed ones). p is the failing commits' rate at its
lower ``1 - confidence`` bound, as the posterior's own hold reads it
(`CommitStrategy._holds_at_a_low_p`): a p that came out high would make a few clean
runs look like proof. The bisection may not name a culprit while the commit just before it is
not yet read: its probes go there, and to a failing commit, so that both shares are known. A
range of hiding commits then ends as a set the report names ("untestable commits keep them
apart") rather than a culprit past them. Where no run skipped, nothing is held: the posterior's
own likelihood of clean runs is then the truth's. `benchmarks/commit_skips_calibration.py`
measures both sides. Pure: counts in, masks out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from heisenbisect.decide import stats

# Each reading's error, as a share of the bisection's own (1 - confidence): a benign commit read
# as hiding costs precision (a wider set), a hiding one read as benign a culprit named past it.
FALSE_FLAG = 1.0
MISSED = 0.25


def failing(failures: np.ndarray) -> np.ndarray:
    """The candidates a skip share is read against: those whose failures show, and the last
    candidate, the known-bad end, always."""
    showing = failures > 0
    showing[-1] = True
    return showing


@dataclass(frozen=True)
class SkipReading:
    """Per candidate: its skips read as hidden failures, or not yet read either way."""

    hiding: np.ndarray  # bool
    unread: np.ndarray  # bool


def read_skips(
    trials: np.ndarray, failures: np.ndarray, skips: np.ndarray, confidence: float
) -> SkipReading:
    """Read each candidate without a failed run (its clean runs ``trials``, ``skips`` skipped);
    the last candidate is the known-bad end."""
    n = len(trials)
    hiding, unread = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    showing = failing(failures)
    if skips.sum() == 0 or trials[showing].sum() == 0:
        return SkipReading(hiding, unread)  # nothing skipped, or nothing to compare with yet
    ref_runs, ref_skips = int(trials[showing].sum()), int(skips[showing].sum())
    ref_failed = int(failures[showing].sum())
    p_low = stats.clopper_pearson_interval(ref_failed, ref_runs, 1.0 - 2.0 * (1.0 - confidence))[0]
    benign = (ref_skips + 0.5) / (ref_runs + ref_skips + 1.0)
    hidden = benign + (1.0 - benign) * p_low
    flag, miss = FALSE_FLAG * (1.0 - confidence), MISSED * (1.0 - confidence)
    upper, lower = np.log((1.0 - miss) / flag), np.log(miss / (1.0 - flag))
    judged = np.flatnonzero(~showing)
    attempts = trials[judged] + skips[judged]
    ratio = binom.logpmf(skips[judged], attempts, hidden) - binom.logpmf(
        skips[judged], attempts, benign
    )
    hiding[judged] = ratio >= upper
    unread[judged] = (ratio > lower) & ~hiding[judged]
    return SkipReading(hiding, unread)
