"""Commit bisection side by side with git-bayesect's `Bisector`, on the same simulated runs.

Per cell (N candidates, bad rate p, good rate q, mode), each search draws a culprit uniformly among
the N candidates and a stream of uniforms per commit: the k-th run at commit c fails iff the k-th
uniform of c's stream is below p (c at or after the culprit) or q (before it, and the good end).
Both tools see exactly these runs (common random numbers): the real `CommitStrategy`, one probe at
a time, and git-bayesect 1.2's `Bisector` driven in-process as its `git bayesect run` drives it
(prior weight 1 on every commit of the range, the old end included; Jeffreys priors on both rates;
stop when one commit holds 0.95). Both learn p and q; heisenbisect spends its default
`bad_end_trials` (10) runs at the bad end first, counted. "stored K" modes give both tools K runs at
the bad end first (failures drawn at p), not counted in the trials, as runs `bisect run` or `bisect
amplify` stored before the bisection (they replace heisenbisect's 10 first runs); "learned, none
forced" is heisenbisect with no runs at the bad end up front (information gain alone decides when to
run it), to measure what the forced spending buys; "given p and q", "given p" and "given q" are
heisenbisect told the true rate(s), to measure what learning them costs.

Accuracy is the share of searches whose answer is the true culprit, over all searches (a search
that hits --max-trials counts as wrong); its Wilson 95% interval is shown. Each finished search is
appended to --log (JSON lines) at once, so a long grid can be stopped, resumed (searches already
in the log are skipped) and tabulated with --table-only.

    pip install -e '.[bench]'    # git-bayesect, a benchmark-only dependency
    .venv/bin/python benchmarks/bisection_peer.py --sizes 64 300 --searches 300 --workers 2
    .venv/bin/python benchmarks/bisection_peer.py --table-only
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

# one BLAS thread per worker: the small matrix products of both tools thrash when each worker's
# BLAS starts a thread per core (10x slower per trial on a loaded 2-core machine)
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import numpy as np  # noqa: E402
from git_bayesect import Bisector  # noqa: E402
from scipy.stats import binomtest, fisher_exact  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bisection import fano_floor  # noqa: E402
from heisenbisect.decide.commits import CommitStrategy, Settings, State  # noqa: E402
from heisenbisect.records import Config, Outcome, TrialStatus  # noqa: E402
from heisenbisect.testing.strategy_kit import drive_in_order  # noqa: E402

SIZES = (64, 300, 1200, 4096)
RATES_BAD = (0.02, 0.05, 0.15, 0.3)
RATES_GOOD = (0.0, 0.01)
MODES = ("learned", "stored 40", "stored 160", "learned, none forced", "given p and q", "given p", "given q")
OURS_ONLY = MODES[3:]  # git-bayesect has no such setting
CONFIDENCE = 0.95
LOG = Path(__file__).resolve().parent / "results" / "bisection-peer.jsonl"
TOOLS = ("heisenbisect", "git-bayesect")
# heisenbisect's rows carry the strategy they measured; rows of an older one are neither resumed
# nor tabulated (git-bayesect's stay valid). 1: one-step gains only (rows without the field);
# 2: the two ends valued by blocks of runs (decide/ends.py)
STRATEGY = 2


class Runs:
    """The simulated flaky test of one search: the same outcomes for whichever tool asks."""

    def __init__(self, n: int, p: float, q: float, seed: int):
        self.n, self.p, self.q, self.seed = n, p, q, seed
        self.culprit = int(np.random.default_rng([seed, 0]).integers(n))

    def stream(self, commit: int) -> np.random.Generator:
        """A fresh stream of commit ``commit``'s uniforms (-1: the good end); each tool takes its own."""
        return np.random.default_rng([self.seed, 1, commit + 1])

    def stored(self, count: int) -> int:
        """Failures among ``count`` runs an earlier study stored at the bad end (not the search's runs)."""
        return int((np.random.default_rng([self.seed, 2]).random(count) < self.p).sum())

    def rate(self, commit: int) -> float:
        return self.p if commit >= self.culprit else self.q


