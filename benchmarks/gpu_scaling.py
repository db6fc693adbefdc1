"""Trial throughput of a GPU trial program under the Ray runner: one GPU against two, in one run.

Each row runs ``--trials`` trials of ``examples/gpu/matmul_stress.py`` (or the command after
``--``) through the real `Engine` and `RayRunner`, one GPU per trial, with as many trials in
flight as GPUs in the row, after one warm-up trial per GPU. Run on a machine with 2 GPUs:
``python benchmarks/gpu_scaling.py --trials 8 --json results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from heisenbisect.engine import Engine
from heisenbisect.records import Trial
from heisenbisect.store import Store
from heisenbisect.targets.command import CommandTarget
from runners import RunN  # benchmarks/runners.py, beside this file

PROGRAM = str(Path(__file__).resolve().parent.parent / "examples" / "gpu" / "matmul_stress.py")


def trial_factory(label: str):
    return lambda config, index, seed: Trial(f"{label}-{index:04d}", config, index, seed)


def run_row(target: CommandTarget, folder: Path, gpus: int, trials: int) -> dict:
    from heisenbisect.runners.ray_runner import RayRunner

    with RayRunner(target, folder / "logs", gpus_per_trial=1, cpus_per_trial=1, max_in_flight=gpus) as runner:
        with Store(folder / f"gpus-{gpus}.sqlite") as store:
            Engine(RunN(gpus), runner, store, f"warmup-{gpus}", trial_factory(f"warmup-{gpus}")).run()
            warm = store.count()
            started = time.perf_counter()
            Engine(RunN(trials), runner, store, f"gpus-{gpus}", trial_factory(f"gpus-{gpus}")).run()
            wall = time.perf_counter() - started
            outcomes = [outcome for _, outcome in store.outcomes()][warm:]
    tflops = [o.metrics.get("tflops", 0.0) for o in outcomes]
    return {
        "gpus": gpus,
        "trials": len(outcomes),
        "wall_s": wall,
        "trials_per_s": len(outcomes) / wall,
        "mean_trial_s": sum(o.duration_s for o in outcomes) / len(outcomes),
        "mean_tflops_per_trial": sum(tflops) / len(tflops),
        "gpus_seen": sorted({int(o.metrics.get("gpu", -1)) for o in outcomes}),
        "statuses": sorted({o.status.value for o in outcomes}),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--gpus", type=int, default=None, help="GPUs Ray may use (default: all CUDA sees)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("command", nargs="*", default=[sys.executable, PROGRAM])
    args = parser.parse_args(argv)

    import ray

    gpus = args.gpus
    if gpus is None:
        import torch

        gpus = torch.cuda.device_count()
    ray.init(num_gpus=gpus, num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    target = CommandTarget(argv=tuple(args.command), timeout_s=600)
    try:
        with tempfile.TemporaryDirectory(prefix="heisenbisect-gpu-") as scratch:
            rows = [run_row(target, Path(scratch), n, args.trials) for n in sorted({1, min(2, gpus)})]
    finally:
        ray.shutdown()

    print(f"{args.trials} trials per row of: {' '.join(args.command)}")
    print()
    print("| GPUs | trials | wall s | trials/s | mean trial s | TFLOP/s per trial | GPUs seen | statuses |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for row in rows:
        print(
            f"| {row['gpus']} | {row['trials']} | {row['wall_s']:.1f} | {row['trials_per_s']:.3f} | "
            f"{row['mean_trial_s']:.1f} | {row['mean_tflops_per_trial']:.0f} | "
            f"{','.join(map(str, row['gpus_seen']))} | {','.join(row['statuses'])} |"
        )
    if len(rows) == 2:
        print(f"\nthroughput, 2 GPUs / 1 GPU: {rows[1]['trials_per_s'] / rows[0]['trials_per_s']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
