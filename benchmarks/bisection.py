"""Noisy commit bisection by simulation: trials needed, accuracy, the Fano floor, naive bisection.

Each search draws a culprit uniformly among N candidates and runs the real
`CommitStrategy` (one probe at a time) against a simulated flaky test: a run at or after
the culprit fails with probability p, one before it (and the good end) with probability q.
"Given" rows tell the strategy p and q; "learned p" rows only q, "learned p, q" rows
neither. A learned p starts with `BAD_END_TRIALS` runs at the bad end; a learned q gets runs
at the good end when information gain asks; all are counted. The floor is Fano's bound: a search that is right
with probability 0.95 needs at least (log2 N - h(0.05) - 0.05 log2(N - 1)) / C trials, C
the capacity of the channel a run is. Naive bisection repeats each step up to K times (a
failure ends the step: bad), K the smallest giving 95% accuracy at q = 0.

    .venv/bin/python benchmarks/bisection.py [--searches 200] [--workers 2] [--modes "stored 40" ...] [--sizes 256 ...]

"stored N" rows learn p like "learned p" (q given) but start from N runs already stored at the
bad end by an earlier study (their failures drawn at p), as `bisect commits` does when `bisect
run` or `bisect amplify` measured the bad commit first; those runs are not counted in the
trials (they were spent by the earlier study) and replace the BAD_END_TRIALS first runs.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import entr

from heisenbisect.decide.commits import CommitStrategy, Result, Settings
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

P_BAD = 0.15
SIZES = (64, 256, 1024)
RATES_GOOD = (0.0, 0.01)
CONFIDENCE = 0.95
BAD_END_TRIALS = 10


def bits(x: np.ndarray | float) -> np.ndarray:
    return (entr(x) + entr(1.0 - np.asarray(x))) / np.log(2.0)


def capacity(p: float, q: float) -> float:
    """Bits per run: max over the share a of bad probes of h(ap + (1-a)q) - a h(p) - (1-a) h(q)."""
    best = minimize_scalar(lambda a: -(bits(a * p + (1 - a) * q) - a * bits(p) - (1 - a) * bits(q)),
                           bounds=(0, 1), method="bounded")
    return float(-best.fun)


def fano_floor(n: int, p: float, q: float, error: float = 1 - CONFIDENCE) -> float:
    return float((np.log2(n) - bits(error) - error * np.log2(n - 1)) / capacity(p, q))


MODES = ("given", "learned p", "learned p, q", "stored 40", "stored 160")


def stored_runs(mode: str) -> int:
    """Runs an earlier study (`bisect run`'s baseline, `bisect amplify`) left at the bad end."""
    return int(mode.split()[1]) if mode.startswith("stored") else 0


def settings_for(mode: str, p: float, q: float, max_trials: int, rng: np.random.Generator | None = None) -> Settings:
    """What a mode tells the strategy: both rates ("given"), q only ("learned p"), or neither;
    "stored N": q only, and N runs at the bad end stored by an earlier study (their failures
    drawn from ``rng``) as evidence about p."""
    stored = stored_runs(mode)
    failed = int((rng or np.random.default_rng(0)).binomial(stored, p)) if stored else 0
    return Settings(
        p_bad=None if mode.startswith(("learned", "stored")) else p,
        p_good=None if mode.startswith("learned p, q") else q,
        confidence=CONFIDENCE,
        max_trials=max_trials,
        bad_end_trials=BAD_END_TRIALS,
        stored_bad_runs=stored,
        stored_bad_failures=failed,
    )


def simulate(
    n: int, p: float, q: float, settings: Settings, rng: np.random.Generator, strategy_class: type = CommitStrategy
) -> tuple[Result, int]:
    """One search, one probe at a time, against a flaky test with its culprit uniform among n:
    the strategy's result and the true culprit. ``strategy_class``: `CommitStrategy` or a variant
    of it (benchmarks/bisection_stored_variants.py)."""
    culprit = int(rng.integers(n))
    strategy = strategy_class([f"c{i}" for i in range(n)], "good", settings)

    def outcome(config: Config, _: int) -> Outcome:
        position = -1 if config.commit == "good" else int(config.commit[1:])
        failed = rng.random() < (p if position >= culprit else q)
        return Outcome("sim", config.key, 0, TrialStatus.OK, int(failed), 1)

    drive_in_order(strategy, outcome)
    return strategy.result(), culprit


def search(n: int, q: float, mode: str, seed: int) -> tuple[int, bool]:
    rng = np.random.default_rng(seed)
    result, culprit = simulate(n, P_BAD, q, settings_for(mode, P_BAD, q, 5000, rng), rng)
    return result.trials, result.culprit == culprit


def parallel_search(n: int, workers: int, seed: int) -> tuple[int, int, bool]:
    """Given rates, q = 0, ``workers`` probes per round, all finishing before the next:
    (trials, rounds, right)."""
    rng = np.random.default_rng(seed)
    culprit = int(rng.integers(n))
    strategy = CommitStrategy([f"c{i}" for i in range(n)], "good", Settings(p_bad=P_BAD, p_good=0.0))
    rounds = 0
    while not strategy.finished():
        batch = strategy.propose(Counter(), workers)
        if not batch:
            break
        rounds += 1
        for config in batch:
            failed = rng.random() < (P_BAD if int(config.commit[1:]) >= culprit else 0.0)
            strategy.observe(config, Outcome("sim", config.key, 0, TrialStatus.OK, int(failed), 1))
    result = strategy.result()
    return result.trials, rounds, result.culprit == culprit


def parallel_searches(task: tuple[int, int, range]) -> list[tuple[int, int, bool]]:
    n, workers, seeds = task
    return [parallel_search(n, workers, seed) for seed in seeds]


def searches(task: tuple[int, float, str, range]) -> list[tuple[int, bool]]:
    n, q, mode, seeds = task
    return [search(n, q, mode, seed) for seed in seeds]


def naive(n: int, q: float, k: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Classic bisection, vectorized over ``count`` searches; (trials, right) per search."""
    culprit = rng.integers(n, size=count)
    lo = np.full(count, -1)  # last known good
    hi = np.full(count, n - 1)  # first known bad
    trials = np.zeros(count, dtype=int)
    while np.any(hi - lo > 1):
        active = hi - lo > 1
        mid = (lo + hi) // 2
        rate = np.where(mid >= culprit, P_BAD, q)
        runs = rng.random((count, k)) < rate[:, None]
        failed = runs.any(axis=1)
        used = np.where(failed, runs.argmax(axis=1) + 1, k)
        trials += np.where(active, used, 0)
        hi = np.where(active & failed, mid, hi)
        lo = np.where(active & ~failed, mid, lo)
    return trials, hi == culprit


def tuned_k(n: int, rng: np.random.Generator) -> int:
    for k in range(1, 200):
        if naive(n, 0.0, k, 20000, rng)[1].mean() >= CONFIDENCE:
            return k
    raise RuntimeError("no K reaches the accuracy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=200, help="per row with learned rates")
    parser.add_argument("--given-searches", type=int, default=1000, help="per row with given rates (cheap)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="rows to run")
    parser.add_argument("--rates-good", nargs="+", type=float, default=list(RATES_GOOD), help="the q of the rows")
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), help="the N of the rows")
    parser.add_argument("--no-parallel-table", action="store_true", help="skip the k-probes table")
    args = parser.parse_args()
    started = time.monotonic()
    rows = [(n, q, mode) for mode in args.modes for q in args.rates_good for n in args.sizes]
    chunk = 25
    tasks = [
        (n, q, mode, range(start, min(start + chunk, count)))
        for n, q, mode in rows
        for count in [args.given_searches if mode == "given" else args.searches]
        for start in range(0, count, chunk)
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        done = list(pool.map(searches, tasks))
    outcomes: dict[tuple, list] = {row: [] for row in rows}
    for task, result in zip(tasks, done):
        outcomes[task[:3]] += result
    rng = np.random.default_rng(0)
    ks = {n: tuned_k(n, rng) for n in sorted({*SIZES, *args.sizes})}  # as in the full table, whatever rows run
    print(f"p = {P_BAD}, confidence {CONFIDENCE}; {args.given_searches} searches per 'given' row, "
          f"{args.searches} per 'learned' row; learned rows count their runs at the ends ({BAD_END_TRIALS} "
          "at the bad end first when p is learned; the good end when information gain asks)\n")
    header = ("rates", "stored at bad end (not counted)", "N", "q", "searches", "own trials: mean", "p95", "accuracy",
              "floor", "mean/floor", "naive K", "naive mean", "naive acc")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n, q, mode in rows:
        trials = np.array([t for t, _ in outcomes[(n, q, mode)]])
        right = np.array([r for _, r in outcomes[(n, q, mode)]])
        floor = fano_floor(n, P_BAD, q)
        naive_trials, naive_right = naive(n, q, ks[n], 4000, rng)
        cells = (
            "learned p" if mode.startswith("stored") else mode, stored_runs(mode), n, q, len(trials),
            f"{trials.mean():.1f}", f"{np.percentile(trials, 95):.0f}",
            f"{right.mean():.3f}", f"{floor:.1f}", f"{trials.mean() / floor:.2f}",
            ks[n], f"{naive_trials.mean():.1f}", f"{naive_right.mean():.3f}",
        )
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if args.no_parallel_table:
        print(f"\n{time.monotonic() - started:.0f} s with {args.workers} workers")
        return
    print(f"\nk probes at once (given p, q = 0, N = 256, {args.searches} searches): trials and rounds\n")
    print("| k | mean trials | mean rounds | accuracy |\n|---|---|---|---|")
    with ProcessPoolExecutor(args.workers) as pool:
        for k in (1, 2, 4, 8):
            chunks = [(256, k, range(s, min(s + chunk, args.searches))) for s in range(0, args.searches, chunk)]
            done = np.array([r for part in pool.map(parallel_searches, chunks) for r in part])
            print(f"| {k} | {done[:, 0].mean():.1f} | {done[:, 1].mean():.1f} | {done[:, 2].mean():.3f} |")
    print(f"\n{time.monotonic() - started:.0f} s with {args.workers} workers")


if __name__ == "__main__":
    main()
