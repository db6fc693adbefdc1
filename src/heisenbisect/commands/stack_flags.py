"""What `bisect factors` and `bisect suspects` share: the stack argument, the arguments that say
where a serving stack's own flag definitions are read from, those files, and how a flag's value is
spelled in the spec they print."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heisenbisect.stacks.base import Stack
from heisenbisect.stacks.registry import STACKS, with_flag_readers
from heisenbisect.stacks.sources import PackageFiles, package_files


def add_stack_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """The positional ``target``: a registered stack whose flags can be read."""
    parser.add_argument("target", choices=with_flag_readers(), help=help_text)


def add_source_arguments(parser: argparse.ArgumentParser, version_help: str) -> None:
    """``--version V`` or ``--source DIR``: which release's files to read (neither: the installed
    one)."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--version", dest="package_version", metavar="V", help=version_help)
    source.add_argument("--source", type=Path, metavar="DIR", help="a checkout or package folder")


def add_cache_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="where downloaded wheels are kept (default: ~/.cache/heisenbisect/TARGET)",
    )


def stack_files(args: argparse.Namespace) -> tuple[Stack, PackageFiles]:
    """The asked-for stack and its files: ``--source``, ``--version`` or the installed package."""
    stack = STACKS[args.target]
    assert stack.flags is not None  # the choices are the stacks with flag readers
    files = package_files(
        stack.package, stack.flags.needed, args.package_version, args.source, args.cache_dir
    )
    if args.package_version is None and args.source is None and files.is_archive:
        print(
            f"note: {stack.package} is not installed here: reading the newest cached release, "
            f"{Path(files.origin).name} (--version V for another)",
            file=sys.stderr,
        )
    return stack, files


def yaml_bool(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")
