"""Coverage of the intervals the screening report prints beside its verdicts (`reports.decided`).

The "decided by" column shows, for `reduces` / `increases`, the difference of the mean failure
fraction per run (arm - baseline) with a 95% Welch interval; rates.png shows each config's mean
failure fraction with a 95% t interval, and a `no_effect` row the ratio of the arm's mean to the
baseline's with the equivalence test's (1 - 2a) interval (a: the look's level, 0.0125 below, the
97.5% interval). All are printed confidences, so here is how often they
cover the true value when runs fail as races do: a run fails with probability q, and then s of
its S sessions fail, s ~ Binomial(S, p) (zero-inflated, skewed: the t intervals' worst case).
The n are the looks' run counts (first_look 10, 20, 40, ...).

    python benchmarks/decided_intervals.py [--reps 4000] [--seed 1]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

SESSIONS = 20
# (q, p) of the baseline and of the arm: a decoy, a doubling, a suppression, rare failures
SCENARIOS = (
    ("decoy, common", (0.6, 0.1), (0.6, 0.1)),
    ("increases 2x", (0.6, 0.1), (0.65, 0.2)),
    ("reduces 4x", (0.5, 0.2), (0.25, 0.1)),
    ("rare, 5% of runs", (0.05, 0.3), (0.05, 0.3)),
)
RUNS = (10, 20, 40, 80, 160)
RATIO_LEVEL = 0.0125


def draw(rng: np.random.Generator, q: float, p: float, shape: tuple[int, int]) -> np.ndarray:
    fails = rng.random(shape) < q
    return fails * rng.binomial(SESSIONS, p, shape) / SESSIONS


def welch_coverage(
    rng: np.random.Generator, base: tuple[float, float], arm: tuple[float, float], n: int, reps: int
) -> float:
    """Share of the 95% Welch intervals of mean(arm) - mean(base) that hold the true difference
    (an interval without spread, all runs equal, counts as a miss unless it is exactly right)."""
    truth = arm[0] * arm[1] - base[0] * base[1]
    x, y = draw(rng, *arm, (reps, n)), draw(rng, *base, (reps, n))
    vx, vy = x.var(axis=1, ddof=1) / n, y.var(axis=1, ddof=1) / n
    se = np.sqrt(vx + vy)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (vx + vy) ** 2 / (vx**2 / (n - 1) + vy**2 / (n - 1))
        half = stats.t.ppf(0.975, np.where(se > 0, df, 1.0)) * se
    difference = x.mean(axis=1) - y.mean(axis=1)
    return float(np.mean(np.abs(difference - truth) <= half))


def t_coverage(rng: np.random.Generator, config: tuple[float, float], n: int, reps: int) -> float:
    """Share of the 95% one-sample t intervals (rates.png) that hold the true mean fraction."""
    truth = config[0] * config[1]
    x = draw(rng, *config, (reps, n))
    half = stats.t.ppf(0.975, n - 1) * x.std(axis=1, ddof=1) / np.sqrt(n)
    return float(np.mean(np.abs(x.mean(axis=1) - truth) <= half))


def ratio_coverage(rng: np.random.Generator, base: tuple[float, float], arm: tuple[float, float], n: int, reps: int,
                   level: float = RATIO_LEVEL) -> float:
    """Share of the equivalence test's (1 - 2 level) ratio intervals that hold the true ratio."""
    from heisenbisect.reports.decided import ratio_bounds

    truth = arm[0] * arm[1] / (base[0] * base[1])
    hits = 0
    for _ in range(reps):
        x, y = draw(rng, *arm, (n,)), draw(rng, *base, (n,))
        if not y.any():
            continue  # no baseline failure: no ratio (the test needs five failed runs a side)
        low, high = ratio_bounds(x, y, level)
        hits += low <= truth <= high
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ratio-reps", type=int, default=400,
                        help="looks per cell for the ratio (root finding: slower)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"95% intervals, {args.reps} simulated looks per cell, {SESSIONS} sessions per run\n")
    print("| scenario | interval | " + " | ".join(f"n = {n}" for n in RUNS) + " |")
    print("|---|---|" + "---|" * len(RUNS))
    for name, base, arm in SCENARIOS:
        welch = [welch_coverage(rng, base, arm, n, args.reps) for n in RUNS]
        single = [t_coverage(rng, arm, n, args.reps) for n in RUNS]
        print(f"| {name} | Welch difference (table) | " + " | ".join(f"{c:.3f}" for c in welch) + " |")
        print(f"| {name} | t, the arm's mean (plot) | " + " | ".join(f"{c:.3f}" for c in single) + " |")
    for name, base, arm in SCENARIOS[:3]:
        ratio = [ratio_coverage(rng, base, arm, n, args.ratio_reps) for n in RUNS]
        cells = " | ".join(f"{c:.3f}" for c in ratio)
        print(f"| {name} | {1 - 2 * RATIO_LEVEL:.1%} ratio, no_effect's (table) | {cells} |")


if __name__ == "__main__":
    main()
