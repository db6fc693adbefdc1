"""Framework overhead per trial: the local and the Ray runner side by side, on no-op trials.

Each row drives ``--trials`` trials of ``true`` through the real `Engine` (runner, sqlite store,
a strategy asking for N trials), after ``--warmup`` trials that start the workers. The bare cost
of starting ``true`` (Popen + wait, nothing else) is measured in the same run, so "beyond start"
is what heisenbisect adds per trial. Run: ``python benchmarks/runners.py [--trials 500]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from heisenbisect.engine import Engine
from heisenbisect.records import Config, Outcome, Trial
from heisenbisect.runners.base import Runner
from heisenbisect.runners.local import LocalRunner
from heisenbisect.store import Store
from heisenbisect.targets.command import CommandTarget

NOOP = ("true",)


class RunN:
    """Asks for ``n`` trials of the baseline, as many at once as there are slots."""

    def __init__(self, n: int):
        self.n, self.seen = n, 0

    def observe(self, config: Config, outcome: Outcome) -> None:
        self.seen += 1

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        return [Config()] * max(0, min(slots, self.n - self.seen - sum(in_flight.values())))

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return []

    def finished(self) -> bool:
        return self.seen >= self.n


def bare_start_ms(trials: int) -> float:
    """Milliseconds to start and reap the no-op process with nothing around it."""
    started = time.perf_counter()
    for _ in range(trials):
        subprocess.Popen(NOOP, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
    return (time.perf_counter() - started) / trials * 1000


def drive(runner: Runner, folder: Path, label: str, trials: int) -> float:
    """Seconds for ``trials`` trials through the engine, store included."""
    with Store(folder / f"{label}.sqlite") as store:
        make = lambda config, index, seed: Trial(f"{label}-{index:05d}", config, index, seed)  # noqa: E731
        started = time.perf_counter()
        Engine(RunN(trials), runner, store, label, make).run()
        elapsed = time.perf_counter() - started
        assert store.count() == trials
    return elapsed


def measure(make_runner, folder: Path, label: str, trials: int, warmup: int) -> float:
    with make_runner() as runner:
        drive(runner, folder, f"{label}-warmup", warmup)
        return drive(runner, folder, label, trials)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)

    import ray

    from heisenbisect.runners.ray_runner import RayRunner

    target = CommandTarget(argv=NOOP, timeout_s=60)
    cpus = max(args.in_flight)
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)  # started once, outside the timing
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="heisenbisect-bench-") as scratch:
            folder = Path(scratch)
            bare = bare_start_ms(args.trials)
            for in_flight in args.in_flight:
                for name, make in (
                    ("local", lambda n=in_flight: LocalRunner(target, folder / "logs", parallel=n)),
                    ("ray", lambda n=in_flight: RayRunner(target, folder / "logs", max_in_flight=n)),
                ):
                    seconds = measure(make, folder, f"{name}-{in_flight}", args.trials, args.warmup)
                    rows.append((name, in_flight, seconds))
    finally:
        ray.shutdown()

    print(f"{args.trials} no-op trials ({' '.join(NOOP)}) per row, after {args.warmup} warm-up trials; "
          f"{os.cpu_count()} CPUs; bare process start {bare:.2f} ms")
    print()
    print("| runner | in flight | wall s | ms per trial | beyond bare start, ms per trial |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, in_flight, seconds in rows:
        per_trial = seconds / args.trials * 1000
        beyond = per_trial - bare / in_flight  # bare starts could overlap too, at best
        print(f"| {name} | {in_flight} | {seconds:.2f} | {per_trial:.2f} | {beyond:.2f} |")


if __name__ == "__main__":
    main()
