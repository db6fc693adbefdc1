"""`bisect validate FILE`: check a hypotheses file; exit 0, or 2 with one line per problem."""

from __future__ import annotations

import argparse

from heisenbisect.hypotheses import load_spec


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("validate", help="check a hypotheses file (exit 2 with file:line:col errors)")
    parser.add_argument("spec", metavar="FILE")
    parser.set_defaults(handler=validate)


def validate(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    arms = spec.arms()
    if getattr(args, "verbosity", 0) >= 0:  # -q: the exit code says it
        print(f"{args.spec}: ok: study {spec.study!r}, {len(spec.factors)} factors, {len(arms)} arms besides the baseline")
    return 0
