"""`bisect amplify` by simulation: does the search find the most evidence per second, and is
its confirmation honest? Three tables.

1. Search quality. Simulated targets with a known run-failure rate p(x) and mean duration
   d(x) over 2-5 knobs (some irrelevant, one interaction); the true optimum of C(p) / d is
   found on a dense grid. Each search is the real `OptunaSearch` (TPE, the real repeat logic
   of `decide.amplify.Search`) on an in-memory Optuna study, one run at a time, against
   simulated runs (a run fails with p(x) and lasts d(x) times a lognormal jitter). "share"
   is the true objective of the settings the search picks over the true optimum ("best
   evaluated": of the truly best settings it ran at all, so the gap between the two is the
   choice among candidates and the rest is exploration); "random"
   is the same machinery with Optuna's RandomSampler and the same budget.
2. Confirmation. After each search, the real `Confirmation` runs the picked settings
   against the current ones on fresh simulated runs. "false claims" counts confirmations
   whose picked settings are truly no better than the current ones; the surfaces "flat" (no
   knob matters) and "current best" (the defaults are the optimum) exist to provoke them.
3. The objective predicts bisection cost: the real `CommitStrategy` with given rates
   (N = 256, q = 0) at several p; trials x C(p) should stay constant, as it does for the
   Fano floor, while trials x (-log2(1 - p)) drifts.

    .venv/bin/python benchmarks/amplify.py [--searches 50] [--budget 300] [--workers 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one BLAS thread per worker: the workers are the parallelism
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bisection import simulate as simulate_bisection  # noqa: E402
from heisenbisect.decide.amplify import (  # noqa: E402
    Claim,
    Confirmation,
    ConfirmSettings,
    Search,
    capacity,
)
from heisenbisect.decide.commits import Settings  # noqa: E402
from heisenbisect.hypotheses.model import Amplify, Knob  # noqa: E402
from heisenbisect.records import Config, Outcome, TrialStatus  # noqa: E402
from heisenbisect.studies.amplify.search import (  # noqa: E402
    CURRENT,
    OptunaSearch,
    new_optuna_study,
    search_settings,
)
from heisenbisect.testing.strategy_kit import drive_in_order  # noqa: E402

Point = dict[str, float | str]


@dataclass(frozen=True)
class Surface:
    """A simulated target: knobs, their current values, p(x) and d(x)."""

    name: str
    knobs: tuple[Knob, ...]
    current: Point
    rate: Callable[[Point], float]
    duration: Callable[[Point], float]
    description: str

    def point(self, config: Config) -> Point:
        x = dict(self.current)
        for name, label in config.changes:
            knob = next(k for k in self.knobs if k.name == name)
            x[name] = label if knob.type == "choice" else float(label)
        return x

    def objective(self, x: Point) -> float:
        return float(capacity(self.rate(x))) / self.duration(x)


def race(x: Point) -> float:
    """A race whose per-session chance peaks at a wait that depends on the batch (the interaction)."""
    batch = float(x["batch"])
    best_wait = 0.3 * batch  # ms: a wider batch takes longer to gather, so a later wait hits it
    session = 0.004 * math.exp(-((math.log(x["wait"]) - math.log(best_wait)) ** 2) / 0.5) * math.sqrt(batch)
    return 1.0 - (1.0 - session) ** x["sessions"]


def race_duration(x: Point) -> float:
    return 0.3 + x["sessions"] * (0.004 + 0.0005 * x["wait"]) / math.sqrt(float(x["batch"]))


def load(x: Point) -> float:
    """Failure rate rises with load and with a smaller cache, saturating."""
    pressure = x["clients"] / 16 * (64 / x["cache_mb"]) ** 0.5
    return 0.9 * (1 - math.exp(-0.05 * pressure**1.5))


def load_duration(x: Point) -> float:
    return 2.0 + 0.15 * x["clients"] + (1.5 if x["mode"] == "replay" else 0.0)


KNOBS = {
    "sessions": Knob(name="sessions", type="int", low=10, high=600, log=True),
    "wait": Knob(name="wait", type="float", low=0.05, high=20, log=True),
    "batch": Knob(name="batch", type="choice", choices=["1", "2", "4", "8", "16", "32"]),
    "salt": Knob(name="salt", type="float", low=0, high=1),
    "clients": Knob(name="clients", type="int", low=1, high=64),
    "cache_mb": Knob(name="cache_mb", type="float", low=4, high=1024, log=True),
    "mode": Knob(name="mode", type="choice", choices=["live", "replay"]),
    "threads": Knob(name="threads", type="int", low=1, high=16),
    "log_level": Knob(name="log_level", type="choice", choices=["info", "debug", "trace"]),
}

SURFACES = (
    Surface(
        "race (4 knobs)",
        (KNOBS["sessions"], KNOBS["wait"], KNOBS["batch"], KNOBS["salt"]),
        {"sessions": 60.0, "wait": 1.0, "batch": "8", "salt": 0.5},
        race,
        race_duration,
        "sessions, wait x batch interaction, 1 irrelevant",
    ),
    Surface(
        "load (5 knobs)",
        (KNOBS["clients"], KNOBS["cache_mb"], KNOBS["mode"], KNOBS["threads"], KNOBS["log_level"]),
        {"clients": 8.0, "cache_mb": 256.0, "mode": "live", "threads": 4.0, "log_level": "info"},
        load,
        load_duration,
        "clients x cache, mode costs time only, 2 irrelevant",
    ),
    Surface(
        "flat (2 knobs)",
        (KNOBS["threads"], KNOBS["log_level"]),
        {"threads": 4.0, "log_level": "info"},
        lambda x: 0.1,
        lambda x: 1.0,
        "no knob matters: every setting is the current one",
    ),
    Surface(
        "current best (3 knobs)",
        (KNOBS["clients"], KNOBS["threads"], KNOBS["log_level"]),
        {"clients": 32.0, "threads": 4.0, "log_level": "info"},
        lambda x: 0.3 * math.exp(-((x["clients"] - 32) / 12) ** 2),
        lambda x: 1.0,
        "the current clients = 32 is the optimum",
    ),
)


def true_optimum(surface: Surface, rng: np.random.Generator, samples: int = 40000) -> float:
    """The best objective over random points of the space plus the current point."""
    best = surface.objective(surface.current)
    for _ in range(samples):
        x: Point = {}
        for k in surface.knobs:
            if k.type == "choice":
                x[k.name] = str(rng.choice(k.choices))
            elif k.log:
                x[k.name] = math.exp(rng.uniform(math.log(k.low), math.log(k.high)))
            else:
                x[k.name] = rng.uniform(k.low, k.high)
            if k.type == "int":
                x[k.name] = float(round(x[k.name]))
        best = max(best, surface.objective(x))
    return best


def simulated_run(surface: Surface, config: Config, rng: np.random.Generator) -> Outcome:
    x = surface.point(config)
    failed = rng.random() < surface.rate(x)
    seconds = surface.duration(x) * float(rng.lognormal(0.0, 0.1))
    return Outcome("sim", config.key, 0, TrialStatus.OK, int(failed), 1, duration_s=seconds)


@dataclass(frozen=True)
class SearchOutcome:
    share: float
    best_seen: float  # the truly best settings the search ran at all, over the optimum: exploration's limit
    confirmed: bool
    truly_better: bool
    speedup: float  # true objective ratio, picked over current
    confirm_runs: int


Overrides = tuple[tuple[str, float], ...]
SAMPLERS = ("random", "tpe", "gp")  # in this order: a search's simulated runs are seeded by the index


def one_search(surface_index: int, sampler: str, budget: int, seed: int, overrides: Overrides = ()) -> SearchOutcome:
    """One search and its confirmation; ``overrides`` replace fields of the spec's search settings."""
    surface = SURFACES[surface_index]
    rng = np.random.default_rng([seed, surface_index, SAMPLERS.index(sampler)])
    amplify = Amplify(knobs=list(surface.knobs), max_runs=budget, sampler=sampler, seed=seed)
    study = new_optuna_study(f"sim-{seed}", amplify, None)
    search = Search(CURRENT, replace(search_settings(amplify), **dict(overrides)))
    drive_in_order(OptunaSearch(study, amplify, search), lambda config, _: simulated_run(surface, config, rng))
    best = search.best()
    optimum = OPTIMA[surface_index]
    value, current = surface.objective(surface.point(best)), surface.objective(surface.current)
    confirmed, runs = False, 0
    if best != CURRENT:
        confirmation = Confirmation(best, CURRENT, ConfirmSettings(max_runs=200))
        runs = len(drive_in_order(confirmation, lambda config, _: simulated_run(surface, config, rng), slots=2))
        confirmed = confirmation.claim is Claim.CONFIRMED
    best_seen = max(surface.objective(surface.point(c)) for c in search.candidates) / optimum
    return SearchOutcome(value / optimum, best_seen, confirmed, value > current * (1 + 1e-9), value / current, runs)


