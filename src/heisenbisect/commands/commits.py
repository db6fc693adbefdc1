"""`bisect commits FILE`: find the commit that introduced a flaky failure, resuming from the store.

The study is `studies.commits` (also ``heisenbisect.commits``); this command prints what it
found. Exit codes: `studies.commits_result`.
"""

from __future__ import annotations

import argparse
import sys

from heisenbisect.commands.common import add_execution_arguments, add_spec_argument, answer, options_of
from heisenbisect.studies.commits import bisect_commits
from heisenbisect.studies.commits_result import CommitsResult


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "commits",
        help="noisy git bisection over the spec's commit range",
        description="Probe the commits between commits.good and commits.bad (first-parent by default) "
        "under one config, keep a posterior over the first bad commit, and stop when one commit holds "
        "commits.confidence. Each probe runs in a worktree of its own; your working tree, index and "
        "HEAD are never touched; with --runner ray each probed commit gets a worktree on its worker. "
        "Rerunning resumes from <output>/<study>/commits.sqlite. Writes "
        "commits.md, commits.png and commits.json beside the screening report.",
    )
    add_spec_argument(parser)
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FACTOR=LEVEL",
        help="probe under this level of a factor instead of its baseline (repeatable)",
    )
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return answer(lambda: bisect_commits(options_of(args), args.config), print_result, show_interrupted=True)


def print_result(result: CommitsResult) -> int:
    """What ``bisect commits`` prints; returns its exit code."""
    if result.no_valid_runs:
        for line in result.warnings:
            print(line, file=sys.stderr)
        print(f"report: {result.report}")
        return result.exit_code
    print(result.headline)
    if result.culprit is not None:
        print(f"  {result.culprit}\n  {result.culprit_line}")
    print(f"report: {result.report}  (plot {result.plot.name}, results {result.results.name})")
    for line in result.warnings:
        print(line, file=sys.stderr)
    return result.exit_code
