"""Arguments and steps that several subcommands share."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from typing import TypeVar, cast

from heisenbisect.errors import HeisenbisectError
from heisenbisect.runners import registry as runner_kinds
from heisenbisect.studies.options import Options, StudyInterrupted

R = TypeVar("R")


def add_spec_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="FILE", help="the hypotheses YAML file")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="folder for studies; a relative DIR is taken from the current folder (default: the spec's "
        "'output:', reports/, taken from the spec file's folder, so every command finds the same study "
        "from anywhere)",
    )


def add_execution_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fresh", action="store_true", help="move the stored trials aside and start over"
    )
    parser.add_argument(
        "--parallel",
        type=int,
        metavar="N",
        help="trials at once (overrides execution.parallel and, on Ray, execution.max_in_flight)",
    )
    parser.add_argument("--runner", choices=runner_kinds.names(), help=runner_kinds.help_text())
    parser.add_argument(
        "--address", help="Ray cluster address (overrides execution.address and RAY_ADDRESS)"
    )
    parser.add_argument(
        "--plain", action="store_true", help="plain progress lines even on a terminal"
    )


def options_of(
    args: argparse.Namespace, spec: str | None = None, out: str | None = None
) -> Options:
    """The options of a parsed command line (argparse checked them). A command whose spec is not
    ``args.spec`` (`bisect commits` with an action, or without a spec) names the spec and its
    ``out``; otherwise both come from ``args``."""
    if spec is None:
        spec, out = args.spec, args.out
    if args.parallel is not None and args.parallel < 1:  # checked before anything is moved
        raise HeisenbisectError(f"--parallel: must be at least 1, got {args.parallel}")
    return Options(
        spec, out, args.fresh, args.parallel, args.runner, args.address, args.plain, rerun_command()
    )


def rerun_command(argv: list[str] | None = None) -> str:
    """The command line that was run, to print as the way to resume: without ``--fresh``, which
    would move the trials just made aside and start over (issue 35). Words after ``--`` are the
    target's command and stay as they are."""
    words = sys.argv[1:] if argv is None else argv
    cut = words.index("--") if "--" in words else len(words)
    kept = [w for w in words[:cut] if w != "--fresh"] + words[cut:]
    return "bisect " + shlex.join(kept)


def answer(
    study: Callable[[], R], show: Callable[[R], int], *, show_interrupted: bool = False
) -> int:
    """Run a study and print its answer with ``show``; returns the exit code.

    An interrupted study has already said how to resume; ``show_interrupted`` prints what it
    had found by then, for studies whose partial answer is worth reading (a bisection)."""
    try:
        result = study()
    except StudyInterrupted as exc:
        if show_interrupted and exc.result is not None:
            show(cast(R, exc.result))
            print(f"interrupted; resume with: {rerun_command()}", file=sys.stderr)
        return exc.exit_code
    return show(result)
