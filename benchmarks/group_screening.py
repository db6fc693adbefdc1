"""Calibration and cost of group screening over many flags, by simulation.

    nice -n 10 python benchmarks/group_screening.py --studies 200
    python benchmarks/group_screening.py --all --workers 16 --log gs.jsonl --time-limit 480   # resumable

Each study: N boolean flags (64, 256, 512); 1 or 3 eliminators, or an OR pair (two
independent causes, each removed by one flag: each alone only reduces, together they
eliminate); one breaker (exit 125) in every study; the rest inert. The baseline fails in
15% or 50% of runs; a failed run corrupts a correlated share of its 60 sessions.
Studies run in process (`GroupScreening` fed simulated outcomes drawn with numpy, no
subprocesses), one trial at a time, 0.05-1 CPU second a study (the *cpu s* column: the mean).
With ``--log`` each study (and each one-at-a-time estimate) is a JSON line appended as it ends;
a run skips what the log holds, so it can be stopped (``--time-limit``: no study starts after
it) and resumed, and ``--table-only`` tabulates a log. ``--all`` runs every row, most useful first.

Columns: *all right*: every change's verdict right (an OR member may be `reduces` or
`no_effect`: alone it keeps 52% (15% baseline) or 59% (50%) of the failing runs, inside the
no-effect margin of 50%; `inconclusive` is not right); *any wrong*:
any claim contradicting the truth (the family-wise error the confidence bounds); *OR found*:
the pair confirmed as an eliminating combination; *trials*: mean per study; *1-at-a-time*:
the same studies screened one arm per flag (`Screening`), estimated from a screening of the
effects, the breaker and 16 inert flags, its inert arms' mean cost scaled to all inert flags;
*ratio*; *floor*: log2 C(N, k) / C, the information needed to locate the k eliminators
(or the pair) over a Z channel of capacity C bits per run (one failed run proves a group
clean; a group with an eliminator never fails).

``--near``: the rows of issue 23 instead: a near-zero reducer (its run-failure rate 0.5%, 2% or
8% against baselines of 15%, 50% and 94%) beside 1-3 eliminators and a breaker, among 64 or 256
flags (``--factors``); and a *contention* row (64 flags, 3 eliminators, the reducer at 2% under a
94% baseline as at 8 trials per GPU, while alone it eliminates and the baseline fails 40%): the
study's decided eliminators and reducers re-screened one at a time under the alone truth, as
``execution.recheck_parallel`` does; *found* is then the share of studies that flag exactly the
reducer as depending on contention, and *trials* include the re-check's. A near-zero reducer is
right as ``reduces``, or as ``eliminates`` when its rate is below zero_rate (the tool's definition
of eliminates; so *any wrong* counts an ``eliminates`` wrong when the change's rate is at or above
zero_rate). *any wrong* is a count of studies; *worst* the most trials one study took.

``--shape128``: issue 38's row: 128 flags, a baseline failing 30% of runs, two eliminators, one
reducer (0.30 -> 0.12), one breaker and 124 inert flags (``128 near2@0.12``); ``--all`` runs it
first. *median* is the median trials per study, *x floor* the mean over the floor. ``--parts`` adds a
table of where the trials went (`TrialCost`: baseline, search, clearing, own arms, reductions; the
median per study of each part).

``--exact`` keeps the permutation test of `stats.difference_pvalue` at every look; by default
the benchmark uses its large-sample approximation (the pooled t test, which the code itself
switches to above 240 runs) at every look, to fit the time budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heisenbisect.decide import stats
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.flag_simulation import FlagTruth, scenario
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict
from heisenbisect.simulation import FailureModel
from heisenbisect.testing.strategy_kit import drive_in_order

SCREENING = ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=960, first_look=15)
SETTINGS = GroupSettings(SCREENING)
INERT_SAMPLE = 16
ALONE_RATE = 0.4  # the contention row's baseline alone (the GPU race: 42.5% alone, 94% at 8 per GPU)
SEED = 1  # studies' seeds: SEED * 1 000 000 + 1000 i, as before the log existed
# issue 38: its reducer 0.30 -> 0.12, two eliminators, a breaker; at the settings of the run the issue
# describes (max_trials 320, first_look 10: a spec's defaults with `max_trials: 320`)
SHAPE128 = (128, "near2", 0.30, 0.12, 320, 10)
NEAR_ROWS = [(n, near, rate) for near, rate in ((0.005, 0.15), (0.02, 0.5), (0.08, 0.94)) for n in (1, 2, 3)]


@dataclass(frozen=True)
class Row:
    factors: int
    kind: str  # elim1, elim3, or_pair; near1, near2, near3 (a near-zero reducer beside 1-3 eliminators); contention
    rate: float
    near: float | None = None  # the near-zero reducer's run-failure rate (near and contention rows)
    max_trials: int = SCREENING.max_trials
    first_look: int = SCREENING.first_look

    @property
    def screening(self) -> ScreeningSettings:
        return dataclasses.replace(SCREENING, max_trials=self.max_trials, first_look=self.first_look)

    def truth(self, seed: int) -> FlagTruth:
        if self.near is not None:
            eliminators = 3 if self.kind == "contention" else int(self.kind[-1])
            return scenario(self.factors, self.rate, eliminators, reducer=self.near / self.rate, seed=seed)
        eliminators = {"elim1": 1, "elim3": 3, "or_pair": 0}[self.kind]
        return scenario(self.factors, self.rate, eliminators, self.kind == "or_pair", seed=seed)

    def alone(self, truth: FlagTruth) -> FlagTruth:
        """The contention row's other placement: one trial per GPU, where the near-zero reducer
        (eager decoding on the GPU race) removes the race and the baseline fails less often."""
        (reducer, _), = truth.reducers
        return dataclasses.replace(
            truth, causes=((None, ALONE_RATE),), eliminators=truth.eliminators | {reducer}, reducers=()
        )

    @property
    def located(self) -> int:
        if self.near is not None:
            return 4 if self.kind == "contention" else int(self.kind[-1]) + 1
        return {"elim1": 1, "elim3": 3, "or_pair": 2}[self.kind]


def pooled_t(arm: np.ndarray, baseline: np.ndarray, seed: int = 0) -> float:
    if len(arm) == 0 or len(baseline) == 0 or np.ptp(np.concatenate([arm, baseline])) == 0:
        return 1.0
    return stats.pooled_t_pvalue(arm, baseline)


class FastTarget:
    """`FlagTruth.outcome` drawn with numpy: the same distribution (a run fails with the config's
    rate; a failed run corrupts Binomial(sessions, Beta share) sessions, at least one), each
    config's rate computed once. The benchmark draws hundreds of thousands of runs."""

    def __init__(self, truth: FlagTruth, seed: int):
        self.truth = truth
        self.rng = np.random.default_rng(seed)
        self.rates: dict[Config, float | None] = {}
        self.keys: dict[Config, str] = {}
        model = FailureModel(0.0, truth.sessions, truth.severity)
        self.beta = (model.severity * model.concentration, model.concentration * (1 - model.severity))

    def outcome(self, config: Config, index: int) -> Outcome:
        if config not in self.keys:
            self.keys[config] = config.key
            self.rates[config] = None if set(config.changes) & self.truth.breakers else self.truth.run_rate(config)
        rate, key = self.rates[config], self.keys[config]
        if rate is None:
            return Outcome(f"t{index}", key, index, TrialStatus.SKIP, detail="exit 125", log_path=f"logs/t{index}.log")
        failures = 0
        if self.rng.random() < rate:
            failures = max(1, int(self.rng.binomial(self.truth.sessions, self.rng.beta(*self.beta))))
        return Outcome(f"t{index}", key, index, TrialStatus.OK, failures, self.truth.sessions)