class Tape:
    """One tool's reading of `Runs`: the k-th run at a commit is the k-th uniform of its stream."""

    def __init__(self, runs: Runs):
        self.runs = runs
        self._streams: dict[int, np.random.Generator] = {}

    def run(self, commit: int) -> bool:
        stream = self._streams.get(commit)
        if stream is None:
            stream = self._streams[commit] = self.runs.stream(commit)
        return bool(stream.random() < self.runs.rate(commit))


def heisenbisect(runs: Runs, stored: int, forced: int, max_trials: int, given: str = "") -> tuple[int, bool]:
    """The real strategy, one probe at a time: (trials, right); ``given`` names the rates it is told."""
    settings = Settings(p_bad=runs.p if "p" in given else None, p_good=runs.q if "q" in given else None,
                        confidence=CONFIDENCE, max_trials=max_trials, bad_end_trials=forced,
                        stored_bad_runs=stored, stored_bad_failures=runs.stored(stored))
    strategy = CommitStrategy([f"c{i}" for i in range(runs.n)], "good", settings)
    tape = Tape(runs)

    def outcome(config: Config, _: int) -> Outcome:
        commit = -1 if config.commit == "good" else int(config.commit[1:])
        return Outcome("sim", config.key, 0, TrialStatus.OK, int(tape.run(commit)), 1)

    drive_in_order(strategy, outcome)
    result = strategy.result()
    return result.trials, result.state is State.FOUND and result.culprit == runs.culprit


def git_bayesect(runs: Runs, stored: int, max_trials: int) -> tuple[int, bool]:
    """git-bayesect's Bisector as `git bayesect run` drives it: (trials, right). Its index 0 is the
    newest commit (our bad end, c_{N-1}), its index N the old end (our good end)."""
    n = runs.n
    bisector = Bisector(np.ones(n + 1))
    failed = runs.stored(stored)
    for k in range(stored):
        bisector.record(0, k < failed)
    tape = Tape(runs)
    trials = 0
    while trials < max_trials:
        index = bisector.select()
        commit = -1 if index == n else n - 1 - index
        bisector.record(index, tape.run(commit))
        trials += 1
        if bisector.distribution.max() >= CONFIDENCE:
            answer = int(np.argmax(bisector.distribution))
            return trials, answer < n and n - 1 - answer == runs.culprit
    return trials, False


def one_search(task: tuple[str, int, float, float, str, int, int]) -> dict:
    tool, n, p, q, mode, seed, max_trials = task
    runs = Runs(n, p, q, seed)
    stored = int(mode.split()[1]) if mode.startswith("stored") else 0
    started = time.process_time()
    if tool == "heisenbisect":
        given = mode.removeprefix("given ") if mode.startswith("given") else ""
        trials, right = heisenbisect(runs, stored, 0 if mode.endswith("forced") else 10, max_trials, given)
    else:
        trials, right = git_bayesect(runs, stored, max_trials)
    row = {"tool": tool, "n": n, "p": p, "q": q, "mode": mode, "seed": seed, "trials": trials,
           "right": right, "cpu_s": round(time.process_time() - started, 3)}
    return row | ({"strategy": STRATEGY} if tool == "heisenbisect" else {})


def read_log(path: Path) -> list[dict]:
    """The log's rows that measure the tools as they are now."""
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["tool"] != "heisenbisect" or r.get("strategy", 1) == STRATEGY]


def key(row: dict) -> tuple:
    return row["tool"], row["n"], row["p"], row["q"], row["mode"], row["seed"]


