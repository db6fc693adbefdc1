"""What a commit bisection (``bisect commits``) answers, as values, with the exit code that
says it to scripts: 0 found (one commit holds the confidence), 1 undecided (only a candidate set:
untestable commits keep the culprit among a few, as `git bisect` ends with "could be any of"; the
budget spent, the range exhausted, a contradiction, still running; a culprit that its
verification did not confirm), 3 the range was refused (its bad end does not fail, or its ends
look swapped), 4 no trial produced a result, or the bad end failed only by crashing (README,
exit codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.commits import State
from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.range_check import RangeState
from heisenbisect.decide.verify import Verification
from heisenbisect.exit_codes import ExitCode

NO_VALID_RUNS = "no_valid_runs"  # the state when no verdict may rest on the trials
NOT_VERIFIED = "not_verified"  # found by the search, not confirmed by fresh runs


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
    refusal: str | None = None  # why the range was refused (exit 3); no culprit is named then
    verification: Verification | None = None  # the culprit's, when one was found
    verification_line: str | None = None  # that verification in one sentence

    @property
    def decided(self) -> bool:
        return self.exit_code == 0


def state_and_exit_code(
    state: State,
    evidence: Evidence,
    refused: RangeState | None = None,
    verification: Verification | None = None,
) -> tuple[str, ExitCode]:
    """The bisection's state as the answer names it, and the exit code that says it."""
    if evidence.no_valid_runs:
        return NO_VALID_RUNS, ExitCode.NO_VALID_RUNS
    if refused is not None:
        return refused.value, ExitCode.CANNOT_REPRODUCE
    if state is State.FOUND and verification is not None and not verification.verified:
        return NOT_VERIFIED, ExitCode.UNDECIDED  # still running (interrupted) included
    # a candidate set is not "the culprit is found": a script that reads 0 as "one commit to blame" must not get a set
    return state.value, ExitCode.DECIDED if state is State.FOUND else ExitCode.UNDECIDED
