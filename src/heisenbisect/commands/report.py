"""`bisect report FILE`: re-render the screening report from the store alone, running nothing.

The work is `studies.screening.rerender`; this command prints the conclusion and the report's
path, as `bisect run` ends, or with ``--paste`` the self-contained paste.md (for an upstream
issue: ``bisect report spec.yaml --paste | gh issue create -F -``). It exits with the code
`bisect run` gives for the same trials, so a script can check a stored study without rerunning.
"""

from __future__ import annotations

import argparse
import json

from heisenbisect.commands.common import add_spec_argument
from heisenbisect.records import Verdict
from heisenbisect.reports.screening import plain
from heisenbisect.studies.options import Options
from heisenbisect.studies.screening import rerender


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="re-render report.md, paste.md, results.json and rates.png from the store"
    )
    add_spec_argument(parser)
    parser.add_argument(
        "--paste",
        action="store_true",
        help="print paste.md: the report for an upstream issue, self-contained (no links, no local paths)",
    )
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    path, code = rerender(Options(args.spec, args.out))
    paste = path.with_name("paste.md")
    if args.paste and paste.exists():
        print(paste.read_text(), end="")
        return code
    results = path.with_name("results.json")
    data = json.loads(results.read_text()) if results.exists() else {}
    for line in verdict_lines(data.get("arms") or []):
        print(line)
    if said := data.get("conclusion"):
        print(f"\n{plain(said)}\n")
    print(f"report: {path}" + (f"\npaste:  {paste}" if paste.exists() else ""))
    return code


def verdict_lines(arms: list[dict]) -> list[str]:
    """One line per change, as `bisect run` ends (`commands.run.print_ending`): a change a group
    cleared is left to the report unless it was never applied."""
    lines = []
    for arm in arms:
        if arm.get("via_group") and arm["verdict"] != Verdict.NOT_APPLIED.value:
            continue
        runs = (
            f" {arm['failures']}/{arm['trials']} runs failed"
            if arm.get("trials") is not None
            else ""
        )
        lines.append(
            f"{arm['factor'] + '=' + arm['level']:<40} {arm['verdict']:<16}{runs}".rstrip()
        )
    return lines