def drive(strategy, truth: FlagTruth, seed: int) -> int:
    """Run a strategy to its end against simulated outcomes, one trial at a time; the trials used."""
    return len(drive_in_order(strategy, FastTarget(truth, seed).outcome))


def run_group(truth: FlagTruth, seed: int, settings: GroupSettings = SETTINGS) -> tuple[GroupScreening, int]:
    strategy = GroupScreening(Config(), list(truth.changes), settings)
    return strategy, drive(strategy, truth, seed)


def ratio_of(truth: FlagTruth, change) -> float:
    return truth.run_rate(Config((change,))) / truth.run_rate(Config())


def wrong_claim(truth: FlagTruth, change, verdict: str) -> bool:
    """A claim the truth contradicts; ``eliminates`` by the tool's own definition: a run-failure
    rate below zero_rate (a near-zero reducer at 2% may be claimed so, one at 8% may not)."""
    expected = truth.expected[change]
    if verdict in ("inconclusive",):
        return False
    if expected == "untestable" or verdict == "untestable":
        return verdict != expected
    ratio = ratio_of(truth, change)
    return {
        "eliminates": truth.run_rate(Config((change,))) >= SCREENING.zero_rate,
        "reduces": ratio >= 1,
        "increases": ratio <= 1,
        "no_effect": not 1 - SCREENING.min_reduction <= ratio <= 1 / (1 - SCREENING.min_reduction),
    }.get(verdict, True)


