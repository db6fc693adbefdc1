"""What `bisect commits`' range check and culprit verification cost, in runs, by simulation.

Over the cells of benchmarks/bisection.py (p = 0.15; N in --sizes; q in --rates-good; rates
given, p learned, or both learned), each search runs the real `CommitStrategy` one probe at a
time (`bisection.simulate`), then the real rules of issue 35 on simulated runs:

- the range check (`decide.range_check.check_range`): interleaved rounds at the two ends (the
  bad end alone when q is given) until it decides or reaches ``end_runs``; counted here on
  their own, although `bisect commits` hands those runs to the search as well (so the search's
  own count below is an upper bound of the total);
- verification (`decide.verify.judge`) of the search's culprit, whether right or wrong, with
  the rates the search settled on (given, or its posterior means): fresh rounds at the culprit,
  its predecessor and the bad end with the culprit reverted, each run failing at its true rate
  (the revert fails at q when the culprit is right, at p otherwise).

    .venv/bin/python benchmarks/verification.py [--searches 100] [--sizes 64 256 1024] [--workers 2]

Columns: search trials (median), range-check runs (median), verification runs with the revert
and without it (median, and the 90th percentile with it), how often a right culprit was
verified, and how often a wrong one was (those the search got wrong; the test's alpha is 0.05).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from bisection import CONFIDENCE, P_BAD, RATES_GOOD, SIZES, settings_for, simulate
from heisenbisect.decide.range_check import RangeSettings, check_range
from heisenbisect.decide.verify import VerifySettings, VerifyState, judge

MODES = ("given", "learned p", "learned p, q")
ROUNDS = 150  # commits.verify_rounds' default


def one(task: tuple[int, float, str, int]) -> tuple[int, int, int, int, bool, bool]:
    """(search trials, check runs, verification runs with revert, without, verified, right)."""
    n, q, mode, seed = task
    rng = np.random.default_rng(seed)
    settings = settings_for(mode, P_BAD, q, 5000, rng)
    result, culprit = simulate(n, P_BAD, q, settings, rng)
    check = check_range(
        list(rng.random(30) < P_BAD),
        list(rng.random(30) < q),
        RangeSettings(settings.p_bad, settings.p_good, CONFIDENCE),
    )
    check_runs = check.failing[0] + check.passing[0]
    found = result.culprit
    rate = lambda position: P_BAD if position >= culprit else q  # noqa: E731
    verify = VerifySettings(
        p_bad=settings.p_bad if settings.p_bad is not None else result.mean_p_bad,
        p_good=settings.p_good if settings.p_good is not None else result.mean_p_good,
        confidence=CONFIDENCE,
        max_rounds=ROUNDS,
    )
    sides = [rng.random(ROUNDS + 5) < r for r in (rate(found), rate(found - 1))]
    revert = rng.random(ROUNDS + 5) < (q if found == culprit else P_BAD)
    with_revert = judge(list(sides[0]), list(sides[1]), verify, list(revert))
    without = judge(list(sides[0]), list(sides[1]), verify)
    spent = 3 * with_revert.rounds
    return (
        result.trials,
        check_runs,
        spent,
        2 * without.rounds,
        with_revert.state is VerifyState.VERIFIED,
        found == culprit,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=100, help="searches per cell")
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--rates-good", nargs="+", type=float, default=list(RATES_GOOD))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.time()
    print(f"p = {P_BAD}, confidence {CONFIDENCE}, {args.searches} searches a cell, "
          f"verify_rounds {ROUNDS}, end_runs 30\n")
    print("| N | q | rates | search trials | check runs | verify runs (revert) | p90 | "
          "verify runs (no revert) | right verified | wrong verified |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    every: list[tuple[int, int, int, int, bool, bool]] = []
    with ProcessPoolExecutor(args.workers) as pool:
        for n in args.sizes:
            for q in args.rates_good:
                for mode in args.modes:
                    tasks = [(n, q, mode, 1000 * n + s) for s in range(args.searches)]
                    rows = list(pool.map(one, tasks, chunksize=4))
                    every += rows
                    print(_row(f"{n} | {q:g} | {mode}", rows), flush=True)
    print(_row("all | | ", every))
    print(f"\nwall time {time.time() - started:.0f} s")


def _row(head: str, rows: list[tuple[int, int, int, int, bool, bool]]) -> str:
    trials, check, spent, bare, verified, right = (np.array(c) for c in zip(*rows, strict=True))
    wrong = ~right
    wrong_text = f"{int((verified & wrong).sum())} of {int(wrong.sum())}"
    return (
        f"| {head} | {np.median(trials):.0f} | {np.median(check):.0f} | "
        f"{np.median(spent):.0f} | {np.percentile(spent, 90):.0f} | {np.median(bare):.0f} | "
        f"{(verified & right).sum() / max(right.sum(), 1):.3f} | {wrong_text} |"
    )


if __name__ == "__main__":
    main()
