"""A screening's exit code: 0 only when the verdicts answer the question the study asked.

A rule behind an exit code, so it lives here rather than with the result it reads
(`studies.screening_result`): pure, a finished result and its evidence in, a code out.
"""

from __future__ import annotations

from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.group.strategy import GroupResult
from heisenbisect.decide.screening import ScreeningResult
from heisenbisect.exit_codes import ExitCode
from heisenbisect.records import Verdict

UNDECIDED = (Verdict.INCONCLUSIVE.value, Verdict.NOT_APPLIED.value)


def exit_code(result: ScreeningResult | GroupResult, evidence: Evidence | None = None) -> ExitCode:
    """0 only when every arm (every change, for group screening) is decided; ``untestable`` is no
    answer, except a group screening's breaker (a change that never ran cleanly: that is its answer);
    4 whatever the verdicts when ``evidence`` says none may rest on the trials."""
    if evidence is not None and evidence.no_valid_runs:
        return ExitCode.NO_VALID_RUNS
    if result.cannot_reproduce:
        return ExitCode.CANNOT_REPRODUCE
    undecided: tuple[str, ...] = UNDECIDED
    if isinstance(result, GroupResult):
        verdicts = [v.verdict for v in result.changes]
        if result.held_by_skips():
            return ExitCode.UNDECIDED
    else:  # one at a time, untestable is skips that may hide the failure: no answer
        verdicts = [arm.verdict.value for arm in result.arms]
        undecided += (Verdict.UNTESTABLE.value,)
        if result.baseline.verdict is Verdict.UNTESTABLE:
            return ExitCode.UNDECIDED
    if not result.finished or any(v in undecided for v in verdicts):
        return ExitCode.UNDECIDED
    return ExitCode.DECIDED