def right(truth: FlagTruth, change, verdict: str) -> bool:
    expected = truth.expected[change]
    if expected == "reduces":
        return verdict in ("reduces", "no_effect", "eliminates") and not wrong_claim(truth, change, verdict)
    return verdict == expected


def recheck(truth: FlagTruth, decided: dict, seed: int) -> tuple[dict, int]:
    """The contention re-check: the decided eliminators and reducers screened one at a time at
    the other placement (`studies.contention`); their verdicts there, and its trials."""
    changes = [c for c, v in decided.items() if v in ("eliminates", "reduces")]
    screening = Screening(Config(), [Config((c,)) for c in changes], SCREENING)
    trials = drive(screening, truth, seed)
    result = screening.result()
    return {a.config.changes[0]: a.verdict.value for a in result.arms}, trials


def one_group_study(args: tuple[Row, int]) -> dict:
    row, seed = args
    truth = row.truth(seed)
    strategy, trials = run_group(truth, seed + 1, dataclasses.replace(SETTINGS, screening=row.screening))
    result = strategy.result()
    verdicts = {v.change: v.verdict for v in result.changes}
    combos = [c for c in result.combinations if c.verdict is Verdict.ELIMINATES]
    wrong_combo = any(truth.run_rate(Config(tuple(sorted(c.changes)))) >= SCREENING.zero_rate for c in combos)
    pair = {c for c, v in truth.expected.items() if v == "reduces"} if row.kind == "or_pair" else set()
    found = {
        "right": all(right(truth, c, v) for c, v in verdicts.items()),
        "wrong": wrong_combo or any(wrong_claim(truth, c, v) for c, v in verdicts.items()),
        "or_found": bool(pair) and any(set(c.changes) == pair for c in combos),
        "trials": trials,
        "contention": None,
        "parts": dataclasses.asdict(result.cost) if getattr(result, "cost", None) else None,
    }
    if row.kind == "contention":  # right: the reducer flagged, the eliminators holding, nothing wrong alone
        alone = row.alone(truth)
        again, more = recheck(alone, verdicts, seed + 3)
        (reducer, _), = truth.reducers
        flagged = {c for c, v in again.items() if v != verdicts[c]}
        found["contention"] = flagged == {reducer}
        found["wrong"] = found["wrong"] or any(wrong_claim(alone, c, v) for c, v in again.items())
        found["trials"] += more
    return found


def one_at_a_time_cost(args: tuple[Row, int]) -> float:
    """Trials one-at-a-time screening spends on the study, from a sample of its inert arms."""
    row, seed = args
    truth = row.truth(seed)
    special = [c for c, v in truth.expected.items() if v != "no_effect"]
    inert = [c for c, v in truth.expected.items() if v == "no_effect"][:INERT_SAMPLE]
    screening = Screening(Config(), [Config((c,)) for c in special + inert], row.screening)
    drive(screening, truth, seed + 2)
    by_config = {config: ev for config, ev, _ in screening.in_progress()}
    special_cost = sum(by_config[Config((c,))].attempts for c in special)
    inert_mean = np.mean([by_config[Config((c,))].attempts for c in inert])
    baseline = by_config[Config()].attempts
    return baseline + special_cost + inert_mean * (row.factors - len(special))


def z_channel_capacity(clean_rate: float) -> float:
    """Bits per run of a test that reads 'clean' for a group with an eliminator and fails with
    probability p = 1 - clean_rate otherwise (a Z channel), maximised over the input split."""
    best = 0.0
    for q in np.linspace(0.001, 0.999, 999):  # q: share of tests whose group holds no eliminator
        fail = q * (1 - clean_rate)
        h = lambda x: 0.0 if x <= 0 or x >= 1 else -x * math.log2(x) - (1 - x) * math.log2(1 - x)  # noqa: E731
        best = max(best, h(fail) - q * h(1 - clean_rate))
    return best


def floor(row: Row) -> float:
    return math.log2(math.comb(row.factors, row.located)) / z_channel_capacity(1 - row.rate)


