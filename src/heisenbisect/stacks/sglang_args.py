"""SGLang's boolean launch arguments (``--disable-cuda-graph``, ...), read from its own definitions:
``parser.add_argument`` calls in ``sglang/srt/server_args.py`` (every release; before 0.5.2x all
arguments were declared this way), and the ``A[bool, ...]`` dataclass fields of ``server_args.py``
and ``sglang/srt/arg_groups/fields/*.py``, which SGLang's ``add_cli_args_from_dataclass`` turns
into ``--x`` (`python_flags` parses both shapes).
"""

from __future__ import annotations

import ast

from heisenbisect.stacks.flags import LaunchFlag
from heisenbisect.stacks.python_flags import field_option, parse_launch_flags
from heisenbisect.stacks.sources import PackageFiles

SERVER_ARGS = "sglang/srt/server_args.py"
FIELDS_FOLDER = "sglang/srt/arg_groups/fields/"
SHORT_PREFIX = "sglang/srt/"  # flags say where they are declared without it


def launch_flags(files: PackageFiles) -> list[LaunchFlag]:
    """Every boolean launch argument the SGLang in ``files`` declares, each option once, in file order."""
    server_args = files.require(SERVER_ARGS)
    flags: dict[str, LaunchFlag] = {}
    for source in (server_args, *files.under(FIELDS_FOLDER)):
        for flag in parse_launch_flags(source, SHORT_PREFIX):
            flags.setdefault(flag.option, flag)
    return list(flags.values())


def launch_options(files: PackageFiles) -> frozenset[str]:
    """Every option ``launch_server`` takes, of any type (booleans' ``--no-x`` too), for checking a
    spec's flags: the add_argument calls of ``server_args.py`` and the ``A[...]`` fields with a CLI."""
    server_args = files.require(SERVER_ARGS)
    options: set[str] = set()
    for source in (server_args, *files.under(FIELDS_FOLDER)):
        tree = ast.parse(source.text, filename=source.where)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                options.update(
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and a.value.startswith("--")
                )
            elif isinstance(node, ast.ClassDef):
                options.update(o for stmt in node.body if (o := field_option(stmt)))
    for flag in launch_flags(files):
        options.update(o for level in flag.levels for o in level)
    return frozenset(options)
