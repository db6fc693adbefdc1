"""Ground truth for gpu_race: each config's run-failure rate and throughput, alone or sharing a GPU.

Runs the baseline and every one-factor change of ``hypotheses.yaml`` ``--runs`` times each
(a fresh workload and decode per run, interleaved so drift hits every config alike) inside
``--processes`` processes started at once on the same GPU: 1 is a GPU to itself ("alone"),
more is the contention several trials sharing one GPU produce ("shared"). Each process
decodes in-process, so the table measures the race, not Python's start-up. Prints one row per
config: runs with any corrupted session, that rate's exact (Clopper-Pearson) 95% interval,
corrupted sessions per failing run, and mean tokens per second.

    python measure.py --runs 48 --processes 1
    python measure.py --runs 48 --processes 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scipy.stats import binomtest

from heisenbisect.hypotheses import load_spec

HERE = Path(__file__).resolve().parent


def config_envs(spec_path: Path) -> dict[str, dict[str, str]]:
    spec = load_spec(spec_path)
    configs = [spec.baseline, *spec.arms()]
    return {c.key: {k: v for k, v in spec.environment(c).items() if v is not None} for c in configs}


def measure_here(envs: dict[str, dict[str, str]], runs: int, first_seed: int) -> list[dict]:
    """Every config ``runs`` times in this process; one record per run."""
    from decode import Settings, run_decoder  # needs torch and a GPU
    from workload import Reference, Workload

    records = []
    for index in range(runs):
        workload = Workload.generate(first_seed + index)
        reference = Reference.of(workload)
        for config, env in envs.items():
            report, corrupted = run_decoder(Settings.from_env({**os.environ, **env}), workload, reference)
            records.append({"config": config, "failures": len(corrupted), **report["metrics"]})
    return records


def table(records: list[dict], order: list[str]) -> str:
    lines = [f"{'config':<20} {'runs':>5} {'failed':>6} {'rate':>6} {'95% CI (exact)':>16} {'sess/fail':>9} {'tokens/s':>9}"]
    for config in order:
        mine = [r for r in records if r["config"] == config]
        failed = [r for r in mine if r["failures"] > 0]
        ci = binomtest(len(failed), len(mine)).proportion_ci(confidence_level=0.95, method="exact")
        per_fail = statistics.mean(r["failures"] for r in failed) if failed else 0.0
        lines.append(
            f"{config:<20} {len(mine):>5} {len(failed):>6} {len(failed) / len(mine):>6.1%} "
            f"{f'[{ci.low:.3f}, {ci.high:.3f}]':>16} {per_fail:>9.1f} "
            f"{statistics.mean(r['tokens_per_s'] for r in mine):>9.0f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=48, help="runs per config, over all processes")
    parser.add_argument("--processes", type=int, default=1, help="processes at once on the GPU (1: alone)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--spec", type=Path, default=HERE / "hypotheses.yaml")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    envs = config_envs(args.spec)
    if args.child:
        for record in measure_here(envs, args.runs, args.first_seed):
            print(json.dumps(record), flush=True)
        return 0
    share = -(-args.runs // args.processes)
    started = time.monotonic()
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--child", "--runs", str(share), "--first-seed", str(args.first_seed + 10_000 * i),
             "--spec", str(args.spec)],
            cwd=HERE, stdout=subprocess.PIPE, text=True,
        )
        for i in range(args.processes)
    ]
    records = []
    for child in children:
        out, _ = child.communicate()
        if child.returncode:
            print(f"measure: a child exited {child.returncode}", file=sys.stderr)
            return 1
        records += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    print(
        f"{share * args.processes} runs per config in {args.processes} process(es) at once on "
        f"GPU {os.environ.get('CUDA_VISIBLE_DEVICES', 'default')}, RACE_SPIN={os.environ.get('RACE_SPIN', 'default')}, "
        f"{time.monotonic() - started:.0f} s"
    )
    print(table(records, list(envs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