def rows_of(args: argparse.Namespace) -> list[Row]:
    """The rows to run, in the order that gives the most useful rows first: issue 23's near-zero rows
    and the contention row, then the OR pair's (the costliest), then the eliminators', 512 flags last."""
    near = [Row(f, f"near{n}", rate, near) for f in args.factors if f <= 256 for n, near, rate in NEAR_ROWS]
    contention = [Row(64, "contention", 0.94, 0.02)]
    shape = [Row(*SHAPE128)]
    if args.shape128 and not args.all:
        return shape + (near + contention if args.near else [])
    kinds = sorted(args.kinds, key=lambda k: k != "or_pair")
    old = [Row(f, kind, rate) for f in args.factors for kind in kinds for rate in args.rates]
    if args.all:
        old = sorted(old, key=lambda r: (r.factors > 256, r.kind != "or_pair"))
        return shape + near[: len(NEAR_ROWS)] + contention + near[len(NEAR_ROWS) :] + old
    return near + contention if args.near else old


def key(row: Row) -> str:
    kind = row.kind if row.near is None else f"{row.kind}@{row.near:g}"
    name = f"{row.factors}/{kind}/{row.rate:g}"
    return name if row.screening == SCREENING else f"{name}/{row.max_trials}/{row.first_look}"


def timed(task: tuple[str, Row, int]) -> dict:
    """One study (``group``) or one one-at-a-time estimate (``alone``), with the CPU seconds it took."""
    what, row, seed = task
    started = time.process_time()
    line = one_group_study((row, seed)) if what == "group" else {"trials": one_at_a_time_cost((row, seed))}
    return {"row": key(row), "what": what, "seed": seed, **line, "cpu_s": round(time.process_time() - started, 3)}


def read_log(path: Path | None) -> list[dict]:
    if path is None or not path.exists():
        return []
    lines = []
    for number, text in enumerate(path.read_text().splitlines(), 1):
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError:  # a line cut by a killed run: skipped, and run again
            print(f"{path}:{number}: not a JSON line, ignored", file=sys.stderr)
    return lines


def table(rows: list[Row], lines: list[dict], studies: int, baseline_studies: int) -> None:
    """One line per row from the logged studies (the first ``studies`` seeds of each, and the first
    ``baseline_studies`` one-at-a-time estimates); rows without studies are left out."""
    print(f"settings: {SCREENING} (a row marked /N: max_trials N, first_look 10); "
          f"group size: Hwang's for 2 effects; miss_rate {SETTINGS.miss_rate}")
    header = (f"{'factors':>7} {'truth':<15} {'rate':>5} {'studies':>7} {'all right':>9} {'any wrong':>9} {'found':>8} "
              f"{'trials':>7} {'median':>6} {'worst':>6} {'1-at-a-time':>11} {'ratio':>6} {'floor':>6} "
              f"{'x floor':>7} {'cpu s':>6}")
    print(header)
    print("-" * len(header))
    for row in rows:
        seeds = seeds_of(studies)
        mine = {(x["what"], x["seed"]): x for x in lines if x["row"] == key(row)}
        runs = [mine[("group", s)] for s in seeds if ("group", s) in mine]
        alone = [mine[("alone", s)]["trials"] for s in seeds[:baseline_studies] if ("alone", s) in mine]
        if not runs or not alone:
            continue
        trials = np.mean([r["trials"] for r in runs])
        found = "-"
        if row.kind == "or_pair":
            found = f"{np.mean([r['or_found'] for r in runs]):.1%}"
        elif row.kind == "contention":
            found = f"{np.mean([r['contention'] for r in runs]):.1%}"
        truth = f"{row.kind}@{row.near:g}" if row.near is not None else row.kind
        truth += "" if row.screening == SCREENING else f"/{row.max_trials}"
        print(
            f"{row.factors:>7} {truth:<15} {row.rate:>5.2f} {len(runs):>7} {np.mean([r['right'] for r in runs]):>9.1%} "
            f"{sum(r['wrong'] for r in runs):>9d} {found:>8} {trials:>7.0f} "
            f"{np.median([r['trials'] for r in runs]):>6.0f} {max(r['trials'] for r in runs):>6d} "
            f"{np.mean(alone):>11.0f} {trials / np.mean(alone):>6.3f} {floor(row):>6.0f} "
            f"{trials / floor(row):>7.1f} {np.mean([r['cpu_s'] for r in runs]):>6.1f}",
            flush=True,
        )


