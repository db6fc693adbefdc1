"""What the stop rule's low-p check costs: along each search of the real `CommitStrategy`, the
trial at which the culprit first holds the confidence under each guard level, and whether it
is right there.

The strategy stops when the most probable commit holds 0.95 on the posterior with p and q
integrated out and also with p fixed at the lower 5% quantile of its posterior from the runs the
claim calls bad (`CommitStrategy._holds_at_a_low_p`). Probes do not depend on the stop rule, so one
search to the real stop passes every laxer rule's stop on the way: each level's first stop is
read off the same path. "none" is the integrated posterior alone. Same simulated runs as
benchmarks/bisection_peer.py (its `Runs` and `Tape`, same seeds).

    .venv/bin/python benchmarks/bisection_stop_margin.py --size 1200 --rate-bad 0.15 --rate-good 0.01 --searches 40
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.special import betaincinv  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bisection_peer import CONFIDENCE, Runs, Tape  # noqa: E402
from heisenbisect.decide.commits import CommitStrategy, Settings  # noqa: E402
from heisenbisect.decide.posterior import RatePrior, culprit_posterior  # noqa: E402
from heisenbisect.records import Outcome, TrialStatus  # noqa: E402

LEVELS = (None, 0.3, 0.1, 0.05)  # the quantile p is fixed at; None: no check; 0.05 is the strategy's


def holds(strategy: CommitStrategy, culprit: int, level: float | None) -> bool:
    """Whether ``culprit`` keeps the confidence with p at the ``level`` quantile (as the strategy checks at 0.05)."""
    if level is None:
        return True
    failed = float(strategy.failures[culprit:].sum())
    passed = float(strategy.trials[culprit:].sum()) - failed
    prior = strategy._bad_prior
    low_p = float(betaincinv(prior.a + failed, prior.b + passed, level))
    cautious = culprit_posterior(strategy._evidence(), RatePrior(known=low_p), strategy._good_prior)
    return float(cautious.probs[culprit]) >= CONFIDENCE


def search(task: tuple[int, float, float, int]) -> dict[str, tuple[int, bool]]:
    """One search to the strategy's own stop: per level, (trials, right) at its first stop."""
    n, p, q, seed = task
    runs = Runs(n, p, q, seed)
    strategy = CommitStrategy([f"c{i}" for i in range(n)], "good", Settings(max_trials=60_000))
    tape = Tape(runs)
    stops: dict[str, tuple[int, bool]] = {}
    while True:
        probs = strategy.posterior().probs
        top = int(np.argmax(probs))
        if probs[top] >= CONFIDENCE:
            for level in LEVELS:
                if str(level) not in stops and holds(strategy, top, level):
                    stops[str(level)] = (strategy.finished_trials, top == runs.culprit)
        if strategy.finished():
            return stops
        config = strategy.propose(Counter(), 1)[0]
        commit = -1 if config.commit == "good" else int(config.commit[1:])
        strategy.observe(config, Outcome("sim", config.key, 0, TrialStatus.OK, int(tape.run(commit)), 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1200)
    parser.add_argument("--rate-bad", type=float, default=0.15)
    parser.add_argument("--rate-good", type=float, default=0.01)
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    tasks = [(args.size, args.rate_bad, args.rate_good, seed) for seed in range(args.searches)]
    with ProcessPoolExecutor(args.workers) as pool:
        paths = list(pool.map(search, tasks))
    print(f"N {args.size}, p {args.rate_bad}, q {args.rate_good}, {len(paths)} searches (seeds 0-{len(paths) - 1})\n")
    print("| p fixed at quantile | mean trials at the stop | right |\n|---|---|---|")
    for level in LEVELS:
        stops = [path[str(level)] for path in paths if str(level) in path]
        right = sum(ok for _, ok in stops)
        print(f"| {level or 'none'} | {np.mean([t for t, _ in stops]):.1f} | {right}/{len(stops)} |")


if __name__ == "__main__":
    main()
