"""`bisect report FILE`: re-render the screening report from the store alone, running nothing.

The work is `studies.screening.rerender`; this command prints the report's path.
"""

from __future__ import annotations

import argparse

from heisenbisect.commands.common import add_spec_argument
from heisenbisect.studies.options import Options
from heisenbisect.studies.screening import rerender


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="re-render report.md, results.json and rates.png from the store")
    add_spec_argument(parser)
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    print(rerender(Options(args.spec, args.out)))
    return 0
