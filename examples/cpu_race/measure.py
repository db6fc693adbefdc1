"""Measure the cpu_race server's run-failure rate and throughput, config by config.

Runs the baseline and every one-factor change of ``hypotheses.yaml`` ``--runs`` times each,
as real processes, ``--parallel`` at a time, interleaved so that load drifting over the
measurement hits every config alike. Prints one row per config: runs with any corrupted
session, that rate's exact (Clopper-Pearson) 95% interval, corrupted sessions per failing
run, and mean tokens per second.

    .venv/bin/python examples/cpu_race/measure.py --runs 100 --parallel 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import binomtest

from heisenbisect.hypotheses import load_spec

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Run:
    config: str
    failures: int
    tokens_per_s: float


def run_once(config: str, env: dict[str, str], seed: int, python: str) -> Run:
    full_env = {**os.environ, **env, "HEISENBISECT_SEED": str(seed)}
    full_env.pop("HEISENBISECT_RESULT", None)
    done = subprocess.run(
        [python, "server.py"], cwd=HERE, env=full_env, capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return Run(config, report["failures"], report["metrics"]["tokens_per_s"])


def config_envs(spec_path: Path, only: list[str] | None) -> dict[str, dict[str, str]]:
    spec = load_spec(spec_path)
    configs = [spec.baseline, *spec.arms()]
    envs = {c.key: {k: v for k, v in spec.environment(c).items() if v is not None} for c in configs}
    return {key: env for key, env in envs.items() if not only or key in only}


def table(runs: list[Run], order: list[str]) -> str:
    lines = [
        f"{'config':<16} {'runs':>5} {'failed':>6} {'rate':>6} {'95% CI (exact)':>16} "
        f"{'sess/fail':>9} {'tokens/s':>9}"
    ]
    for config in order:
        mine = [r for r in runs if r.config == config]
        failed = [r for r in mine if r.failures > 0]
        ci = binomtest(len(failed), len(mine)).proportion_ci(confidence_level=0.95, method="exact")
        per_fail = statistics.mean(r.failures for r in failed) if failed else 0.0
        lines.append(
            f"{config:<16} {len(mine):>5} {len(failed):>6} {len(failed) / len(mine):>6.1%} "
            f"{f'[{ci.low:.3f}, {ci.high:.3f}]':>16} {per_fail:>9.1f} "
            f"{statistics.mean(r.tokens_per_s for r in mine):>9.0f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs per config")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time")
    parser.add_argument("--configs", nargs="*", help="config keys to measure (default: all)")
    parser.add_argument("--spec", type=Path, default=HERE / "hypotheses.yaml")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs server.py")
    args = parser.parse_args(argv)
    envs = config_envs(args.spec, args.configs)
    jobs = [
        (config, env, 1000 * i + j)
        for i, (j, (config, env)) in itertools.product(range(args.runs), enumerate(envs.items()))
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(args.parallel) as pool:
        runs = list(pool.map(lambda job: run_once(*job, args.python), jobs))
    load = os.getloadavg()
    print(
        f"{args.runs} runs per config, {args.parallel} at a time, {time.monotonic() - started:.0f} s; "
        f"{os.cpu_count()} CPUs, load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
    )
    print(table(runs, list(envs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
