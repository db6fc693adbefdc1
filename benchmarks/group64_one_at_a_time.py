"""What one-at-a-time screening would have spent on docs/gpu-race/group64's study: the same
truth as measured on the H200 (64 changes, baseline 26.6% of runs failing, three eliminators, eager
a reducer at 4.7%) and the spec's statistics (max_trials 320, first_look 10), driven by
benchmarks/group_screening.py's one-at-a-time estimate over simulated studies. Prints one line:

    python benchmarks/group64_one_at_a_time.py [--studies 20]
"""

from __future__ import annotations

import argparse

import numpy as np

import group_screening as bench
from heisenbisect.decide.screening import ScreeningSettings

BASELINE, REDUCER = 0.266, 0.047  # docs/gpu-race/group64/results.json: 131/493 and 15/320 runs failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=20)
    args = parser.parse_args()
    bench.SCREENING = ScreeningSettings(
        confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=320, first_look=10
    )
    row = bench.Row(64, "near3", BASELINE, near=REDUCER)
    costs = [bench.one_at_a_time_cost((row, 1000 * i)) for i in range(args.studies)]
    print(f"one-at-a-time screening of 64 changes at a baseline of {BASELINE:.1%}, 3 eliminators, a reducer at "
          f"{REDUCER:.1%}: mean {np.mean(costs):.0f} trials (min {min(costs):.0f}, max {max(costs):.0f}) over "
          f"{len(costs)} simulated studies")


if __name__ == "__main__":
    main()
