"""`bisect validate FILE`: check a hypotheses file; exit 0, or 2 with one line per problem.

Beyond the schema it checks what would make every trial worthless (a command that cannot
run, a missing folder or script: exit 2) and what would make a verdict unreachable (a
budget too small to ever claim zero: a warning, exit 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heisenbisect.errors import SpecError
from heisenbisect.hypotheses import load_spec
from heisenbisect.studies.budget import budget_warning
from heisenbisect.targets.preflight import spec_problem_lines


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate", help="check a hypotheses file (exit 2 with file:line:col errors)"
    )
    parser.add_argument("spec", metavar="FILE")
    parser.add_argument(
        "--probe",
        action="store_true",
        help="also run the baseline once and say, per factor, whether its variable reached the target "
        "(exit 1 when one was never read)",
    )
    parser.set_defaults(handler=validate)


def validate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    if problems := spec_problem_lines(spec, Path(args.spec)):
        raise SpecError(problems)
    if warning := budget_warning(spec, Path(args.spec)):
        print(warning, file=sys.stderr)
    arms = spec.arms()
    if getattr(args, "verbosity", 0) >= 0:  # -q: the exit code says it
        print(
            f"{args.spec}: ok: study {spec.study!r}, {len(spec.factors)} factors, {len(arms)} arms besides the baseline"
        )
    if getattr(args, "probe", False):
        from heisenbisect.commands.probe import probe

        return probe(spec, Path(args.spec))
    return 0
