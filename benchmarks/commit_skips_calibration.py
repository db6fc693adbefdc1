"""Calibration of commit bisection where skips may be the failure (`decide.hidden_skips`): no
culprit named past commits whose failure is a could-not-run traceback, and skips that happen
everywhere alike cost little.

    python benchmarks/commit_skips_calibration.py --studies 200

Each study bisects 32 candidates with the real `CommitStrategy` (confidence 0.95, p learned,
q given as 0 unless the row says learned): from c10 on, runs fail 30% of the time. Scenarios:

- ``no-skips``: nothing skips. The rule must change nothing here.
- ``skips-2%`` / ``skips-10%``: every run anywhere skips at that share, whatever the commit
  (a flaky network, a full disk): no answer is wrong; what the rule costs is trials, and a set
  named where a culprit was.
- ``hidden-1``: at c10 alone the failure is a run-time FileNotFoundError (a skip); from c11 on
  it shows. Without the rule, c11 is named.
- ``hidden-4`` (and ``learned q``): the same at c10-c13; without the rule, c14 or a set past c10.

Prints a markdown table: per scenario, the share of studies whose answer (a culprit, or a set of
commits untestable commits keep apart) leaves out c10, with its 95% Clopper-Pearson interval
(at most 1 - confidence is calibrated), the shares naming c10 alone and naming a set that holds
it, the share undecided (budget), and the mean trials.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
from dataclasses import dataclass

from heisenbisect.decide import stats
from heisenbisect.decide.commits import CommitStrategy, Settings, State
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

CANDIDATES, CULPRIT, P_BAD, CONFIDENCE = 32, 10, 0.3, 0.95


@dataclass(frozen=True)
class Scenario:
    name: str
    skip_everywhere: float
    hides: range  # commits where a failure is a could-not-run traceback
    p_good: float | None = 0.0


SCENARIOS = (
    Scenario("no-skips", 0.0, range(0)),
    Scenario("skips-2%", 0.02, range(0)),
    Scenario("skips-10%", 0.10, range(0)),
    Scenario("skips-10%, learned q", 0.10, range(0), None),
    Scenario("hidden-1", 0.0, range(CULPRIT, CULPRIT + 1)),
    Scenario("hidden-4", 0.0, range(CULPRIT, CULPRIT + 4)),
    Scenario("hidden-4, learned q", 0.0, range(CULPRIT, CULPRIT + 4), None),
)


def run_study(args: tuple[Scenario, int]) -> tuple[bool, bool, bool, bool, int]:
    """(answer leaves out the culprit, names it alone, names a set holding it, undecided, trials)."""
    scenario, seed = args
    rng = random.Random(seed)
    settings = Settings(p_good=scenario.p_good, confidence=CONFIDENCE)
    strategy = CommitStrategy([f"c{i}" for i in range(CANDIDATES)], "good", settings)

    def outcome(config: Config, n: int) -> Outcome:
        i = -1 if config.commit == "good" else int(str(config.commit)[1:])
        failed = i >= CULPRIT and rng.random() < P_BAD
        if rng.random() < scenario.skip_everywhere or (failed and i in scenario.hides):
            detail = "could not run: exit 1 after FileNotFoundError: [Errno 2] race.tmp"
            return Outcome(f"t{n}", config.key, n, TrialStatus.SKIP, detail=detail)
        return Outcome(f"t{n}", config.key, n, TrialStatus.OK, int(failed), 1)

    drive_in_order(strategy, outcome)
    result = strategy.result()
    answered = result.state in (State.FOUND, State.SKIPPED)
    holds = CULPRIT in result.group
    alone = result.state is State.FOUND and result.culprit == CULPRIT
    return answered and not holds, alone, answered and holds and not alone, not answered, result.trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=200)
    n = parser.parse_args().studies
    print(
        f"{n} studies per scenario; {CANDIDATES} candidates, culprit c{CULPRIT}, p = {P_BAD}, "
        f"confidence {CONFIDENCE}\n"
    )
    print(
        "| scenario | answer leaves out the culprit | 95% interval | culprit alone "
        "| a set holding it | undecided | mean trials |"
    )
    print("|---|---|---|---|---|---|---|")
    with multiprocessing.Pool() as pool:
        for scenario in SCENARIOS:
            found = pool.map(run_study, [(scenario, seed) for seed in range(n)])
            wrong, alone, in_set, undecided, trials = (sum(column) for column in zip(*found))
            low, high = stats.clopper_pearson_interval(wrong, n, 0.95)
            print(
                f"| {scenario.name} | {wrong / n:.1%} ({wrong}/{n}) | {low:.1%} - {high:.1%} | "
                f"{alone / n:.1%} | {in_set / n:.1%} | {undecided / n:.1%} | {trials / n:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
