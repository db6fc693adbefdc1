"""`bisect factors sglang|vllm`: a serving stack's boolean flags as factor stanzas for a spec."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from heisenbisect.commands.stack_flags import (NEEDED, add_cache_dir_argument, add_source_arguments, package_files,
                                               yaml_bool)
from heisenbisect.commands.stack_flags import env_flags as stack_env_flags
from heisenbisect.errors import HeisenbisectError
from heisenbisect.registries.flags import EnvFlag
from heisenbisect.registries.sglang_args import LaunchFlag, launch_flags
from heisenbisect.registries.sources import SourceError
from heisenbisect.registries.vllm_args import vllm_launch_flags

LAUNCH_FLAGS = {"sglang": launch_flags, "vllm": vllm_launch_flags}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "factors",
        help="list a serving stack's boolean flags as factor stanzas to paste into a spec",
        description="Read the target's own flag definitions (parsed with ast, never imported) and print "
        "its boolean flags as factors, the target's default first. sglang: the EnvBool flags of "
        "sglang/srt/environ.py as env factors, and the boolean launch arguments of server_args.py and "
        "arg_groups/fields/ as arg factors. vllm: the boolean variables of vllm/envs.py as env "
        "factors, and the boolean options of `vllm serve` (engine/arg_utils.py with the config classes "
        "of vllm/config/, and the frontend's fields) as arg factors. Without --version or --source, the package installed in this interpreter is read.",
    )
    parser.add_argument("target", choices=sorted(NEEDED), help="whose flags to list")
    add_source_arguments(parser, "a released version: its wheel is fetched once with `pip download --no-deps` "
                         "(vLLM's is ~340 MB)")
    parser.add_argument("--kind", choices=["all", "env", "arg"], default="all",
                        help="env flags, launch arguments, or both")
    parser.add_argument("--match", metavar="REGEX", help="only flags whose name matches (case-insensitive)")
    parser.add_argument("--format", choices=["yaml", "table"], default="yaml",
                        help="yaml: factor stanzas; table: one 'NAME DEFAULT' line per flag")
    add_cache_dir_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    files = package_files(args.target, args.package_version, args.source, args.cache_dir)
    env_flags: list[EnvFlag] = []
    arg_flags: list[LaunchFlag] = []
    env_where = args_where = ""
    if args.kind in ("all", "env"):
        env_flags, env_where = stack_env_flags(args.target, files)
    if args.kind in ("all", "arg"):
        try:
            arg_flags, args_where = LAUNCH_FLAGS[args.target](files), files.origin
        except SourceError as exc:
            if args.kind == "arg":
                raise
            print(f"note: {exc}: launch arguments not listed", file=sys.stderr)
    if args.match:
        try:
            pattern = re.compile(args.match, re.IGNORECASE)
        except re.error as exc:
            raise HeisenbisectError(f"--match: not a regular expression ({exc}), got {args.match!r}") from None
        env_flags = [f for f in env_flags if pattern.search(f.name)]
        arg_flags = [f for f in arg_flags if pattern.search(f.option) or pattern.search(f.name)]
    if args.format == "table":
        for flag in env_flags:
            print(f"{flag.name:<60} {flag.default_text}")
        for arg in arg_flags:
            print(f"{arg.option:<60} {arg.default_text}")
    else:
        print(stanzas(env_flags, env_where, arg_flags, args_where, args.target))
    return 0


def stanzas(env_flags: list[EnvFlag], env_where: str, arg_flags: list[LaunchFlag], args_where: str,
            target: str = "sglang") -> str:
    """Factor stanzas (YAML) for the flags; each one's first level is the target's default."""
    env_file = Path(NEEDED[target]).name
    out = []
    if env_where:
        out.append(f"# {len(env_flags)} boolean environment flags from {env_where}")
    if args_where:
        out.append(f"# {len(arg_flags)} boolean launch arguments from {args_where}")
    out += ["# paste the ones you suspect under `factors:`; the first level is the default", "factors:"]
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