def table(rows: list[dict]) -> str:
    """Per cell: both tools' accuracy (Wilson interval) and mean trials, on seeds 0..k-1, the longest
    run of seeds from 0 that both finished: a run stopped midway has finished the short searches of
    later seeds and not yet the long ones of earlier seeds, and those must not enter a mean. Below
    it, the cells where heisenbisect was right less often than git-bayesect, with Fisher's exact p
    (the goal is "no lower than the peer": by chance, or not)."""
    cells: dict[tuple, dict[str, dict[int, dict]]] = {}
    for row in rows:
        cells.setdefault((row["mode"], row["n"], row["p"], row["q"]), {}).setdefault(row["tool"], {})[row["seed"]] = row
    out = ["| mode | N | p | q | searches | heisenbisect accuracy (95% CI) | git-bayesect accuracy (95% CI) "
           "| heisenbisect trials | git-bayesect trials | ratio | Fano floor |", "|" + "---|" * 11]
    below = []
    for (mode, n, p, q), tools in sorted(cells.items(), key=lambda c: (MODES.index(c[0][0]), *c[0][1:])):
        ours, peer = tools.get("heisenbisect", {}), tools.get("git-bayesect", {})
        seeds = prefix(set(ours) & set(peer) if mode not in OURS_ONLY else set(ours))
        if not seeds:
            continue
        ours_acc, ours_trials = accuracy(ours, seeds), np.mean([ours[s]["trials"] for s in seeds])
        if mode in OURS_ONLY:
            peer_acc, peer_trials, ratio = "-", "-", "-"
        else:
            peer_acc = accuracy(peer, seeds)
            mean_peer = np.mean([peer[s]["trials"] for s in seeds])
            peer_trials, ratio = f"{mean_peer:.1f}", f"{ours_trials / mean_peer:.2f}"
            ours_right, peer_right = (sum(tool[s]["right"] for s in seeds) for tool in (ours, peer))
            if ours_right < peer_right:
                k = len(seeds)
                chance = fisher_exact([[ours_right, k - ours_right], [peer_right, k - peer_right]]).pvalue
                below.append(f"- {mode}, N {n}, p {p}, q {q}: {ours_right} against {peer_right} of {k} "
                             f"(Fisher's exact p = {chance:.2f})")
        out.append(f"| {mode} | {n} | {p} | {q} | {len(seeds)} | {ours_acc} | {peer_acc} | {ours_trials:.1f} "
                   f"| {peer_trials} | {ratio} | {fano_floor(n, p, q):.0f} |")
    if below:
        out += ["", "heisenbisect right less often than git-bayesect:", *below]
    return "\n".join(out)


def prefix(seeds: set[int]) -> list[int]:
    """0, 1, ... up to the first seed missing."""
    k = 0
    while k in seeds:
        k += 1
    return list(range(k))


def accuracy(rows: dict[int, dict], seeds: list[int]) -> str:
    right = sum(rows[s]["right"] for s in seeds)
    interval = binomtest(right, len(seeds)).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = interval.low, interval.high
    return f"{right / len(seeds):.3f} ({low:.3f}-{high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--rates-bad", nargs="+", type=float, default=list(RATES_BAD))
    parser.add_argument("--rates-good", nargs="+", type=float, default=list(RATES_GOOD))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["learned"])
    parser.add_argument("--tools", nargs="+", choices=TOOLS, default=list(TOOLS))
    parser.add_argument("--searches", type=int, default=300, help="per cell and tool")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--max-trials", type=int, default=60_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--log", type=Path, default=LOG)
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    done = {key(row) for row in read_log(args.log)}
    tasks = [(tool, n, p, q, mode, seed, args.max_trials)
             for seed in range(args.first_seed, args.first_seed + args.searches)
             for mode in args.modes for n in args.sizes for p in args.rates_bad for q in args.rates_good
             for tool in args.tools
             if not (mode in OURS_ONLY and tool != "heisenbisect")]
    tasks = [t for t in tasks if (t[0], t[1], t[2], t[3], t[4], t[5]) not in done]
    if tasks and not args.table_only:
        started = time.monotonic()
        args.log.parent.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(args.workers) as pool, args.log.open("a") as log:
            for future in as_completed([pool.submit(one_search, t) for t in tasks]):
                log.write(json.dumps(future.result()) + "\n")
                log.flush()
        print(f"{len(tasks)} searches in {time.monotonic() - started:.0f} s with {args.workers} workers\n")
    print(table(read_log(args.log)))


if __name__ == "__main__":
    main()
