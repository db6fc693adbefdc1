"""How often does `bisect watch` call a head worse, and what does a step cost? By simulation.

Each cycle drives the real strategies of `decide/watch.py`: `RecordStrategy` bounds a good commit
failing at p_good (one run at a time), then `CompareStrategy` runs a head failing at p_head
interleaved with it (two at a time) until a look decides. Rows with p_head = p_good measure the
false-regression rate (at most 1 - confidence = 0.05 is the claim); the others, how often a
regression is caught. "runs" counts both sides of the comparison (the recording apart).

    .venv/bin/python benchmarks/watch.py --cycles 1000
"""

from __future__ import annotations

import argparse
import random
import time

from heisenbisect.decide.stats import clopper_pearson_interval
from heisenbisect.decide.watch import CompareStrategy, RecordStrategy, StepState, WatchSettings
from heisenbisect.records import Config, Outcome, TrialStatus


def drive(strategy, rates: dict[str, float], rng: random.Random, slots: int = 2) -> list:
    """Run ``strategy`` on simulated commits failing at ``rates``; the outcomes in arrival order
    (as tests/decide/test_watch.py does)."""
    seen: list[tuple[Config, Outcome]] = []
    while not strategy.finished():
        for config in strategy.propose({}, slots):
            failed = rng.random() < rates[config.commit or ""]
            o = Outcome(
                f"{config.key}-{len(seen)}", config.key, len(seen), TrialStatus.OK, int(failed), 1
            )
            seen.append((config, o))
            strategy.observe(config, o)
    return seen


ROWS = [(0.0, 0.0), (0.02, 0.02), (0.1, 0.1), (0.3, 0.3), (0.0, 0.1), (0.0, 0.3), (0.1, 0.3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000, help="cycles per row")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    settings = WatchSettings()
    started = time.monotonic()
    print(
        f"confidence {settings.confidence}, margin {settings.margin}, first look "
        f"{settings.first_look}, max runs {settings.max_runs}; {args.cycles} cycles a row\n"
    )
    print(
        "| p_good | p_head | recorded runs (mean) | worse | 95% interval | not worse | undecided "
        "| compare runs (mean) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rng = random.Random(args.seed)
    for p_good, p_head in ROWS:
        states, recorded, runs = [], 0, 0
        for _ in range(args.cycles):
            record = RecordStrategy("good", settings)
            drive(record, {"good": p_good}, rng, slots=1)
            rate = record.rate()
            compare = CompareStrategy("head", "good", (rate.runs, rate.failed), settings)
            runs += len(drive(compare, {"good": p_good, "head": p_head}, rng))
            recorded += rate.runs
            states.append(compare.state)
        worse = states.count(StepState.WORSE)
        low, high = clopper_pearson_interval(worse, args.cycles, 0.95)
        n = args.cycles
        print(
            f"| {p_good} | {p_head} | {recorded / n:.1f} | {worse / n:.3f} | {low:.3f}-{high:.3f} "
            f"| {states.count(StepState.NOT_WORSE) / n:.3f} "
            f"| {states.count(StepState.UNDECIDED) / n:.3f} | {runs / n:.1f} |"
        )
    print(f"\nwall time {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
