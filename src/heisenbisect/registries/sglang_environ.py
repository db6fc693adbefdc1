"""SGLang's boolean environment flags, read from ``sglang/srt/environ.py`` by parsing it.

Importing sglang needs its GPU stack; parsing the one file with `ast` needs nothing.
A flag is a class attribute assigned an ``EnvBool(default)`` (or a subclass such as
``EnvBoolWithAlias``); its default is a literal, or a function SGLang calls at run time
(``_default_hip``), which we report as unknown.
"""

from __future__ import annotations

import ast
import tarfile
import zipfile
from pathlib import Path

from heisenbisect.registries import sources
from heisenbisect.registries.flags import EnvFlag

ENVIRON_SUFFIX = "sglang/srt/environ.py"


# SGLang's environ.py could not be found or read: wrong --source folder, a version older
# than environ.py (before 0.5), no network to PyPI for ``--version``
EnvironSourceError = sources.SourceError


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
            default_node = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "default"), None)
            default, text = _default(default_node)
            flags.append(EnvFlag(target.id, default, text, stmt.lineno, _comment_above(lines, stmt.lineno)))
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


def _default(node: ast.expr | None) -> tuple[bool | None, str]:
    if node is None:
        return None, "None"
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, type(None))):
        return node.value, repr(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        value = node.value.strip().lower()
        if value in ("true", "1", "yes", "y", "false", "0", "no", "n"):
            return value in ("true", "1", "yes", "y"), repr(node.value)
    return None, ast.unparse(node)


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comment block right above line ``lineno``; a section rule (``# ====``) ends it."""
    comment: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        text = lines[i].strip().lstrip("#").strip()
        if text and set(text) == {"="}:
            break
        if text:
            comment.insert(0, text)
        i -= 1
    return " ".join(comment)


# ---------------------------------------------------------------- where environ.py comes from


def environ_from_source(directory: Path) -> tuple[str, str]:
    """(text, path) of environ.py in an SGLang checkout (``python/sglang/...``) or package folder."""
    for candidate in (directory / "python" / ENVIRON_SUFFIX, directory / ENVIRON_SUFFIX,
                      directory / "srt" / "environ.py"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8"), str(candidate)
    raise EnvironSourceError(f"--source {directory}: no {ENVIRON_SUFFIX} or python/{ENVIRON_SUFFIX} under it")


def environ_from_archive(archive: Path) -> tuple[str, str]:
    """(text, archive!member) of environ.py inside a wheel or an sdist."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            member = next((n for n in zf.namelist() if n.endswith(ENVIRON_SUFFIX)), None)
            if member:
                return zf.read(member).decode("utf-8"), f"{archive}!{member}"
    else:
        with tarfile.open(archive) as tf:
            member = next((m for m in tf.getmembers() if m.name.endswith(ENVIRON_SUFFIX)), None)
            if member:
                return tf.extractfile(member).read().decode("utf-8"), f"{archive}!{member.name}"
    raise EnvironSourceError(f"{archive} has no {ENVIRON_SUFFIX} (SGLang versions before 0.5 lack it)")


def find_archive(version: str, cache_dir: Path) -> Path | None:
    return sources.find_archive("sglang", version, cache_dir)


def fetch_archive(version: str, cache_dir: Path) -> Path:
    """The sglang==version wheel (or sdist) in ``cache_dir``, downloaded with pip when missing."""
    return sources.fetch_archive("sglang", version, cache_dir)
