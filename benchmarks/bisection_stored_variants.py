"""Paired comparisons of probe rules where p comes from 40 runs stored at the bad end.

The "stored 40" rows of benchmarks/bisection.py miss the goal of 1.3x the floor (issue #12);
this script measures what was tried against them. Every variant runs the same seeds as the
strategy itself (`search` of benchmarks/bisection.py: the same culprit, the same stored failures,
the same random stream until the first probe that differs), so the difference of their means has
a paired standard error, far smaller than either mean's. q = 0 and p learned, as in those rows.

- "greedy": `CommitStrategy` as it is: the probe of largest information gain about the culprit.
- "two-step lookahead": the probe c of largest I(J; Y_c) + E[max_c' I(J; Y_c' | Y_c)], the
  second step under the exact posterior after Y_c, so that it sees what a run teaches about p;
  candidates: the 6 of largest one-step gain and the bad end (its runs inform only p).
- "plug-in p": information gain with every culprit's predictive p replaced by p's posterior
  mean (the posterior and the stop unchanged): what the integrated rates are worth.
- "bad end until k failed": before probing, the bad end runs until it, stored runs included,
  has failed k times: p known to about +-1/sqrt(k) whatever its value.
- "probes told the true p" (an oracle, not a rule): information gain with every culprit's p replaced
  by the simulation's true p; the posterior and the stop still learn p. What knowing p is worth
  to the probe choice alone, whatever rule learns it.
- "joint information, lambda L": the probe of largest I(J; Y_c) + L * I(p; Y_c | J), where
  I(J; Y_c) + I(p; Y_c | J) = I(J, p; Y_c) is the information a run carries about the culprit and
  p together (L = 1); L < 1 values p less. I(p; Y_c | J) sums, over the culprits at or before c,
  P(J) (h(E[p | J]) - E[h(p) | J]) under p's Beta posterior given J.

    .venv/bin/python benchmarks/bisection_stored_variants.py [--sizes 256 1024] [--p 0.15] \\
        [--searches 2000] [--lookahead-searches 300] [--until 6 8] [--joint 0.25 1] [--oracle] [--workers 1] \\
        [--where-runs-go 400]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.special import digamma
from statsmodels.stats.proportion import proportion_confint

from heisenbisect.decide.commits import CommitStrategy
from heisenbisect.decide.posterior import RunCounts, culprit_posterior
from heisenbisect.decide.probes import binary_entropy, choose_probes, information_gain
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

sys.path.insert(0, str(Path(__file__).parent))
from bisection import fano_floor, settings_for, simulate  # noqa: E402

MODE = "stored 40"
LOOKAHEAD_CANDIDATES = 6


class TwoStepLookahead(CommitStrategy):
    """Greedy over pairs of runs: the first run's gain plus the best second run's, per outcome."""

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        if chosen := self._bad_end_runs(self._pending(in_flight), slots):
            return chosen
        post, testable = self.posterior(), ~self.untestable
        gains = np.where(testable, information_gain(post), -np.inf)
        bad_end = len(gains) - 1
        candidates = set(np.argsort(-gains)[:LOOKAHEAD_CANDIDATES].tolist()) | {bad_end}
        return [self.config_for(self.candidates[max(candidates, key=lambda c: self._two_step_gain(c, gains[c]))])]

    def _two_step_gain(self, commit: int, gain: float) -> float:
        post = self.posterior()
        bad, good = slice(None, commit + 1), slice(commit + 1, None)
        fail = float(post.probs[bad] @ post.rate_bad[bad] + post.probs[good] @ post.rate_good[good])
        for failed, chance in ((1, fail), (0, 1.0 - fail)):
            if chance > 1e-12:
                trials, failures = self.trials.copy(), self.failures.copy()
                trials[commit] += 1
                failures[commit] += failed
                evidence = RunCounts(trials, failures, self.good_trials, self.good_failures)
                after = culprit_posterior(evidence, self._bad_prior, self._good_prior)
                gain += chance * float(np.max(np.where(~self.untestable, information_gain(after), -np.inf)))
        return gain


class PlugInP(CommitStrategy):
    """Information gain with p's posterior mean in place of each culprit's predictive p."""

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        pending = self._pending(in_flight)
        if chosen := self._bad_end_runs(pending, slots):
            return chosen
        post = self.posterior()
        flat = dataclasses.replace(post, rate_bad=np.full_like(post.rate_bad, post.mean_p_bad))
        return [self.config_for(self.candidates[i]) for i in choose_probes(flat, ~self.untestable, pending, slots)]


def probes_told(p: float) -> type[CommitStrategy]:
    class ProbesToldTrueP(CommitStrategy):
        """Information gain under the true p (the oracle); posterior and stop as the strategy's."""

        def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
            if self.finished():
                return []
            pending = self._pending(in_flight)
            if chosen := self._bad_end_runs(pending, slots):
                return chosen
            told = dataclasses.replace(self.posterior(), rate_bad=np.full(len(self.candidates), p))
            return [self.config_for(self.candidates[i]) for i in choose_probes(told, ~self.untestable, pending, slots)]

    return ProbesToldTrueP


