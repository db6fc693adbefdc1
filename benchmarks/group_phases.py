"""Where a group screening's trials go: the mean trials per study by the role of the arm that ran them.

    python benchmarks/group_phases.py --factors 64 --rate 0.15 --kind or_pair --studies 20
    python benchmarks/group_phases.py --factors 256 --seed 1043000     # one study: a row's worst, from the log

The same studies as `group_screening.py` (its rows, seeds and simulated target), each run to its
end; every trial is counted once, under the arm whose config it ran: search groups (*group*), the
search's single changes (*group1*), single claim arms (*single*), clearing groups (*clear*), ddmin's
probes (*probe*), combinations (*combination*) and the baseline. An arm promoted from the search to
a claim counts under its final role. Also the worst study and the studies not all right.
"""

from __future__ import annotations

import argparse
import collections

import numpy as np

from group_screening import Row, pooled_t, right, run_group, seeds_of
from heisenbisect.decide import stats


def phases(row: Row, seed: int) -> tuple[collections.Counter, int, bool]:
    truth = row.truth(seed)
    strategy, trials = run_group(truth, seed + 1)
    by_role: collections.Counter = collections.Counter({"baseline": strategy.baseline.evidence.attempts})
    for arm in strategy.arms:
        key = arm.role.value + ("1" if arm.role.value == "group" and len(arm.changes) == 1 else "")
        by_role[key] += arm.seen.attempts
    verdicts = {v.change: v.verdict for v in strategy.result().changes}
    return by_role, trials, all(right(truth, c, v) for c, v in verdicts.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", type=int, default=64)
    parser.add_argument("--rate", type=float, default=0.15)
    parser.add_argument("--kind", default="or_pair", help="elim1, elim3, or_pair, near1-3 (with --near)")
    parser.add_argument("--near", type=float, help="the near-zero reducer's run-failure rate (near rows)")
    parser.add_argument("--studies", type=int, default=20)
    parser.add_argument("--seed", type=int, nargs="*",
                        help="these studies' seeds (group-screening.jsonl's) instead of the first --studies")
    args = parser.parse_args()
    stats.difference_pvalue = pooled_t  # as group_screening.py does by default
    row = Row(args.factors, args.kind, args.rate, args.near)
    total: collections.Counter = collections.Counter()
    trials, wrong_seeds = [], []
    seeds = args.seed or seeds_of(args.studies)
    for seed in seeds:
        by_role, used, all_right = phases(row, seed)
        total.update(by_role)
        trials.append(used)
        if not all_right:
            wrong_seeds.append(seed)
    roles = ["group", "group1", "single", "clear", "probe", "combination", "baseline"]
    print(f"{len(seeds)} studies of {row}: mean {np.mean(trials):.0f} trials, worst {max(trials)}")
    print(" ".join(f"{r} {total[r] / len(seeds):.0f}" for r in roles))
    print("not all right:", wrong_seeds or "none")


if __name__ == "__main__":
    main()
