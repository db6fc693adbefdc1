"""`bisect run` when the spec's strategy is group screening: the same run loop, the group study and report."""

from __future__ import annotations

import argparse
from pathlib import Path

from heisenbisect.bisect.group import GroupResult
from heisenbisect.commands.run import drive, print_ending
from heisenbisect.exit_codes import ExitCode
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Verdict
from heisenbisect.reports.group import conclusion, write_report
from heisenbisect.studies.group import progress_rows, replayed_group_screening


def run_groups(args: argparse.Namespace, spec: Spec, spec_dir: Path) -> int:
    title = f"bisect run {spec.study} (group screening)"
    driven = drive(args, spec, spec_dir, replayed_group_screening, progress_rows, title)
    if isinstance(driven, int):
        return driven
    screening, paths, crashed, context = driven
    result = screening.result()
    report = write_report(spec, args.spec, result, paths, crashed, context)
    verdicts = [f"{v.change[0]}={v.change[1]:<30} {v.verdict}" for v in result.changes if not v.via_group]
    return print_ending(context, crashed, report, verdicts, conclusion(spec, result), exit_code(result))


def exit_code(result: GroupResult) -> int:
    """As for one-at-a-time screening: 0 only when every change is decided (untestable counts)."""
    if result.cannot_reproduce:
        return ExitCode.CANNOT_REPRODUCE
    if not result.finished or any(v.verdict == Verdict.INCONCLUSIVE.value for v in result.changes):
        return ExitCode.UNDECIDED
    return ExitCode.DECIDED
