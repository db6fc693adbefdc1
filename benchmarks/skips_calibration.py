"""Calibration of the skip rule (`decide.skips`): skipped runs never fake a verdict, and skips
that do not depend on the change rarely cost one.

    python benchmarks/skips_calibration.py --studies 400 [--strategy group]

Each study is a one-at-a-time screening (zero_rate 0.1, max_trials 160, 95%) of a baseline
whose runs fail 40% of the time, driven to its end by the real `Screening` strategy; with
``--strategy group``, a group screening (`GroupScreening`, same settings) of the arms' changes
among six inert ones that act as the baseline does (a set of changes fails at the lowest rate
among them and skips at the highest share). Runs are
single units (a run fails or not) and a skipped run is what a could-not-run traceback gives.
Scenarios:

- ``no-skips``: nothing skips; arms: one that eliminates, one decoy. The share of studies
  that find the eliminator is the power the rule must not take away.
- ``null-skips``: the same, with every config, baseline included, skipping 10% of its runs
  whatever the change. No claim is false here; the eliminator found is the power left, an
  arm turned ``untestable`` is what the rule costs (a refusal, not a wrong answer).
- ``hidden``: the arm's change turns the failure into a run-time FileNotFoundError: its runs
  skip 40% of the time and never fail (the issue's "58 skipped / 80 clean"). Without the rule
  it is ``eliminates`` in every study; the share where it still is must be at most alpha.
- ``hidden-mild``: the same with 15% of its runs skipped, the hardest case for the test.

Prints a markdown table: per scenario, the share of studies whose first arm is ``eliminates``
(with its 95% Clopper-Pearson interval: the power where the arm eliminates, a false
``eliminates`` where skips hid its failures), the share with an arm refused as
``untestable``, and the mean trials a study took.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
from dataclasses import dataclass

from heisenbisect.decide import stats
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict
from heisenbisect.testing.strategy_kit import drive_in_order

SETTINGS = ScreeningSettings(
    confidence=0.95, zero_rate=0.1, min_reduction=0.5, max_trials=160, first_look=10
)
BASE = (0.4, 0.0)  # (P(failed run), P(skipped run))
GROUP_INERT = 6  # with --strategy group: changes that act as the baseline does, beside the arms


@dataclass(frozen=True)
class Scenario:
    name: str
    baseline: tuple[float, float]
    arms: tuple[tuple[float, float], ...]
    false: bool  # the first arm's ``eliminates`` would be false (skips hid its failures)


SCENARIOS = (
    Scenario("no-skips", BASE, ((0.0, 0.0), (0.4, 0.0)), False),
    Scenario("null-skips", (0.4, 0.1), ((0.0, 0.1), (0.4, 0.1)), False),
    Scenario("hidden", BASE, ((0.0, 0.4),), True),
    Scenario("hidden-mild", BASE, ((0.0, 0.15),), True),
)


def run_study(args: tuple[Scenario, int, str]) -> tuple[bool, bool, int]:
    """(the first arm is ``eliminates``, any arm is ``untestable``, trials taken)."""
    scenario, seed, strategy = args
    rng = random.Random(seed)
    changes = [(f"f{i}", "1") for i in range(len(scenario.arms))]
    models = dict(zip(changes, scenario.arms))

    def outcome(config: Config, n: int) -> Outcome:
        # a set of changes: the lowest failure rate among them, the highest skip share
        behaviours = [models.get(c, scenario.baseline) for c in config.changes] or [scenario.baseline]
        fail, skip = min(f for f, _ in behaviours), max(k for _, k in behaviours)
        if rng.random() < skip:
            detail = "could not run: exit 1 after FileNotFoundError: [Errno 2] race.tmp"
            return Outcome(f"t{n}", config.key, n, TrialStatus.SKIP, detail=detail)
        return Outcome(f"t{n}", config.key, n, TrialStatus.OK, int(rng.random() < fail), 1)

    if strategy == "group":  # the arms among inert changes, so that the search has groups to split
        inert = [(f"inert{i}", "1") for i in range(GROUP_INERT)]
        group = GroupScreening(Config(), changes + inert, GroupSettings(SETTINGS))
        trials = len(drive_in_order(group, outcome))
        verdicts = {v.change: v.verdict for v in group.result().changes}
        return verdicts[changes[0]] == Verdict.ELIMINATES.value, "untestable" in verdicts.values(), trials
    screening = Screening(Config(), [Config((c,)) for c in changes], SETTINGS)
    trials = len(drive_in_order(screening, outcome))
    result = screening.result()
    refused = any(a.verdict is Verdict.UNTESTABLE for a in result.arms)
    return result.arms[0].verdict is Verdict.ELIMINATES, refused, trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--strategy", choices=("one", "group"), default="one")
    args = parser.parse_args()
    n = args.studies
    print(
        f"{n} studies per scenario, strategy {args.strategy}; alpha = {SETTINGS.alpha:g}, "
        f"zero_rate = {SETTINGS.zero_rate:g}\n"
    )
    print("| scenario | first arm `eliminates` | 95% interval | what that is | refused (untestable) | mean trials |")
    print("|---|---|---|---|---|---|")
    with multiprocessing.Pool() as pool:
        for scenario in SCENARIOS:
            found = pool.map(run_study, [(scenario, seed, args.strategy) for seed in range(n)])
            eliminated, refused, trials = (sum(column) for column in zip(*found))
            low, high = stats.clopper_pearson_interval(eliminated, n, 0.95)
            what = "false (skips hid its failures)" if scenario.false else "power"
            print(
                f"| {scenario.name} | {eliminated / n:.1%} ({eliminated}/{n}) | "
                f"{low:.1%} - {high:.1%} | {what} | {refused / n:.1%} | {trials / n:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
