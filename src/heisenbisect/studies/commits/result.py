"""What a commit bisection (``bisect commits``) answers, as values, with the exit code that
says it to scripts: 0 found (one commit holds the confidence), 1 undecided (only a candidate set:
untestable commits keep the culprit among a few, as `git bisect` ends with "could be any of"; the
budget spent, the range exhausted, a contradiction, still running), 4 no
trial produced a result, or the bad end failed only by crashing (README, exit codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.commits import State
from heisenbisect.decide.evidence import Evidence
from heisenbisect.exit_codes import ExitCode

NO_VALID_RUNS = "no_valid_runs"  # the state when no verdict may rest on the trials


@dataclass(frozen=True)
class CommitsResult:
    """What ``bisect commits`` prints and writes, as values."""

    study: str
    state: (
        str  # found; skipped (untestable commits keep the culprit among a few); budget, exhausted,
    )
    #             contradiction, running (undecided); no_valid_runs
    exit_code: int  # the CLI's: 0 found, 1 undecided (a candidate set included), 4 no valid runs
    culprit: str | None  # the first bad commit's full sha, when found
    culprit_line: str | None  # its author and date
    probability: float  # the posterior of the most probable commit
    headline: str
    candidates: int
    trials: int
    report: Path
    plot: Path
    results: Path
    store: Path
    warnings: tuple[str, ...]
    no_valid_runs: bool
    details: object = field(repr=False)  # the bisection's full `decide.commits.Result`

    @property
    def decided(self) -> bool:
        return self.exit_code == 0


def state_and_exit_code(state: State, evidence: Evidence) -> tuple[str, ExitCode]:
    """The bisection's state as the answer names it, and the exit code that says it."""
    if evidence.no_valid_runs:
        return NO_VALID_RUNS, ExitCode.NO_VALID_RUNS
    # a candidate set is not "the culprit is found": a script that reads 0 as "one commit to blame" must not get a set
    return state.value, ExitCode.DECIDED if state is State.FOUND else ExitCode.UNDECIDED