def parts_table(rows: list[Row], lines: list[dict], studies: int) -> None:
    """Where each row's trials went: the median per study of each part (`TrialCost`), and the mean."""
    names = ("baseline", "search", "clearing", "own_arms", "reductions")
    header = f"{'factors':>7} {'truth':<15} {'rate':>5} " + " ".join(f"{n:>10}" for n in names) + f" {'mean':>7}"
    print("\nwhere the trials went (median per study):")
    print(header)
    print("-" * len(header))
    for row in rows:
        mine = {x["seed"]: x for x in lines if x["row"] == key(row) and x["what"] == "group" and x.get("parts")}
        runs = [mine[s]["parts"] for s in seeds_of(studies) if s in mine]
        if not runs:
            continue
        truth = f"{row.kind}@{row.near:g}" if row.near is not None else row.kind
        truth += "" if row.screening == SCREENING else f"/{row.max_trials}"
        cells = " ".join(f"{np.median([r[n] for r in runs]):>10.0f}" for n in names)
        print(f"{row.factors:>7} {truth:<15} {row.rate:>5.2f} {cells} {np.mean([sum(r.values()) for r in runs]):>7.0f}")


def seeds_of(studies: int) -> list[int]:
    return [SEED * 1_000_000 + 1000 * i for i in range(studies)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--baseline-studies", type=int, default=10,
                        help="studies per row for the one-at-a-time estimate")
    parser.add_argument("--factors", type=int, nargs="*", default=[64, 256, 512])
    parser.add_argument("--kinds", nargs="*", default=["elim1", "elim3", "or_pair"])
    parser.add_argument("--rates", type=float, nargs="*", default=[0.15, 0.5])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--exact", action="store_true", help="permutation tests at every look (slow)")
    parser.add_argument("--near", action="store_true", help="the near-zero reducer rows and the contention row instead")
    parser.add_argument("--all", action="store_true",
                        help="the near-zero rows, the contention row and the old rows, most useful first")
    parser.add_argument("--shape128", action="store_true",
                        help="issue 38's 128-flag row (with --near: and the near-zero rows)")
    parser.add_argument("--parts", action="store_true",
                        help="also a table of where the trials went, by part of the search")
    parser.add_argument("--log", type=Path,
                        help="JSON lines, one per study, appended as each ends; studies in it are not run again")
    parser.add_argument("--time-limit", type=float,
                        help="wall seconds after which no study starts (the running ones end first)")
    parser.add_argument("--table-only", action="store_true", help="print the table from --log without running anything")
    args = parser.parse_args()
    if not args.exact:
        stats.difference_pvalue = pooled_t
    rows = rows_of(args)
    lines = read_log(args.log)
    if not args.table_only:
        lines += run(rows, args, {(x["row"], x["what"], x["seed"]) for x in lines})
    table(rows, lines, args.studies, args.baseline_studies)
    if args.parts:
        parts_table(rows, lines, args.studies)


def run(rows: list[Row], args: argparse.Namespace, done: set) -> list[dict]:
    """Every study not in the log yet, row by row, on ``workers`` processes; each line logged as it
    ends. A worker that dies (killed for memory) ends the run with a message: run it again to resume."""
    tasks = []
    for row in rows:
        seeds = seeds_of(args.studies)
        tasks += [("alone", row, s) for s in seeds[: args.baseline_studies]] + [("group", row, s) for s in seeds]
    tasks = [t for t in tasks if (key(t[1]), t[0], t[2]) not in done]
    started, lines = time.monotonic(), []
    out = args.log.open("a") if args.log else None
    if out and out.tell() and not args.log.read_bytes().endswith(b"\n"):
        out.write("\n")  # a line cut by a killed run stays alone on its line (read_log skips it)
    pending, running = iter(tasks), set()
    with ProcessPoolExecutor(args.workers) as pool:
        try:
            while True:
                while len(running) < 2 * args.workers and (
                    args.time_limit is None or time.monotonic() - started < args.time_limit
                ):
                    task = next(pending, None)
                    if task is None:
                        break
                    running.add(pool.submit(timed, task))
                if not running:
                    break
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    lines.append(line := future.result())
                    if out:
                        out.write(json.dumps(line) + "\n")
                        out.flush()
        except BrokenProcessPool:
            print("a worker process died (killed for memory?): run the same command again to resume", file=sys.stderr)
    print(f"{len(lines)} studies run in {time.monotonic() - started:.0f} s wall; {len(tasks) - len(lines)} left",
          file=sys.stderr)
    return lines


if __name__ == "__main__":
    main()
