"""Is the confidence that commit bisection prints calibrated? Two tables, by simulation.

Every search drives the real `CommitStrategy` (one probe at a time, as `search()` in
benchmarks/bisection.py does) against a simulated flaky test: a run at or after the culprit
fails with probability p, a run before it (and at the good end) with probability q. The
culprit is uniform among N = 64 candidates. Modes are those of benchmarks/bisection.py:
"given" tells the strategy p and q, "learned p" only q, "learned p, q" neither (a learned
p starts with `BAD_END_TRIALS` runs at the bad end, counted in the trials); "stored N": q only,
p from N runs stored at the bad end (not counted).

1. Accuracy across failure rates. Confidence 0.95, a generous budget (max_trials 10000),
   S searches per (p, q, mode). "found" is the share of searches that stopped because one commit reached
   the confidence; "accuracy" is the share of those whose reported culprit is the true one,
   with its Wilson 95% interval; "mean reported" is the mean posterior those searches
   printed (at least 0.95, so a calibrated row has accuracy near it, not below 0.95).
   With given rates the model is exact and accuracy should be >= 0.95 in every row. With
   learned rates the posterior is calibrated on average over the rate priors
   (`LEARNED_P_BAD`, `LEARNED_P_GOOD`), not at every fixed (p, q): rows flagged "below"
   have a Wilson interval wholly under 0.95, i.e. a shortfall beyond sampling error. Rows
   whose estimated cost is too high get fewer searches (said under the table).

2. Reliability of budget-stopped answers. N = 64, p = 0.15, q = 0, each search with a
   budget drawn uniformly from 10..80 trials, so it usually stops before the confidence
   and reports its most probable commit with that commit's posterior. Only the searches
   that stopped on the budget are binned by the reported probability; per bin: count, mean
   reported probability, share right, Wilson interval ("all": the mode's every
   budget-stopped search). "learned p, q, rates ~ prior" draws
   each search's true p and q from `LEARNED_P_BAD` and `LEARNED_P_GOOD`, the priors the
   strategy assumes: there a Bayesian posterior must be calibrated (share right
   ~ mean reported in every bin, up to sampling error), whatever the stopping rule.

Deterministic given --seed (each search has its own seed derived from it, whatever
--workers is).

    .venv/bin/python benchmarks/bisection_calibration.py [--searches 100] [--budget-searches 3000]
        [--workers 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bisection import BAD_END_TRIALS, CONFIDENCE, MODES, fano_floor, settings_for, simulate  # noqa: E402
from heisenbisect.decide.commits import Settings, State  # noqa: E402
from heisenbisect.decide.posterior import LEARNED_P_BAD, LEARNED_P_GOOD  # noqa: E402

N = 64
RATES_BAD = (0.05, 0.15, 0.3)
RATES_GOOD = (0.0, 0.01, 0.03)
MAX_TRIALS = 10_000  # generous: only p = 0.05, q = 0.03 with learned rates comes near it
# a row whose estimated cost (searches x expected trials) exceeds this gets fewer searches
ROW_TRIAL_CAP = 400_000
MIN_SEARCHES = 30
# expected trials ~ this times the Fano floor (measured at N = 64: mean/floor is at most
# about 1.2 given, 2.2 learned p, 3.4 learned p, q, the worst at p = 0.05, q = 0.03)
COST_FACTOR = {"given": 1.5, "learned p": 2.5, "learned p, q": 3.5, "stored 40": 1.6, "stored 160": 1.4}

BUDGET_P, BUDGET_Q = 0.15, 0.0
BUDGET_RANGE = (10, 80)  # max_trials drawn uniformly from this range, inclusive
BUDGET_MODES = ("given", "learned p, q", "learned p, q, rates ~ prior")
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
CHUNK = 10  # searches per pool task


@dataclass(frozen=True)
class SearchOutcome:
    """One search of table 1 or 2: what the tool reported and whether it was right."""

    trials: int
    state: str
    probability: float
    right: bool


def run_search(p: float, q: float, settings: Settings, rng: np.random.Generator) -> SearchOutcome:
    """One bisection against a simulated flaky test, culprit uniform among N."""
    result, culprit = simulate(N, p, q, settings, rng)
    return SearchOutcome(result.trials, result.state.value, result.probability, result.culprit == culprit)


def prior_rates(rng: np.random.Generator) -> tuple[float, float]:
    """True (p, q) drawn from the priors the strategy assumes when it learns them."""
    p = rng.beta(LEARNED_P_BAD.a, LEARNED_P_BAD.b)
    q = 0.0 if rng.random() < LEARNED_P_GOOD.zero else rng.beta(LEARNED_P_GOOD.a, LEARNED_P_GOOD.b)
    return float(p), float(q)


def accuracy_chunk(task: tuple[int, int, float, float, str, range]) -> list[SearchOutcome]:
    """Table 1 searches ``seeds`` of one (p, q, mode) row."""
    seed, row, p, q, mode, seeds = task
    outcomes = []
    for i in seeds:
        rng = np.random.default_rng([seed, 1, row, i])
        outcomes.append(run_search(p, q, settings_for(mode, p, q, MAX_TRIALS, rng), rng))
    return outcomes


def budget_chunk(task: tuple[int, int, str, range]) -> list[SearchOutcome]:
    """Table 2 searches ``seeds`` of one mode, each with its own small budget."""
    seed, row, mode, seeds = task
    outcomes = []
    for i in seeds:
        rng = np.random.default_rng([seed, 2, row, i])
        max_trials = int(rng.integers(BUDGET_RANGE[0], BUDGET_RANGE[1] + 1))
        p, q = prior_rates(rng) if mode.endswith("~ prior") else (BUDGET_P, BUDGET_Q)
        settings = settings_for(mode, p, q, max_trials)
        outcomes.append(run_search(p, q, settings, rng))
    return outcomes


def estimated_trials(p: float, q: float, mode: str) -> float:
    """Rough trials per search, for splitting the cost: a multiple of the Fano floor."""
    endpoints = 0 if mode == "given" or mode.startswith("stored") else BAD_END_TRIALS
    return min(MAX_TRIALS, COST_FACTOR[mode] * fano_floor(N, p, q) + endpoints)


def planned_searches(p: float, q: float, mode: str, searches: int, cap: int = ROW_TRIAL_CAP) -> int:
    """Searches for a row: ``searches``, fewer where that would cost over ``cap`` trials."""
    affordable = int(cap // estimated_trials(p, q, mode))
    return max(min(searches, affordable), min(searches, MIN_SEARCHES))


def chunks(count: int) -> list[range]:
    """Seed ranges of at most CHUNK searches covering 0..count-1."""
    return [range(start, min(start + CHUNK, count)) for start in range(0, count, CHUNK)]


def wilson(right: int, total: int) -> tuple[float, float]:
    """Wilson 95% interval of a binomial share (scipy)."""
    ci = binomtest(right, total).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def run_pool(func: Callable[[Any], list[SearchOutcome]], tasks: list, workers: int) -> list[list[SearchOutcome]]:
    """``func`` over ``tasks`` in a process pool, results in task order."""
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(func, tasks))


def markdown(header: tuple[str, ...], rows: list[tuple]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def accuracy_table(
    searches: int,
    workers: int,
    seed: int,
    modes: tuple[str, ...] = MODES,
    rates_bad: tuple[float, ...] = RATES_BAD,
    rates_good: tuple[float, ...] = RATES_GOOD,
    cap: int = ROW_TRIAL_CAP,
) -> str:
    """Table 1: accuracy of confident answers across (p, q) and modes."""
    rows = [(p, q, mode) for p in rates_bad for q in rates_good for mode in modes]
    counts = [planned_searches(p, q, mode, searches, cap) for p, q, mode in rows]
    tasks = [(seed, r, p, q, mode, seeds) for r, ((p, q, mode), count) in enumerate(zip(rows, counts))
             for seeds in chunks(count)]
    # costliest first, so the pool does not end on one long chunk
    order = sorted(range(len(tasks)), key=lambda t: -estimated_trials(*tasks[t][2:5]))
    done = run_pool(accuracy_chunk, [tasks[t] for t in order], workers)
    outcomes: list[list[SearchOutcome]] = [[] for _ in rows]
    for t, result in sorted(zip(order, done)):
        outcomes[tasks[t][1]] += result
    cells = [accuracy_row(p, q, mode, outcomes[r]) for r, (p, q, mode) in enumerate(rows)]
    header = ("p", "q", "mode", "searches", "mean trials", "found", "mean reported", "accuracy",
              "95% CI", "")
    notes = [f"(p, q, mode) = ({p}, {q}, {mode}): {count} searches, not {searches} (cost cap)"
             for (p, q, mode), count in zip(rows, counts) if count < searches]
    text = markdown(header, cells)
    if notes:
        text += "\n\n" + "\n".join(notes)
    return text


def accuracy_row(p: float, q: float, mode: str, outcomes: list[SearchOutcome]) -> tuple:
    """One row of table 1."""
    found = [o for o in outcomes if o.state == State.FOUND.value]
    right = sum(o.right for o in found)
    trials = np.mean([o.trials for o in outcomes])
    if not found:
        return (p, q, mode, len(outcomes), f"{trials:.0f}", "0.00", "-", "-", "-", "")
    low, high = wilson(right, len(found))
    reported = np.mean([o.probability for o in found])
    flag = "below" if high < CONFIDENCE else ""
    return (p, q, mode, len(outcomes), f"{trials:.0f}", f"{len(found) / len(outcomes):.2f}",
            f"{reported:.3f}", f"{right / len(found):.3f}", f"{low:.3f}-{high:.3f}", flag)


def budget_table(searches: int, workers: int, seed: int) -> str:
    """Table 2: reliability of the probability reported when the budget stops a search."""
    tasks = [(seed, r, mode, seeds) for r, mode in enumerate(BUDGET_MODES) for seeds in chunks(searches)]
    done = run_pool(budget_chunk, tasks, workers)
    outcomes: list[list[SearchOutcome]] = [[] for _ in BUDGET_MODES]
    for task, result in zip(tasks, done):
        outcomes[task[1]] += result
    cells: list[tuple] = []
    notes: list[str] = []
    for mode, results in zip(BUDGET_MODES, outcomes):
        stopped = [o for o in results if o.state == State.BUDGET.value]
        notes.append(f"{mode}: {len(stopped)} of {len(results)} searches stopped on the budget "
                     f"(the others reached {CONFIDENCE} and are left out)")
        cells += budget_rows(mode, stopped)
        cells.append(bin_row(mode, "all", stopped))
    header = ("mode", "reported", "count", "mean reported", "share right", "95% CI", "")
    return markdown(header, cells) + "\n\n" + "\n".join(notes)


def budget_rows(mode: str, stopped: list[SearchOutcome]) -> list[tuple]:
    """Table 2 rows of one mode, one per probability bin."""
    probability = np.array([o.probability for o in stopped])
    bins = np.clip(np.digitize(probability, BINS) - 1, 0, len(BINS) - 2)
    return [bin_row(mode, f"{BINS[b]:.1f}-{BINS[b + 1]:.1f}", [o for o, i in zip(stopped, bins) if i == b])
            for b in range(len(BINS) - 1)]


def bin_row(mode: str, label: str, members: list[SearchOutcome]) -> tuple:
    """One row of table 2: the searches ``members`` whose reported probability fell in a bin."""
    if not members:
        return (mode, label, 0, "-", "-", "-", "")
    mean = float(np.mean([o.probability for o in members]))
    right = sum(o.right for o in members)
    low, high = wilson(right, len(members))
    flag = "over-confident" if high < mean else "under-confident" if low > mean else ""
    return (mode, label, len(members), f"{mean:.3f}", f"{right / len(members):.3f}", f"{low:.3f}-{high:.3f}", flag)


def main() -> None:
    """Parse the arguments, print both tables and the wall time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=100, help="per row of table 1")
    parser.add_argument("--budget-searches", type=int, default=3000, help="per mode of table 2")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="table 1's modes")
    parser.add_argument("--rates-bad", nargs="+", type=float, default=list(RATES_BAD), help="table 1's p values")
    parser.add_argument("--rates-good", nargs="+", type=float, default=list(RATES_GOOD), help="table 1's q values")
    parser.add_argument("--row-trial-cap", type=int, default=ROW_TRIAL_CAP,
                        help="fewer searches in a row whose estimated trials exceed this")
    parser.add_argument("--skip-budget-table", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    print(f"## 1. Accuracy across failure rates (N = {N}, confidence {CONFIDENCE}, max_trials "
          f"{MAX_TRIALS}, bad_end_trials {BAD_END_TRIALS}, seed {args.seed})\n")
    print("accuracy = share right among searches that reached the confidence (state found); "
          "\"below\": its Wilson 95% interval lies wholly under 0.95 (a row truly at 0.95 "
          "gets the flag 2.5% of the time)\n")
    print(accuracy_table(args.searches, args.workers, args.seed, tuple(args.modes), tuple(args.rates_bad),
                         tuple(args.rates_good), args.row_trial_cap))
    if args.skip_budget_table:
        print(f"\n{time.monotonic() - started:.0f} s wall time with {args.workers} workers")
        return
    print(f"\n## 2. Reliability of budget-stopped answers (N = {N}, p = {BUDGET_P}, q = {BUDGET_Q}, "
          f"max_trials uniform in {BUDGET_RANGE[0]}..{BUDGET_RANGE[1]}, seed {args.seed})\n")
    print("\"over-confident\" / \"under-confident\": the Wilson 95% interval of the share right "
          "lies wholly under / over the mean reported probability (each interval is 95%: among ~18 rows "
          "one flag is expected by chance); \"all\": every budget-stopped search of the mode\n")
    print(budget_table(args.budget_searches, args.workers, args.seed))
    print(f"\n{time.monotonic() - started:.0f} s wall time with {args.workers} workers")


if __name__ == "__main__":
    main()
