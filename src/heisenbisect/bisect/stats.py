"""Statistical tests behind the verdicts, thin wrappers over scipy.

The unit of evidence is the run (one trial): sessions inside a run share a batch and
are not independent, so every test here takes one number per run (its failure
fraction, or whether it failed at all) and never pools sessions across runs.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

# below this many runs in both groups together, p-values come from the permutation
# distribution itself; above it, from the pooled t approximation to that distribution
EXACT_PERMUTATION_MAX_RUNS = 240
PERMUTATION_RESAMPLES = 9999


def clopper_pearson_upper(failures: int, trials: int, confidence: float) -> float:
    """One-sided exact upper bound on a binomial rate (Clopper-Pearson)."""
    if trials == 0:
        return 1.0
    ci = stats.binomtest(failures, trials).proportion_ci(confidence_level=2 * confidence - 1, method="exact")
    return float(ci.high)


def clopper_pearson_interval(failures: int, trials: int, confidence: float) -> tuple[float, float]:
    """Two-sided exact interval on a binomial rate."""
    if trials == 0:
        return (0.0, 1.0)
    ci = stats.binomtest(failures, trials).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def difference_pvalue(arm: np.ndarray, baseline: np.ndarray, seed: int = 0) -> float:
    """Two-sided p-value that the mean per-run failure fraction differs between the groups.

    Runs are exchangeable under the null whatever the correlation inside a run, so the
    permutation test is exact; for large samples its pooled-variance t approximation is used.
    """
    if len(arm) == 0 or len(baseline) == 0:
        return 1.0
    pooled = np.concatenate([arm, baseline])
    if np.ptp(pooled) == 0:
        return 1.0
    if len(pooled) <= EXACT_PERMUTATION_MAX_RUNS:
        p = _permutation_pvalue(arm, baseline, PERMUTATION_RESAMPLES, seed)
        if p < 20 / PERMUTATION_RESAMPLES:
            # small p-values decide verdicts: resolve them with more resamples
            p = _permutation_pvalue(arm, baseline, 5 * PERMUTATION_RESAMPLES, seed)
        return p
    return float(stats.ttest_ind(arm, baseline, equal_var=True).pvalue)


def _permutation_pvalue(arm: np.ndarray, baseline: np.ndarray, resamples: int, seed: int) -> float:
    result = stats.permutation_test(
        (arm, baseline),
        _mean_difference,
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def not_reduced_pvalue(arm: np.ndarray, baseline: np.ndarray, ratio: float) -> float:
    """One-sided p-value against "the arm's rate is at most ``ratio`` x the baseline's".

    Small p means the arm keeps more than ``ratio`` of the failure rate: no useful effect.
    A Welch test of mean(arm) - ratio * mean(baseline) > 0.
    """
    if len(arm) < 2 or len(baseline) < 2:
        return 1.0
    scaled = ratio * baseline
    if np.ptp(arm) == 0 and np.ptp(scaled) == 0:
        return 0.0 if arm[0] > scaled[0] else 1.0
    with warnings.catch_warnings():
        # a group of identical nonzero fractions (every run failed 3 of 8 sessions) has variance
        # exactly 0, which Welch's test handles; scipy still warns of "catastrophic cancellation"
        warnings.filterwarnings("ignore", "Precision loss occurred in moment calculation", RuntimeWarning)
        return float(stats.ttest_ind(arm, scaled, equal_var=False, alternative="greater").pvalue)


def holm_adjust(pvalues: list[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error under any dependence).

    The same numbers as statsmodels' ``multipletests(method="holm")`` (tests/test_stats.py
    checks they agree), computed here because that call runs a full garbage collection each
    time: a study re-adjusts after every look, and in a process holding a Ray client that
    collection costs tenths of a second.
    """
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p, kind="stable")
    steps = (len(p) - np.arange(len(p))) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate(steps), 1.0)
    return [float(v) for v in adjusted]
