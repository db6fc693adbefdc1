"""What replayable parallel probes cost: batched (`decide.batches`) against streaming, by simulation.

`bisect commits` with ``parallel: k`` sends its probes a batch of k at a time, so the same study
and seeds make the same probes whatever order results land in. The old driver ("streaming")
asked for a new probe as each result landed, which used every slot at once but made the search
depend on arrival order. Each search here draws a culprit uniformly among N candidates and runs
the real `CommitStrategy` (learned p, q = 0 given, 10 runs at the bad end first) with k = 4 in
flight; run durations are exponential (mean 1: the worst case for batches, a batch waits for
the longest of k) or steady (uniform 0.8-1.2, a test whose runs take about as long), so results
land out of order. A search that
stops leaves its other runs unfinished (the engine cancels them; they are not counted), except
that a batch is always finished. Columns: mean trials, accuracy of "found" answers, and the
mean wall time in units of one mean run.

    .venv/bin/python benchmarks/commits_batches.py [--searches 100] [--workers 2]
"""

from __future__ import annotations

import argparse
import heapq
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from heisenbisect.decide.batches import Batched
from heisenbisect.decide.commits import CommitStrategy, Settings, State
from heisenbisect.records import Config, Outcome, TrialStatus

K = 4
CELLS = ((64, 0.15), (64, 0.3), (256, 0.15), (256, 0.3))
SPREADS = ("exponential", "steady")


def duration(rng: np.random.Generator, spread: str) -> float:
    return rng.exponential(1.0) if spread == "exponential" else rng.uniform(0.8, 1.2)


def search(n: int, p: float, batched: bool, spread: str, seed: int) -> tuple[int, bool, bool, float]:
    """(trials, found, right, wall time) of one simulated search."""
    rng = np.random.default_rng(seed)
    culprit = int(rng.integers(n))
    shas = [f"c{i}" for i in range(n)]
    inner = CommitStrategy(shas, "good", Settings(p_bad=None, p_good=0.0, confidence=0.95, max_trials=3000))
    strategy = Batched(inner) if batched else inner
    running: list[tuple[float, int, Config]] = []  # (finish time, submission number, config)
    now, submitted = 0.0, 0
    while not strategy.finished():
        in_flight = Counter(config for _, _, config in running)
        for config in strategy.propose(in_flight, K - len(running)):
            heapq.heappush(running, (now + duration(rng, spread), submitted, config))
            submitted += 1
        if not running:
            break
        now, number, config = heapq.heappop(running)
        position = shas.index(config.commit) if config.commit != "good" else -1
        failed = position >= culprit and rng.random() < p
        strategy.observe(config, Outcome(f"t{number}", config.key, number, TrialStatus.OK, int(failed), 1))
    result = inner.result()
    found = result.state is State.FOUND
    return result.trials, found, found and result.culprit == culprit, now


def cell(args: tuple[int, float, bool, str, int]) -> tuple[tuple, list[tuple[int, bool, bool, float]]]:
    n, p, batched, spread, searches = args
    return (n, p, batched, spread), [search(n, p, batched, spread, seed) for seed in range(searches)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    jobs = [(n, p, b, s, args.searches) for s in SPREADS for n, p in CELLS for b in (False, True)]
    with ProcessPoolExecutor(args.workers) as pool:
        done = dict(pool.map(cell, jobs))
    print(f"k = {K} in flight, learned p, q = 0, {args.searches} searches per row\n")
    print("| durations | N | p | driver | mean trials | found right | mean wall time (runs) |")
    print("|---|---|---|---|---|---|---|")
    for spread, n, p, batched in ((s, n, p, b) for s in SPREADS for n, p in CELLS for b in (False, True)):
        rows = done[(n, p, batched, spread)]
        trials = np.mean([r[0] for r in rows])
        found = sum(r[1] for r in rows)
        right = sum(r[2] for r in rows)
        wall = np.mean([r[3] for r in rows])
        name = "batched (replayable)" if batched else "streaming (old)"
        print(f"| {spread} | {n} | {p:g} | {name} | {trials:.1f} | {right}/{found} | {wall:.1f} |")
    print(f"\n{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
