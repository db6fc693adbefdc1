"""The launch-heterogeneity check (`decide.launches`) by simulation: how often it cries wolf when a
launch's runs are independent, and how often it sees a race decided per launch.

Each study has C configs, each served by L launches of k runs (``trials_per_launch`` = k).
"independent": every run fails with probability p. "per launch": each launch is bad with
probability q and its runs fail with p_bad, else with p_good (a race decided at launch, as
sgl-project/sglang PR 37768); the mean failure rate is about p. The table gives the share of
studies the check calls dependent (p < 0.05) with its Wilson 95% interval: under "independent"
that share is the false-alarm rate and must stay at or below 0.05; under "per launch" it is the
power.

    .venv/bin/python benchmarks/launch_independence.py [--studies 400] [--permutations 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from heisenbisect.decide.launches import check_launches

SCENARIOS = (  # name, p (independent) or (q, p_bad, p_good)
    ("independent p=0.3", 0.3),
    ("independent p=0.05", 0.05),
    ("per launch q=0.3, 0.8 vs 0.1", (0.3, 0.8, 0.1)),
    ("per launch q=0.5, 0.5 vs 0.1", (0.5, 0.5, 0.1)),
)
DESIGNS = ((4, 3, 4), (4, 6, 4), (4, 12, 4), (1, 5, 5))  # configs, launches per config, runs per launch


def simulate(rng: np.random.Generator, model, configs: int, launches: int, per_launch: int) -> dict:
    runs = {}
    for c in range(configs):
        runs[c] = {}
        for launch in range(launches):
            if isinstance(model, tuple):
                q, bad, good = model
                p = bad if rng.random() < q else good
            else:
                p = model
            runs[c][launch] = list(rng.random(per_launch) < p)
    return runs


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    phat = k / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--permutations", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"studies per cell: {args.studies}, permutations per test: {args.permutations}, alpha 0.05\n")
    print("| scenario | configs x launches x runs | called dependent | 95% interval |")
    print("|---|---|---|---|")
    for name, model in SCENARIOS:
        for configs, launches, per_launch in DESIGNS:
            alarms = sum(
                check_launches(simulate(rng, model, configs, launches, per_launch), args.permutations,
                               int(rng.integers(1 << 31))).dependent
                for _ in range(args.studies)
            )
            low, high = wilson(alarms, args.studies)
            print(f"| {name} | {configs} x {launches} x {per_launch} | {alarms / args.studies:.3f} | "
                  f"[{low:.3f}, {high:.3f}] |")


if __name__ == "__main__":
    main()