def bad_end_until(k: int) -> type[CommitStrategy]:
    class BadEndUntilFailed(CommitStrategy):
        """Runs at the bad end, one at a time, until it (stored runs included) has failed k times."""

        def _bad_end_runs(self, pending: list[int], slots: int) -> list[Config]:
            last = len(self.candidates) - 1
            failed = int(self.failures[last]) + self.settings.stored_bad_failures
            if failed < k and not pending and not self.untestable[last]:
                pending.append(last)
                return [self.config_for(self.candidates[last])]
            return super()._bad_end_runs(pending, slots)

    return BadEndUntilFailed


def joint_information(weight: float) -> type[CommitStrategy]:
    class JointInformation(CommitStrategy):
        """The probe of largest I(J; Y_c) + weight * I(p; Y_c | J): runs valued for p as well."""

        def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
            if self.finished():
                return []
            if chosen := self._bad_end_runs(self._pending(in_flight), slots):
                return chosen
            post = self.posterior()
            value = information_gain(post) + weight * self._p_information(post)
            return [self.config_for(self.candidates[int(np.argmax(np.where(~self.untestable, value, -np.inf)))])]

        def _p_information(self, post) -> np.ndarray:
            """I(p; Y_c | J) for every c, in bits: a run at c teaches p under the culprits at or before c."""
            bad_f = np.cumsum(self.failures[::-1])[::-1].astype(float)
            bad_s = np.cumsum((self.trials - self.failures)[::-1])[::-1].astype(float)
            a, b = self._bad_prior.a + bad_f, self._bad_prior.b + bad_s
            mean_entropy = -(a * (digamma(a + 1) - digamma(a + b + 1)) + b * (digamma(b + 1) - digamma(a + b + 1)))
            per_culprit = post.probs * (binary_entropy(a / (a + b)) - mean_entropy / (a + b) / np.log(2.0))
            return np.cumsum(per_culprit)

    return JointInformation


def variant_class(name: str, p: float) -> type[CommitStrategy]:
    if name == "probes told the true p":
        return probes_told(p)
    if name.startswith("bad end until"):
        return bad_end_until(int(name.split()[3]))
    if name.startswith("joint information"):
        return joint_information(float(name.split()[-1]))
    return {"greedy": CommitStrategy, "two-step lookahead": TwoStepLookahead, "plug-in p": PlugInP}[name]


def searches(task: tuple[str, int, float, range]) -> list[tuple[int, bool]]:
    name, n, p, seeds = task
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)  # drawn in the order of bisection.search: the same searches
        result, culprit = simulate(n, p, 0.0, settings_for(MODE, p, 0.0, 5000, rng), rng, variant_class(name, p))
        out.append((result.trials, result.culprit == culprit))
    return out


def where_one_search_runs(n: int, p: float, seed: int) -> tuple:
    """A row of `where_runs_go`: (stored failures, own trials, runs at the commit before the
    culprit, at the culprit, after it, before it elsewhere, right)."""
    rng = np.random.default_rng(seed)  # the draws of bisection.search, in its order
    settings = settings_for(MODE, p, 0.0, 5000, rng)
    culprit = int(rng.integers(n))
    strategy = CommitStrategy([f"c{i}" for i in range(n)], "good", settings)

    def outcome(config: Config, _: int) -> Outcome:
        failed = rng.random() < (p if int(config.commit[1:]) >= culprit else 0.0)
        return Outcome("sim", config.key, 0, TrialStatus.OK, int(failed), 1)

    drive_in_order(strategy, outcome)
    runs = strategy.trials
    return (settings.stored_bad_failures, strategy.finished_trials, runs[culprit - 1] if culprit else 0,
            runs[culprit], runs[culprit + 1 :].sum(), runs[: max(culprit - 1, 0)].sum(),
            strategy.result().culprit == culprit)


