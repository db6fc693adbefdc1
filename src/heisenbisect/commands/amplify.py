"""`bisect amplify FILE`: search the spec's stress knobs for the most evidence per second,
confirm the best against the current settings, and write amplified.yaml.

The study is `studies.amplify` (also ``heisenbisect.amplify``); this command prints what it
found. Exit codes: `studies.amplify.result`.
"""

from __future__ import annotations

import argparse

from heisenbisect.commands.common import (
    add_execution_arguments,
    add_spec_argument,
    answer,
    options_of,
)
from heisenbisect.reports.amplify import dashboard_line
from heisenbisect.studies.amplify.result import AmplifyResult
from heisenbisect.studies.amplify.study import amplify_study


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "amplify",
        help="search stress knobs (Optuna) so the failure gives more evidence per second",
        description="Search the spec's amplify.knobs with Optuna for the settings under which the failure "
        "gives the most bits about a culprit per second of run, confirm the best against the current "
        "settings with a sequential test, and write amplify.md, amplify.png and (when confirmed) "
        "amplified.yaml in the study folder. Rerunning resumes from amplify.sqlite, confirm.sqlite and "
        "optuna.db there.",
    )
    add_spec_argument(parser)
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return answer(lambda: amplify_study(options_of(args)), print_result)


def print_result(result: AmplifyResult) -> int:
    """What ``bisect amplify`` prints; returns its exit code."""
    print(result.headline)
    print(f"report: {result.report}  (plot {result.plot.name}, results {result.results.name})")
    if result.amplified is not None:
        print(f"amplified spec: {result.amplified}")
    print(
        f"Optuna study: {dashboard_line(result.dashboard.removeprefix('optuna-dashboard ')).replace('`', '')}"
    )
    return result.exit_code