def chunk(task: tuple[int, str, int, range, Overrides]) -> list[SearchOutcome]:
    surface_index, sampler, budget, seeds, overrides = task
    return [one_search(surface_index, sampler, budget, s, overrides) for s in seeds]


OPTIMA = [true_optimum(s, np.random.default_rng(0)) for s in SURFACES]


def bisection_cost(task: tuple[float, range]) -> list[int]:
    p, seeds = task
    return [simulate_bisection(256, p, 0.0, Settings(p_bad=p, p_good=0.0), np.random.default_rng(s))[0].trials
            for s in seeds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=50, help="per surface and sampler")
    parser.add_argument("--budget", type=int, default=300, help="search runs (the current settings' included)")
    parser.add_argument("--bisections", type=int, default=60, help="per rate in table 3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samplers", nargs="+", default=["gp", "tpe", "random"], choices=SAMPLERS)
    parser.add_argument("--surfaces", nargs="+", type=int, default=list(range(len(SURFACES))),
                        help="indices into the surfaces (0 race, 1 load, 2 flat, 3 current best)")
    parser.add_argument("--skip-bisection-table", action="store_true")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE",
                        help="override a search setting, e.g. max_candidate_runs=12 final_share=0.2 finalists=5")
    args = parser.parse_args()
    started = time.monotonic()
    size = 5
    # random search as the reference where there is an optimum to find (not on flat / current best)
    rows = [(i, sampler) for i in args.surfaces for sampler in args.samplers if sampler != "random" or i < 2]
    overrides = tuple((k, float(v) if "." in v else int(v)) for k, v in (item.split("=", 1) for item in args.set))
    tasks = [(i, sampler, args.budget, range(args.seed + s, args.seed + min(s + size, args.searches)), overrides)
             for i, sampler in rows for s in range(0, args.searches, size)]
    with ProcessPoolExecutor(args.workers) as pool:
        done = list(pool.map(chunk, tasks))
    results: dict[tuple[int, str], list[SearchOutcome]] = {}
    for task, outs in zip(tasks, done):
        results.setdefault(task[:2], []).extend(outs)
    print(f"## 1-2. Search and confirmation ({args.searches} searches per row, {args.budget} search runs each, "
          "confirmation up to 200 runs per arm, confidence 0.95)\n")
    print("| surface | sampler | share of optimum: mean | p10 | >= 90% | best evaluated: mean | current / optimum | "
          "confirmed | false claims | confirm runs (mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for i, sampler in rows:
        surface = SURFACES[i]
        outs = results[(i, sampler)]
        share = np.array([o.share for o in outs])
        false = sum(o.confirmed and not o.truly_better for o in outs)
        print(f"| {surface.name} | {sampler} | {share.mean():.3f} | {np.percentile(share, 10):.3f} | "
              f"{np.mean(share >= 0.9):.2f} | {np.mean([o.best_seen for o in outs]):.3f} | "
              f"{surface.objective(surface.current) / OPTIMA[i]:.3f} | "
              f"{np.mean([o.confirmed for o in outs]):.2f} | {false}/{len(outs)} | "
              f"{np.mean([o.confirm_runs for o in outs]):.0f} |")
    print("\nSurfaces: " + "; ".join(f"{s.name}: {s.description}" for s in SURFACES))
    if args.skip_bisection_table:
        print(f"\n{time.monotonic() - started:.0f} s with {args.workers} workers")
        return
    print(f"\n## 3. Bisection cost against the objective (N = 256, q = 0, given rates, {args.bisections} "
          "searches per row)\n")
    print("| p | mean trials | C(p) bits | trials x C(p) | -log2(1-p) | trials x -log2(1-p) |")
    print("|---|---|---|---|---|---|")
    rates = (0.02, 0.05, 0.15, 0.3, 0.6)
    with ProcessPoolExecutor(args.workers) as pool:
        costs = list(pool.map(bisection_cost, [(p, range(args.bisections)) for p in rates]))
    for p, trials in zip(rates, costs):
        mean = float(np.mean(trials))
        c, kl = float(capacity(p)), -math.log2(1 - p)
        print(f"| {p} | {mean:.0f} | {c:.4f} | {mean * c:.2f} | {kl:.4f} | {mean * kl:.2f} |")
    print(f"\n{time.monotonic() - started:.0f} s with {args.workers} workers")


if __name__ == "__main__":
    main()
