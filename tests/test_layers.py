"""The package's layers (docs/architecture.md): a module imports only modules of a lower layer,
or of its own package. Read from the source's own import statements, function-level imports and
``TYPE_CHECKING`` blocks included, so a new upward import fails here before review."""

from __future__ import annotations

import ast
from pathlib import Path

import heisenbisect

SRC = Path(heisenbisect.__file__).parent

# Top to bottom; the names of one tier do not import each other. ``heisenbisect`` alone (its
# ``__version__``) is below them all. A module or package missing here fails the test: place it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("entry",),
    ("cli",),
    ("commands",),
    ("api",),
    ("studies",),
    ("reports",),  # renders a finished result; decides nothing
    ("testing",),  # conformance kits: nothing of the package imports them
    ("engine",),
    ("runners",),
    ("targets",),
    ("decide",),  # pure: the statistics and every rule behind a verdict, a refusal, an exit code
    ("layout", "study_meta"),
    ("hypotheses",),
    ("stacks", "checks"),  # one module per serving stack; response checks as plugins
    ("store", "machine", "progress", "flag_simulation"),
    ("lock", "git", "simulation", "releases"),
    ("markers",),
    ("records", "errors", "exit_codes", "runner_kinds", "user_text", "redaction", "signals"),
)

# Packages with layers of their own, top to bottom, ranked as LAYERS is.
SUBLAYERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "targets": (
        ("registry",),
        ("server",),
        ("openai",),
        ("installed",),
        ("command", "commit", "preflight", "log_endings"),
        ("base", "protocol", "process", "live_log", "env_reads"),
        ("reaper", "tracebacks", "log_tail"),
    ),
}

ALLOWED: set[tuple[str, str]] = set()  # (file, module) climbs tolerated for now: none


def ranks(layers: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    """Each name's rank: the bottom tier is 1, each tier above one more."""
    return {name: len(layers) - i for i, tier in enumerate(layers) for name in tier}


def imported(path: Path, src: Path) -> set[str]:
    """Every ``heisenbisect`` module ``path`` imports: ``from heisenbisect import x`` names the
    module ``heisenbisect.x`` when there is one, else the package itself."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            for alias in node.names:
                inside = src.joinpath(*node.module.split(".")[1:], alias.name)
                if inside.with_suffix(".py").exists() or inside.is_dir():
                    names.add(f"{node.module}.{alias.name}")
    return {name for name in names if name.split(".")[0] == "heisenbisect"}


def position(parts: list[str]) -> tuple[tuple[str, int | None], ...]:
    """Where a module stands: its top-level rank, then its rank inside a layered package."""
    top = parts[0]
    where: list[tuple[str, int | None]] = [(top, ranks(LAYERS).get(top))]
    if top in SUBLAYERS and len(parts) > 1:
        where.append((parts[1], ranks(SUBLAYERS[top]).get(parts[1])))
    return tuple(where)


def climbs(importer: list[str], target: list[str]) -> bool:
    """Whether an import from ``importer`` to ``target`` (module paths below ``heisenbisect``)
    goes to a rank that is not lower, outside the importer's own package (or sub-package)."""
    if not target:
        return False  # the package's own __init__: its __version__
    for (mine, my_rank), (theirs, their_rank) in zip(position(importer), position(target)):
        if mine != theirs:
            return their_rank is None or my_rank is None or their_rank >= my_rank
    return False


def module_parts(path: Path, src: Path) -> list[str]:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def violations(src: Path) -> list[str]:
    """``file -> module`` for every import that is not to a lower layer or the same package."""
    found = []
    for path in sorted(src.rglob("*.py")):
        me = module_parts(path, src)
        if not me:  # the package's __init__: it loads the API on first use, importing nothing
            continue
        for name in sorted(imported(path, src)):
            relative = str(path.relative_to(src))
            if (relative, name) not in ALLOWED and climbs(me, name.split(".")[1:]):
                found.append(f"{relative} -> {name}")
    return found


def unranked(src: Path) -> list[str]:
    """Top-level modules and packages (and those of a layered package) without a rank."""
    def names(folder: Path) -> set[str]:
        return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
            p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()
        }

    missing = sorted(names(src) - set(ranks(LAYERS)))
    for package, layers in SUBLAYERS.items():
        if (src / package).is_dir():
            missing += [f"{package}/{n}" for n in sorted(names(src / package) - set(ranks(layers)))]
    return missing


def test_every_module_has_a_layer():
    assert unranked(SRC) == []


def test_every_import_goes_down_a_layer_or_stays_in_its_package():
    assert violations(SRC) == []


def test_the_allowed_exceptions_still_exist():
    """An allowed climb that is gone is taken off the list, so it cannot come back unnoticed."""
    present = {
        (str(p.relative_to(SRC)), name) for p in SRC.rglob("*.py") for name in imported(p, SRC)
    }
    assert ALLOWED <= present


def write(root: Path, relative: str, text: str = "") -> None:
    path = root / "heisenbisect" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_an_upward_import_fails_the_rule(tmp_path):
    """On a synthetic package: the rule sees a climb at the top level, inside a layered package,
    at function level and through ``from heisenbisect import``; it lets the downward ones pass."""
    write(tmp_path, "__init__.py", "__version__ = '0'\n")
    for package in ("decide", "studies", "reports", "targets", "targets/server", "targets/openai"):
        write(tmp_path, f"{package}/__init__.py")
    write(tmp_path, "records.py")
    write(tmp_path, "reports/screening.py", "from heisenbisect.decide.rules import rule\n")
    write(tmp_path, "studies/drive.py",
          "from heisenbisect.reports.screening import x\nfrom heisenbisect import records\n")
    write(tmp_path, "decide/rules.py", "def rule():\n    from heisenbisect.studies import d\n")
    write(tmp_path, "reports/launches.py",
          "from heisenbisect import studies\nfrom heisenbisect import __version__\n")
    write(tmp_path, "targets/openai/tools.py", "from heisenbisect.targets.server import P\n")
    write(tmp_path, "targets/server/pool.py", "from heisenbisect.targets.openai.tools import t\n")
    src = tmp_path / "heisenbisect"
    assert violations(src) == [
        "decide/rules.py -> heisenbisect.studies",
        "reports/launches.py -> heisenbisect.studies",
        "targets/openai/tools.py -> heisenbisect.targets.server",
    ]
    write(tmp_path, "newcomer.py")
    assert unranked(src) == ["newcomer"]


def test_reports_never_write_the_store():
    """The studies record a run; a report only reads it."""
    reports = list((SRC / "reports").rglob("*.py"))
    assert [p.name for p in reports if "set_meta(" in p.read_text()] == []
