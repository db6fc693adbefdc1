"""Statistical tests behind the verdicts, thin wrappers over scipy.

The unit of evidence is the run (one trial): sessions inside a run share a batch and
are not independent, so every test here takes one number per run (its failure
fraction, or whether it failed at all) and never pools sessions across runs.
"""

from __future__ import annotations

import math

import numpy as np

# scipy loads where used: importing scipy.special or scipy.stats costs a second or more on a
# loaded machine, before a run's first trial (benchmarks/cli_startup.py --first-trial)

# below this many runs in both groups together, p-values come from the permutation
# distribution itself; above it, from the pooled t approximation to that distribution
EXACT_PERMUTATION_MAX_RUNS = 240
PERMUTATION_RESAMPLES = 9999


def clopper_pearson_upper(failures: int, trials: int, confidence: float) -> float:
    """One-sided exact upper bound on a binomial rate (Clopper-Pearson).

    The beta quantile is the bound in closed form (what binomtest's "exact" interval finds by root
    search, twenty times slower: group screening takes this bound at every look and in every report).
    """
    if trials == 0 or failures >= trials:
        return 1.0
    from scipy import stats

    return float(stats.beta.ppf(confidence, failures + 1, trials - failures))


def clopper_pearson_interval(failures: int, trials: int, confidence: float) -> tuple[float, float]:
    """Two-sided exact interval on a binomial rate (beta quantiles, as clopper_pearson_upper)."""
    if trials == 0:
        return (0.0, 1.0)
    from scipy import stats

    tail = (1.0 - confidence) / 2
    low = 0.0 if failures == 0 else float(stats.beta.ppf(tail, failures, trials - failures + 1))
    high = (
        1.0
        if failures >= trials
        else float(stats.beta.ppf(1 - tail, failures + 1, trials - failures))
    )
    return low, high


def newcombe_difference_interval(
    x1: int, n1: int, x2: int, n2: int, confidence: float
) -> tuple[float, float]:
    """Interval on the difference of two binomial rates, x1/n1 - x2/n2 (Newcombe's hybrid method).

    Newcombe combines each rate's own interval; with exact Clopper-Pearson intervals in place of
    his Wilson ones each tail stays near (1 - confidence) / 2 at the small counts a skip share
    has: at most 5.2% for 5% on the grid tests/decide/test_stats.py enumerates, where the Wilson
    version (statsmodels' ``newcomb``) reaches 7.6%.
    """
    if n1 == 0 or n2 == 0:
        return (-1.0, 1.0)
    p1, p2 = x1 / n1, x2 / n2
    low1, high1 = clopper_pearson_interval(x1, n1, confidence)
    low2, high2 = clopper_pearson_interval(x2, n2, confidence)
    difference = p1 - p2
    return (
        difference - math.hypot(p1 - low1, high2 - p2),
        difference + math.hypot(high1 - p1, p2 - low2),
    )


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
    return pooled_t_pvalue(arm, baseline)


def pooled_t_pvalue(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided pooled-variance t test, the value of ``scipy.stats.ttest_ind(x, y).pvalue``.

    Written out (tests/decide/test_stats.py checks it against scipy) because scipy's wrapper costs
    milliseconds a call, and a simulated study takes hundreds of looks.
    """
    nx, ny = len(x), len(y)
    df = nx + ny - 2
    if df < 1:
        return 1.0
    pooled = (np.var(x, ddof=1) * (nx - 1) if nx > 1 else 0.0) + (
        np.var(y, ddof=1) * (ny - 1) if ny > 1 else 0.0
    )
    return _t_tail(
        float(np.mean(x) - np.mean(y)),
        float(np.sqrt(pooled / df * (1 / nx + 1 / ny))),
        df,
        two_sided=True,
    )


def welch_greater_pvalue(x: np.ndarray, y: np.ndarray) -> float:
    """One-sided Welch test of mean(x) > mean(y), the value of
    ``scipy.stats.ttest_ind(x, y, equal_var=False, alternative="greater").pvalue`` (written out, as above)."""
    vx, vy = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    se2 = float(vx + vy)
    if se2 == 0.0:
        return _t_tail(float(np.mean(x) - np.mean(y)), 0.0, 1.0, two_sided=False)
    df = se2**2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    return _t_tail(float(np.mean(x) - np.mean(y)), float(np.sqrt(se2)), float(df), two_sided=False)


def _t_tail(difference: float, se: float, df: float, two_sided: bool) -> float:
    if se == 0.0:
        if difference == 0.0:
            return 1.0
        return 0.0 if two_sided or difference > 0 else 1.0
    from scipy import special

    t = difference / se
    if two_sided:
        return float(min(1.0, 2.0 * special.stdtr(df, -abs(t))))
    return float(special.stdtr(df, -t))


def _permutation_pvalue(arm: np.ndarray, baseline: np.ndarray, resamples: int, seed: int) -> float:
    from scipy import stats

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
    return welch_greater_pvalue(arm, scaled)


def holm_adjust(pvalues: list[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error under any dependence).

    The same numbers as statsmodels' ``multipletests(method="holm")`` (tests/decide/test_stats.py
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
