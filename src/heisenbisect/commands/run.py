"""`bisect run FILE`: screen every factor level against the baseline, resumably, and report.

The study is `studies.screening` (also ``heisenbisect.run``); this command prints what it
answers. Exit codes: `studies.screening_result`.
"""

from __future__ import annotations

import argparse
import sys

from heisenbisect.commands.common import (
    add_execution_arguments,
    add_spec_argument,
    answer,
    options_of,
)
from heisenbisect.records import Verdict
from heisenbisect.studies.screening import screen
from heisenbisect.studies.screening_result import StudyResult


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="screen factors: which changes drive the failure to zero"
    )
    add_spec_argument(parser)
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return answer(lambda: screen(options_of(args)), print_ending)


def print_ending(study: StudyResult) -> int:
    """The end of every screening kind: the verdicts, the conclusion and the warnings, or only
    "no trial produced a result" (exit 4) when nothing can be concluded; returns the exit code."""
    if study.no_valid_runs:
        for line in study.warnings:
            print(line, file=sys.stderr)
        print(f"report: {study.report}")
        return study.exit_code
    for arm in study.arms:
        unapplied = arm.verdict == Verdict.NOT_APPLIED.value
        if not arm.decided_by_group or unapplied:
            runs = f" {arm.failed_runs}/{arm.runs} runs failed" if arm.runs is not None else ""
            why = f": {arm.note}" if unapplied else ""
            print(f"{arm.change:<40} {arm.verdict:<16}{runs}{why}".rstrip())
    print(f"\n{study.conclusion}\n\nreport: {study.report}")
    for line in study.warnings:
        print(line, file=sys.stderr)
    return study.exit_code
