"""How often does `bisect watch` call a head worse, and what does a step cost? By simulation.

Each cycle drives the real strategies of `decide/watch.py`: `RecordStrategy` bounds a good commit
failing at p_good (one run at a time), then `CompareStrategy` runs a head failing at p_head
interleaved with it (two at a time) until a look decides. Rows with p_head = p_good measure the
false-regression rate (at most 1 - confidence = 0.05 is the claim); the others, how often a
regression is caught. "runs" counts both sides of the comparison (the recording apart).

The second table is a decided arm's first step (`studies/watch/arms.py`): the head, under the
arm's config, against the screening's runs of the arm as the recorded good (for an eliminator,
n runs none of which failed: the screening's claim, so the simulation keeps only screenings that
saw none) plus fresh interleaved runs at the last known good. Rows with p_head = p_arm measure
its false alarms, including an "eliminator" whose true rate was small but not zero (the claim
allows up to ``zero_rate``): the screening's zeros then flatter the good side.

    .venv/bin/python benchmarks/watch.py --cycles 1000 [--only baseline|arms]
"""

from __future__ import annotations

import argparse
import random
import time

from heisenbisect.decide.stats import clopper_pearson_interval
from heisenbisect.decide.watch import CompareStrategy, RecordStrategy, StepState, WatchSettings
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order


def drive(strategy, rates: dict[str, float], rng: random.Random, slots: int = 2) -> list:
    """Run ``strategy`` on simulated commits failing at ``rates``; the outcomes in arrival order
    (as tests/decide/test_watch.py does)."""

    def outcome(config: Config, n: int) -> Outcome:
        failed = rng.random() < rates[config.commit or ""]
        return Outcome(f"{config.key}-{n}", config.key, n, TrialStatus.OK, int(failed), 1)

    return drive_in_order(strategy, outcome, slots=slots)


# (claim, screening runs, p_arm at the screening and the last known good, p_head)
ARM_ROWS = [
    ("eliminates", 59, 0.0, 0.0),
    ("eliminates", 59, 0.01, 0.01),
    ("eliminates", 59, 0.02, 0.02),
    ("eliminates", 29, 0.02, 0.02),
    ("reduces", 80, 0.05, 0.05),
    ("reduces", 80, 0.1, 0.1),
    ("eliminates", 59, 0.0, 0.05),
    ("eliminates", 59, 0.0, 0.1),
    ("eliminates", 59, 0.0, 0.3),
    ("reduces", 80, 0.1, 0.3),
]
ROWS = [(0.0, 0.0), (0.02, 0.02), (0.1, 0.1), (0.3, 0.3), (0.0, 0.1), (0.0, 0.3), (0.1, 0.3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000, help="cycles per row")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("baseline", "arms"), help="one table only")
    args = parser.parse_args()
    settings = WatchSettings()
    started = time.monotonic()
    if args.only != "arms":
        baseline_table(args, settings)
    if args.only != "baseline":
        arms_table(args, settings)
    print(f"\nwall time {time.monotonic() - started:.0f} s")


def screened(claim: str, runs: int, p_arm: float, rng: random.Random) -> int:
    """The screening's failed runs of the arm; an eliminator's claim is that none failed, so its
    screenings are drawn until one saw none (what a decided arm was conditioned on)."""
    while True:
        failed = sum(rng.random() < p_arm for _ in range(runs))
        if claim != "eliminates" or failed == 0:
            return failed


def arms_table(args: argparse.Namespace, settings: WatchSettings) -> None:
    print(
        "\n| claim | screening runs | p_arm | p_head | worse | 95% interval | not worse "
        "| undecided | compare runs (mean) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rng = random.Random(args.seed + 1)
    n = args.cycles
    for claim, screen_runs, p_arm, p_head in ARM_ROWS:
        states, runs = [], 0
        for _ in range(n):
            recorded = (screen_runs, screened(claim, screen_runs, p_arm, rng))
            compare = CompareStrategy("head", "good", recorded, settings)
            runs += len(drive(compare, {"good": p_arm, "head": p_head}, rng))
            states.append(compare.state)
        worse = states.count(StepState.WORSE)
        low, high = clopper_pearson_interval(worse, n, 0.95)
        print(
            f"| {claim} | {screen_runs} | {p_arm} | {p_head} | {worse / n:.3f} | "
            f"{low:.3f}-{high:.3f} | {states.count(StepState.NOT_WORSE) / n:.3f} "
            f"| {states.count(StepState.UNDECIDED) / n:.3f} | {runs / n:.1f} |"
        )


def baseline_table(args: argparse.Namespace, settings: WatchSettings) -> None:
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


if __name__ == "__main__":
    main()
