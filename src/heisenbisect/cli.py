"""The `bisect` command line: one subcommand per module in `heisenbisect.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys

from heisenbisect import __version__
from heisenbisect.errors import HeisenbisectError, SpecError

# each module defines register(subparsers); its parser sets handler=fn(args) -> exit code
COMMANDS = (
    "heisenbisect.commands.run",
    "heisenbisect.commands.report",
    "heisenbisect.commands.validate",
    "heisenbisect.commands.stress",
    "heisenbisect.commands.factors",
    "heisenbisect.commands.commits",
    "heisenbisect.commands.trial",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bisect",
        description="Find what drives a nondeterministic failure to zero.",
    )
    parser.add_argument("--version", action="version", version=f"heisenbisect {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except HeisenbisectError as exc:
        if args.debug:
            raise
        print(str(exc) if isinstance(exc, SpecError) else f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
