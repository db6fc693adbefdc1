"""`bisect run` when the spec's strategy is group screening: its exit code (the run loop is
`commands.run.drive`, the glue `heisenbisect.api.screen`)."""

from __future__ import annotations

from heisenbisect.decide.group import GroupResult
from heisenbisect.exit_codes import ExitCode
from heisenbisect.records import Verdict


def exit_code(result: GroupResult) -> int:
    """As for one-at-a-time screening: 0 only when every change is decided (untestable counts;
    not_applied does not)."""
    if result.cannot_reproduce:
        return ExitCode.CANNOT_REPRODUCE
    undecided = (Verdict.INCONCLUSIVE.value, Verdict.NOT_APPLIED.value)
    if not result.finished or any(v.verdict in undecided for v in result.changes):
        return ExitCode.UNDECIDED
    return ExitCode.DECIDED
