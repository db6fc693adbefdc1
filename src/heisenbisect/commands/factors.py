"""`bisect factors STACK`: a serving stack's boolean flags as factor stanzas for a spec."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from heisenbisect.commands.stack_flags import (
    add_cache_dir_argument,
    add_source_arguments,
    add_stack_argument,
    stack_files,
    yaml_bool,
)
from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.flags import EnvFlag, LaunchFlag
from heisenbisect.stacks.registry import STACKS, with_flag_readers
from heisenbisect.stacks.sources import SourceError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "factors",
        help="list a serving stack's boolean flags as factor stanzas to paste into a spec",
        description="Read the target's own flag definitions (parsed with ast, never imported) and print "
        "its boolean flags as factors, the target's default first. "
        + " ".join(STACKS[name].flag_readers.describes for name in with_flag_readers())
        + " Without --version or --source, the package installed in this interpreter is read.",
    )
    add_stack_argument(parser, "whose flags to list")
    add_source_arguments(
        parser,
        "a released version: its wheel is fetched once with `pip download --no-deps` "
        "(vLLM's is ~340 MB)",
    )
    parser.add_argument(
        "--kind",
        choices=["all", "env", "arg"],
        default="all",
        help="env flags, launch arguments, or both",
    )
    parser.add_argument(
        "--match", metavar="REGEX", help="only flags whose name matches (case-insensitive)"
    )
    parser.add_argument(
        "--format",
        choices=["yaml", "table"],
        default="yaml",
        help="yaml: factor stanzas; table: one 'NAME DEFAULT' line per flag",
    )
    add_cache_dir_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    stack, files = stack_files(args)
    readers = stack.flag_readers
    env_flags: list[EnvFlag] = []
    arg_flags: list[LaunchFlag] = []
    env_where = args_where = ""
    if args.kind in ("all", "env"):
        env_flags, env_where = readers.env_flags(files)
    if args.kind in ("all", "arg"):
        try:
            arg_flags, args_where = readers.launch_flags(files), files.origin
        except SourceError as exc:
            if args.kind == "arg":
                raise
            print(f"note: {exc}: launch arguments not listed", file=sys.stderr)
    if args.match:
        try:
            pattern = re.compile(args.match, re.IGNORECASE)
        except re.error as exc:
            raise HeisenbisectError(
                f"--match: not a regular expression ({exc}), got {args.match!r}"
            ) from None
        env_flags = [f for f in env_flags if pattern.search(f.name)]
        arg_flags = [f for f in arg_flags if pattern.search(f.option) or pattern.search(f.name)]
    if args.format == "table":
        for flag in env_flags:
            print(f"{flag.name:<60} {flag.default_text}")
        for arg in arg_flags:
            print(f"{arg.option:<60} {arg.default_text}")
    else:
        print(stanzas(env_flags, env_where, arg_flags, args_where, Path(readers.needed).name))
    return 0


def stanzas(
    env_flags: list[EnvFlag],
    env_where: str,
    arg_flags: list[LaunchFlag],
    args_where: str,
    env_file: str,
) -> str:
    """Factor stanzas (YAML) for the flags; each one's first level is the target's default;
    ``env_file`` names the file the env flags' line numbers are in."""
    out = []
    if env_where:
        out.append(f"# {len(env_flags)} boolean environment flags from {env_where}")
    if args_where:
        out.append(f"# {len(arg_flags)} boolean launch arguments from {args_where}")
    out += [
        "# paste the ones you suspect under `factors:`; the first level is the default",
        "factors:",
    ]
    for flag in env_flags:
        levels = ", ".join(yaml_bool(v) for v in flag.levels)
        out += [
            f"  - name: {flag.name}",
            "    kind: env",
            f"    var: {flag.name}",
            f"    levels: [{levels}]  # default {flag.default_text} ({env_file}:{flag.line})",
        ]
        if flag.comment:
            out.append(f"    description: {json.dumps(flag.comment, ensure_ascii=False)}")
    for arg in arg_flags:
        levels = ", ".join("[" + ", ".join(level) + "]" for level in arg.levels)
        out += [
            f"  - name: {arg.name}",
            "    kind: arg",
            f"    levels: [{levels}]  # {arg.style}, default {arg.default_text}"
            f"{', deprecated' if arg.deprecated else ''} ({arg.where})",
        ]
        if arg.help:
            out.append(f"    description: {json.dumps(arg.help, ensure_ascii=False)}")
    return "\n".join(out)
