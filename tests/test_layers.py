"""The package's layers: the CLI's commands on top, then the Python API, the studies, the
reports and what they stand on; a layer imports only the layers below it (docs/api.md, "Under
the faces"). Read from the source's own import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import heisenbisect

SRC = Path(heisenbisect.__file__).parent


def imported(path: Path) -> set[str]:
    """Every ``heisenbisect`` module ``path`` imports (``from heisenbisect import x`` names ``heisenbisect.x``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return {name for name in names if name.split(".")[0] == "heisenbisect"}


def importers_of(prefixes: tuple[str, ...], files) -> dict[str, list[str]]:
    found = {}
    for path in files:
        hits = sorted(m for m in imported(path) if any(m == p or m.startswith(p + ".") for p in prefixes))
        if hits:
            found[str(path.relative_to(SRC))] = hits
    return found


def test_nothing_below_the_faces_imports_them():
    """Only the CLI imports its commands; nothing the faces stand on imports the API either."""
    not_cli = [p for p in SRC.rglob("*.py") if p.parent.name != "commands" and p.name != "cli.py"]
    assert importers_of(("heisenbisect.commands",), not_cli) == {}
    below_faces = [p for p in not_cli if p.name not in ("api.py", "__main__.py", "entry.py")]
    assert importers_of(("heisenbisect.api", "heisenbisect.cli"), below_faces) == {}


def test_reports_read_and_render_and_never_reach_up_or_write_the_store():
    upward = ("heisenbisect.studies", "heisenbisect.api", "heisenbisect.commands", "heisenbisect.cli")
    reports = list((SRC / "reports").rglob("*.py"))
    assert importers_of(upward, reports) == {}
    assert [p.name for p in reports if "set_meta(" in p.read_text()] == []  # the studies record a run
