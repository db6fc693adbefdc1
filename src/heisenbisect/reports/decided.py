"""The statistic that decided each verdict, in the measure that decided it, for the report's table.

A verdict rests on one of two measures (`decide.sequential`): ``eliminates`` on the exact zero
bound of the share of runs that failed; ``reduces``, ``increases`` and ``no_effect`` on the mean
failure fraction per run, compared with the baseline's at the look that decided. A reader shown
only the share of failed runs (60.6% vs 65.0%, overlapping intervals) cannot see why "increases"
holds when the fractions went from 10.9% to 21.1%: the cell shows the numbers that decided it.

Reports read, they do not decide: these intervals restate the tests at the deciding look
(the first n runs of each side, n the largest look at or before the decision). The difference's
interval is Welch's (scipy; its coverage: benchmarks/results/decided-intervals.md); the no_effect
ratio's bounds invert the two one-sided Welch tests of `stats.not_reduced_pvalue` at the look's
level, so they lie inside the margin exactly when the equivalence test claimed it
(tests/reports/test_decided_statistic.py checks by brute force). No confidence is printed for
them: at 20 runs they covered 95.5% against a nominal 97.5% (the same page); the claim they
show is the equivalence test's, whose error rate benchmarks/screening.py measures.
"""

from __future__ import annotations

import numpy as np

from heisenbisect.decide.screening import ArmResult, ScreeningSettings
from heisenbisect.decide.stats import not_reduced_pvalue
from heisenbisect.records import Verdict
from heisenbisect.reports.text import percent

FRACTION = "mean failure fraction per run"
RUN_RATE = "share of runs that failed"
DECIDED_BY_FRACTION = (Verdict.REDUCES, Verdict.INCREASES, Verdict.NO_EFFECT)


def measure_of(verdict: Verdict) -> str | None:
    """Which measure decided the verdict; None for a verdict no test decided."""
    if verdict is Verdict.ELIMINATES:
        return RUN_RATE
    return FRACTION if verdict in DECIDED_BY_FRACTION else None


def deciding_look(settings: ScreeningSettings, decided_at: int | None) -> tuple[int, float] | None:
    """(runs per side, share of alpha) of the last look at or before ``decided_at`` runs."""
    schedule = settings.schedule
    looks = [
        (n, w)
        for n, w in zip(schedule.sizes, schedule.weights)
        if decided_at is not None and n <= decided_at
    ]
    return looks[-1] if looks else None


def difference_interval(
    arm: np.ndarray, base: np.ndarray, confidence: float
) -> tuple[float, float, float]:
    """Mean difference (arm - base) and its two-sided Welch interval; NaN bounds without spread."""
    from scipy import (
        stats as scipy_stats,
    )  # here, not at the top: a run imports this module before its first trial

    difference = float(np.mean(arm) - np.mean(base))
    if len(arm) < 2 or len(base) < 2 or (np.ptp(arm) == 0 and np.ptp(base) == 0):
        return difference, float("nan"), float("nan")
    ci = scipy_stats.ttest_ind(arm, base, equal_var=False).confidence_interval(confidence)
    return difference, float(ci.low), float(ci.high)


def _largest_rejected(x: np.ndarray, y: np.ndarray, level: float) -> float:
    """sup { r >= 0 : "mean(x) <= r mean(y)" is rejected at ``level`` } (0 when none is)."""
    from scipy import (
        optimize,
    )  # here, not at the top: a run imports this module before its first trial

    def excess(r: float) -> float:
        return not_reduced_pvalue(x, y, r) - level

    if excess(0.0) > 0:
        return 0.0
    high = max(1.0, 2 * float(np.mean(x)) / max(float(np.mean(y)), 1e-12))
    for _ in range(60):
        if excess(high) > 0:
            return float(optimize.brentq(excess, 0.0, high, xtol=1e-6))
        high *= 2
    return float("inf")


def ratio_bounds(arm: np.ndarray, base: np.ndarray, level: float) -> tuple[float, float]:
    """One-sided bounds at ``level`` each on mean(arm) / mean(base), from the equivalence test's
    two Welch tests: its (1 - 2 level) interval, inside [1 - r, 1 / (1 - r)] iff equivalence holds."""
    low = _largest_rejected(arm, base, level)
    flipped = _largest_rejected(base, arm, level)
    return low, (1 / flipped if flipped > 0 else float("inf"))


def cell(arm: ArmResult, baseline: ArmResult, settings: ScreeningSettings) -> str:
    """The decided-statistic cell of one arm's row ("-" for a verdict no test decided)."""
    conf = settings.confidence
    if arm.verdict is Verdict.ELIMINATES:
        return (
            f"zero bound: {RUN_RATE} below {percent(arm.zero_bound)} (one-sided {conf:.0%}, {arm.failed_runs} of "
            f"{arm.runs} failed), under zero_rate {percent(settings.zero_rate)}"
        )
    look = deciding_look(settings, arm.decided_at)
    if arm.verdict not in DECIDED_BY_FRACTION or look is None or not baseline.fractions:
        return "-"
    n, weight = look
    arm_y, base_y = np.asarray(arm.fractions[:n]), np.asarray(baseline.fractions[:n])
    if arm.verdict is Verdict.NO_EFFECT:
        level = settings.alpha * weight
        low, high = ratio_bounds(arm_y, base_y, level)
        margin = 1 - settings.min_reduction
        return (
            f"{FRACTION}, arm / baseline: {np.mean(arm_y) / np.mean(base_y):.2f}, equivalence interval "
            f"[{low:.2f}, {high:.2f}] inside [{margin:.2f}, {1 / margin:.2f}] at {n} runs"
        )
    difference, low, high = difference_interval(arm_y, base_y, conf)
    spread = "" if np.isnan(low) else f" [{conf:.0%} CI {_points(low)}, {_points(high)}]"
    return (
        f"{FRACTION} {percent(float(np.mean(base_y)))} -> {percent(float(np.mean(arm_y)))}: "
        f"{_points(difference)} points{spread} at {n} runs"
    )


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def group_cell(arm: ArmResult, baseline: ArmResult, settings: ScreeningSettings) -> str:
    """A group screening claim's cell: its arm is compared with the baseline runs interleaved
    with it, which the result does not keep, so the cell names the measure and both sides' means
    (the zero bound in full); the p column holds the test's verdict."""
    if arm.verdict is Verdict.ELIMINATES:
        return cell(arm, baseline, settings)
    if arm.verdict not in DECIDED_BY_FRACTION:
        return "-"
    return f"{FRACTION}: {percent(arm.rate)} against the baseline's {percent(baseline.rate)} over all its runs"
