"""`bisect factors sglang`: list SGLang's boolean environment flags as factor stanzas for a spec."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
from pathlib import Path

from heisenbisect.errors import HeisenbisectError
from heisenbisect.runners.sglang.environ_flags import (
    EnvFlag,
    EnvironSourceError,
    environ_from_archive,
    environ_from_source,
    fetch_archive,
    parse_environ,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "factors",
        help="list a target's boolean flags as factor stanzas to paste into a spec",
        description="Read SGLang's sglang/srt/environ.py (parsed, never imported) and print its boolean "
        "environment flags as env factors, SGLang's default first. Without --version or --source, "
        "the sglang installed in this interpreter is read.",
    )
    parser.add_argument("target", choices=["sglang"], help="whose flags to list")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--version", dest="sglang_version", metavar="V",
                        help="a released version: its wheel is fetched with `pip download --no-deps`")
    source.add_argument("--source", type=Path, metavar="DIR", help="an SGLang checkout or package folder")
    parser.add_argument("--match", metavar="REGEX", help="only flags whose name matches (case-insensitive)")
    parser.add_argument("--format", choices=["yaml", "table"], default="yaml",
                        help="yaml: factor stanzas (default); table: one 'NAME DEFAULT' line per flag")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir(),
                        help="where downloaded wheels are kept (default: %(default)s)")
    parser.set_defaults(handler=run)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "heisenbisect" / "sglang"


def run(args: argparse.Namespace) -> int:
    text, where = _environ_text(args)
    flags = parse_environ(text, where)
    if args.match:
        try:
            pattern = re.compile(args.match, re.IGNORECASE)
        except re.error as exc:
            raise HeisenbisectError(f"--match: not a regular expression ({exc}), got {args.match!r}") from None
        flags = [f for f in flags if pattern.search(f.name)]
    if args.format == "table":
        for flag in flags:
            print(f"{flag.name:<60} {flag.default_text}")
    else:
        print(stanzas(flags, where))
    return 0


def _environ_text(args: argparse.Namespace) -> tuple[str, str]:
    if args.source is not None:
        return environ_from_source(args.source)
    if args.sglang_version:
        return environ_from_archive(fetch_archive(args.sglang_version, args.cache_dir))
    spec = importlib.util.find_spec("sglang")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise EnvironSourceError("sglang is not installed here: give --version V or --source DIR")
    return environ_from_source(Path(list(spec.submodule_search_locations)[0]))


def stanzas(flags: list[EnvFlag], where: str) -> str:
    """Factor stanzas (YAML) for ``flags``; levels are SGLang's default, then the other value(s)."""
    out = [
        f"# {len(flags)} boolean flags from {where}",
        "# paste the ones you suspect under `factors:`; the first level is SGLang's default",
        "factors:",
    ]
    for flag in flags:
        levels = ", ".join(_yaml_value(v) for v in flag.levels)
        out += [
            f"  - name: {flag.name}",
            "    kind: env",
            f"    var: {flag.name}",
            f"    levels: [{levels}]  # default {flag.default_text} (environ.py:{flag.line})",
        ]
        if flag.comment:
            out.append(f"    description: {json.dumps(flag.comment, ensure_ascii=False)}")
    return "\n".join(out)


def _yaml_value(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")
