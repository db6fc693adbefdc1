"""Design sweep: how often the race fires for several indexer spins, all in one process.

For each ``--spins`` value runs ``--seeds`` workloads ``--repeats`` times each (the same seed
repeated shows how much of the outcome is device timing rather than data), and prints: runs
with any corrupted session, sessions per failing run, seeds that failed in some repeats but
not all, the fraction of batches corrupted by the batch's context tokens (the main stream's
work per step), and tokens per second. ``--pick RATE`` then names the spin whose rate is
closest to RATE and writes it to ``--pick-file``.

    python sweep.py --spins 0 10000 20000 40000 --seeds 8 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from decode import Settings, run_decoder
from workload import Reference, Workload, group_tokens

TOKEN_BINS = (20_000, 40_000, 60_000, 80_000)


def parse_env(pairs: list[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in pairs)


def sweep_one(env: dict[str, str], seeds: list[int], repeats: int, cache: dict) -> dict:
    settings = Settings.from_env(env)
    runs, per_fail, rates, mixed = 0, [], [], 0
    bins = [[0, 0] for _ in range(len(TOKEN_BINS) + 1)]
    for seed in seeds:
        if seed not in cache:
            workload = Workload.generate(seed)
            cache[seed] = (workload, Reference.of(workload))
        workload, reference = cache[seed]
        tokens = group_tokens(workload, settings.batch)
        outcomes = []
        for _ in range(repeats):
            report, corrupted = run_decoder(settings, workload, reference)
            runs += 1
            outcomes.append(bool(corrupted))
            rates.append(report["metrics"]["tokens_per_s"])
            if corrupted:
                per_fail.append(len(corrupted))
            bad_groups = {session // settings.batch for session in corrupted}
            for group, count in enumerate(tokens):
                slot = sum(count >= edge for edge in TOKEN_BINS)
                bins[slot][0] += group in bad_groups
                bins[slot][1] += 1
        mixed += 0 < sum(outcomes) < repeats
    failed = len(per_fail)
    return {
        "runs": runs,
        "failed": failed,
        "rate": failed / runs,
        "sessions_per_fail": statistics.mean(per_fail) if per_fail else 0.0,
        "mixed_seeds": mixed,
        "bins": bins,
        "tokens_per_s": statistics.mean(rates),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spins", type=int, nargs="+", required=True)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--env", nargs="*", default=[], help="RACE_X=value pairs for every row")
    parser.add_argument("--configs", nargs="*", default=[""], help="extra RACE_X=value,... per row group")
    parser.add_argument("--pick", type=float, default=None, help="write the spin whose rate is nearest this")
    parser.add_argument("--pick-file", type=Path, default=None)
    args = parser.parse_args(argv)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    cache: dict = {}
    labels = [f"<{TOKEN_BINS[0] // 1000}k"] + [
        f"{low // 1000}-{high // 1000}k" for low, high in zip(TOKEN_BINS, TOKEN_BINS[1:])
    ] + [f">={TOKEN_BINS[-1] // 1000}k"]
    print(f"{'config':<22} {'spin':>7} {'runs':>5} {'failed':>6} {'rate':>6} {'sess/fail':>9} "
          f"{'mixed':>5} {'tokens/s':>9}  batches corrupted by context tokens ({' '.join(labels)})")
    baseline_rates = {}
    for config in args.configs:
        extra = parse_env([p for p in config.split(",") if p])
        for spin in args.spins:
            env = {**parse_env(args.env), **extra, "RACE_SPIN": str(spin)}
            row = sweep_one(env, seeds, args.repeats, cache)
            if not config:
                baseline_rates[spin] = row["rate"]
            bins = " ".join(f"{bad}/{total}" for bad, total in row["bins"])
            print(f"{config or 'baseline':<22} {spin:>7} {row['runs']:>5} {row['failed']:>6} {row['rate']:>6.1%} "
                  f"{row['sessions_per_fail']:>9.1f} {row['mixed_seeds']:>5} {row['tokens_per_s']:>9.0f}  {bins}",
                  flush=True)
    if args.pick is not None and baseline_rates:
        spin = min(baseline_rates, key=lambda s: (abs(baseline_rates[s] - args.pick), s))
        print(f"picked spin {spin} (baseline rate {baseline_rates[spin]:.1%}, target {args.pick:.0%})")
        if args.pick_file:
            args.pick_file.write_text(str(spin))
    return 0


if __name__ == "__main__":
    sys.exit(main())