def where_runs_go(n: int, p: float, count: int) -> None:
    """The strategy's runs by where they land relative to the true culprit, binned by how many
    of the 40 stored runs failed: where the trials above the given-p searches go."""
    bins = ((0, 2), (3, 4), (5, 6), (7, 8), (9, 40))
    rows = [where_one_search_runs(n, p, seed) for seed in range(count)]
    table = np.array(rows, dtype=float)
    print(f"\nWhere the runs go (greedy, N = {n}, p = {p}, q = 0, {count} searches)\n")
    print("| stored failures | searches | own trials | commit before the culprit | culprit | after it | "
          "before it (others) | accuracy |\n|---|---|---|---|---|---|---|---|")
    for low, high in bins + ((0, 40),):
        part = table[(table[:, 0] >= low) & (table[:, 0] <= high)]
        label = "all" if (low, high) == (0, 40) else f"{low}-{high}"
        if len(part):
            cells = [label, len(part)] + [f"{x:.1f}" for x in part[:, 1:6].mean(axis=0)] + [f"{part[:, 6].mean():.3f}"]
            print("| " + " | ".join(str(c) for c in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[256, 1024])
    parser.add_argument("--p", type=float, default=0.15, help="the bad commits' failure rate")
    parser.add_argument("--searches", type=int, default=2000, help="per row, seeds 0..searches-1")
    parser.add_argument("--lookahead-searches", type=int, default=300, help="two-step lookahead is 9x slower")
    parser.add_argument("--until", nargs="*", type=int, default=[6, 8], help="k of the 'bad end until k failed' rows")
    parser.add_argument("--joint", nargs="*", type=float, default=[], help="lambdas of the 'joint information' rows")
    parser.add_argument("--oracle", action="store_true", help="add the 'probes told the true p' row (an oracle)")
    parser.add_argument("--skip", nargs="*", default=[], help="variants to leave out")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--where-runs-go", type=int, default=0, metavar="SEARCHES",
                        help="only the table of where the strategy's runs land, over this many searches per N")
    args = parser.parse_args()
    if args.where_runs_go:
        for n in args.sizes:
            where_runs_go(n, args.p, args.where_runs_go)
        return
    started = time.monotonic()
    names = ["greedy", "two-step lookahead", "plug-in p"] + [f"bad end until {k} failed" for k in args.until]
    names += [f"joint information, lambda {weight:g}" for weight in args.joint]
    names += ["probes told the true p"] if args.oracle else []
    names = [name for name in names if name not in args.skip]
    count = {name: args.lookahead_searches if name == "two-step lookahead" else args.searches for name in names}
    chunk = 25
    tasks = [(name, n, args.p, range(s, min(s + chunk, count[name]))) for name in names for n in args.sizes
             for s in range(0, count[name], chunk)]
    with ProcessPoolExecutor(args.workers) as pool:
        done = list(pool.map(searches, tasks))
    runs: dict[tuple[str, int], list] = {}
    for task, result in zip(tasks, done):
        runs.setdefault(task[:2], []).extend(result)
    print(f"p = {args.p}, q = 0, 40 runs stored at the bad end; own trials counted (bad-end runs included)\n")
    header = ("variant", "N", "searches", "mean", "SE", "mean/floor", "accuracy", "95% CI",
              "paired diff vs greedy", "SE")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for n in args.sizes:
        base = np.array(runs[("greedy", n)], dtype=float)
        for name in names:
            rows = np.array(runs[(name, n)], dtype=float)
            trials, right = rows[:, 0], rows[:, 1]
            low, high = proportion_confint(right.sum(), len(right), method="wilson")
            diff = trials - base[: len(trials), 0]
            cells = (name, n, len(trials), f"{trials.mean():.1f}", f"{trials.std(ddof=1) / np.sqrt(len(trials)):.1f}",
                     f"{trials.mean() / fano_floor(n, args.p, 0.0):.3f}", f"{right.mean():.3f}",
                     f"{low:.3f}-{high:.3f}",
                     "" if name == "greedy" else f"{diff.mean():+.1f}",
                     "" if name == "greedy" else f"{diff.std(ddof=1) / np.sqrt(len(diff)):.1f}")
            print("| " + " | ".join(str(c) for c in cells) + " |")
    print(f"\n{time.monotonic() - started:.0f} s with {args.workers} workers")


if __name__ == "__main__":
    main()
