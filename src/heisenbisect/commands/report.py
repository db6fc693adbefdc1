"""`bisect report FILE`: re-render the screening report from the store alone, running nothing.

The work is `studies.screening.rerender`; this command prints the conclusion and the report's
path, as `bisect run` ends, or with ``--paste`` the self-contained paste.md (for an upstream
issue: ``bisect report spec.yaml --paste | gh issue create -F -``).
"""

from __future__ import annotations

import argparse
import json

from heisenbisect.commands.common import add_spec_argument
from heisenbisect.reports.screening import plain
from heisenbisect.studies.options import Options
from heisenbisect.studies.screening import rerender


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="re-render report.md, paste.md, results.json and rates.png from the store")
    add_spec_argument(parser)
    parser.add_argument("--paste", action="store_true",
                        help="print paste.md: the report for an upstream issue, self-contained (no links, no local paths)")
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    path = rerender(Options(args.spec, args.out))
    paste = path.with_name("paste.md")
    if args.paste and paste.exists():
        print(paste.read_text(), end="")
        return 0
    results = path.with_name("results.json")
    said = json.loads(results.read_text()).get("conclusion") if results.exists() else None
    if said:
        print(f"{plain(said)}\n")
    print(f"report: {path}" + (f"\npaste:  {paste}" if paste.exists() else ""))
    return 0
