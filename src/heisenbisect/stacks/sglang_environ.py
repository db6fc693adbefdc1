"""SGLang's boolean environment flags, read from ``sglang/srt/environ.py`` by parsing it.

Importing sglang needs its GPU stack; parsing the one file with `ast` needs nothing.
A flag is a class attribute assigned an ``EnvBool(default)`` (or a subclass such as
``EnvBoolWithAlias``); its default is a literal, or a function SGLang calls at run time
(``_default_hip``), which we report as unknown.
"""

from __future__ import annotations

import ast

from heisenbisect.stacks.flags import EnvFlag, comment_above, literal_default
from heisenbisect.stacks.sources import PackageFiles, SourceError

ENVIRON_SUFFIX = "sglang/srt/environ.py"


def parse_environ(source: str, filename: str = "environ.py") -> list[EnvFlag]:
    """Every boolean flag declared in ``source``, in file order."""
    tree = ast.parse(source, filename=filename)
    bool_classes = _bool_field_classes(tree)
    lines = source.splitlines()
    flags: list[EnvFlag] = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target, call = stmt.targets[0], stmt.value
            if not (isinstance(target, ast.Name) and isinstance(call, ast.Call)):
                continue
            if not (isinstance(call.func, ast.Name) and call.func.id in bool_classes):
                continue
            default_node = (
                call.args[0]
                if call.args
                else next((k.value for k in call.keywords if k.arg == "default"), None)
            )
            default, text = literal_default(default_node)
            flags.append(
                EnvFlag(
                    target.id,
                    default,
                    text,
                    stmt.lineno,
                    comment_above(lines, stmt.lineno, rule_ends=True),
                )
            )
    return flags


def _bool_field_classes(tree: ast.Module) -> set[str]:
    """``EnvBool`` and every class in the file that derives from it."""
    names = {"EnvBool"}
    changed = True
    while changed:
        changed = False
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name not in names:
                if any(isinstance(b, ast.Name) and b.id in names for b in node.bases):
                    names.add(node.name)
                    changed = True
    return names


def env_flags(files: PackageFiles) -> tuple[list[EnvFlag], str]:
    """(flags, where environ.py was read) for the SGLang in ``files``."""
    environ = files.get(ENVIRON_SUFFIX)
    if environ is None:
        raise SourceError(
            f"{files.origin} has no {ENVIRON_SUFFIX} (SGLang versions before 0.5 lack it)"
        )
    return parse_environ(environ.text, environ.where), environ.where
