"""Run the SGLang target end to end against the fake server in story mode, arm by arm.

Prints, per arm of examples/sglang/fake-story.yaml: corrupted sessions out of sessions with
the exact 95% interval, throughput and latency (the cost of each fix), and what a trial and a
launch cost in wall time. No GPU needed.

    .venv/bin/python benchmarks/sglang_fake_story.py [--trials 4]
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from scipy.stats import binomtest

from heisenbisect.engine import trial_id, trial_seed
from heisenbisect.hypotheses.loader import load_spec
from heisenbisect.records import Trial, TrialStatus
from heisenbisect.targets.server.spec import make_server_target

SPEC = Path(__file__).resolve().parents[1] / "examples" / "sglang" / "fake-story.yaml"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=4)
    args = parser.parse_args()
    spec = load_spec(SPEC)
    target = make_server_target(spec, base_dir=SPEC.parent)
    rows = []
    with TemporaryDirectory() as logs:
        try:
            for config in [spec.baseline, *spec.arms()]:
                outcomes, walls = [], []
                for index in range(args.trials):
                    trial = Trial(trial_id(config.key, index), config, index, trial_seed(spec.study, config.key, index),
                                  env=spec.environment(config), args=tuple(spec.arguments(config)))
                    started = time.monotonic()
                    outcome = target.execute(trial, Path(logs) / f"{trial.trial_id}.log", threading.Event())
                    walls.append(time.monotonic() - started)
                    assert outcome.status is TrialStatus.OK, outcome
                    outcomes.append(outcome)
                rows.append((config.key, outcomes, walls))
        finally:
            target.close()
    print(f"{'arm':<42} {'corrupted':>10} {'rate':>6} {'95% CI':>15} {'tok/s':>8} {'p50 s':>7} "
          f"{'1st trial s':>11} {'next trial s':>12}")
    for key, outcomes, walls in rows:
        failures, total = sum(o.failures for o in outcomes), sum(o.total for o in outcomes)
        ci = binomtest(failures, total).proportion_ci(0.95, method="exact")
        tps = np.mean([o.metrics["tokens_per_s"] for o in outcomes])
        p50 = np.mean([o.metrics["latency_p50_s"] for o in outcomes])
        print(f"{key:<42} {f'{failures}/{total}':>10} {failures / total:>6.1%} "
              f"{f'[{ci.low:.3f}, {ci.high:.3f}]':>15} {tps:>8.0f} {p50:>7.3f} {walls[0]:>11.2f} "
              f"{np.mean(walls[1:]) if len(walls) > 1 else float('nan'):>12.2f}")


if __name__ == "__main__":
    main()
