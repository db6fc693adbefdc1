"""Runs other studies of the same folder already stored at the failing end, when a bisection
learns ``p_bad`` (`prepare`): `bisect run`'s baseline and `bisect amplify`'s current settings.

The stores are read first (sqlite, read-only); git is asked once at the end whether the commit
each store recorded checks out the failing end's tree.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.git import checked_out_at, tree_of
from heisenbisect.layout import StudyPaths
from heisenbisect.records import Config
from heisenbisect.store import FIRST_IDENTITY_VERSION, IDENTITY_VERSION_KEY
from heisenbisect.studies.identity import RULE
from heisenbisect.study_meta import META_KEY


@dataclass(frozen=True)
class StoredRuns:
    """Runs of the same target and config at the bad commit, stored by earlier studies."""

    runs: int
    failed: int
    sources: tuple[str, ...]  # "bisect run: 91 runs (study.sqlite)", ...


@dataclass(frozen=True)
class _Found:
    """One store's runs of the config, and the commit its environment recorded (None: none)."""

    path: Path
    who: str
    recorded: str | None
    runs: int
    failed: int


def stored_bad_end_runs(
    wanted: dict | None, repo: Path, target_dir: Path, bad: str, base: Config, folder: Path
) -> StoredRuns | None:
    """What `bisect run`'s baseline and `bisect amplify`'s current settings already measured.

    Found by identity (``wanted``, the spec's `studies.identity.target_identity`; None: a
    target without a command, nothing to count), not by where this bisection runs: a store
    counts when it ran the same target (command, environment, folder) under the same config,
    and its recorded environment says the target's folder (``target_dir``) was at the bad
    commit (or one with the same tree) with no tracked file changed, whichever working copy
    that was and wherever HEAD is now. A store that predates that record counts only while
    the target's folder is checked out at the bad commit, as before. A screening arm's or an
    amplify candidate's runs never count.
    """
    if wanted is None:
        return None
    stores = _other_stores(StudyPaths(folder))
    found = [f for path, who in stores if (f := _runs_of(path, who, wanted, base))]
    if not found:
        return None
    at_bad = _made_at(repo, bad, target_dir)
    kept = [f for f in found if at_bad(f.recorded)]
    if not kept:
        return None
    sources = tuple(
        f"{f.who}: {f.runs} runs, {f.failed} failed ({f.path.name}"
        + (f", made at {f.recorded[:10]})" if f.recorded else ")")
        for f in kept
    )
    return StoredRuns(sum(f.runs for f in kept), sum(f.failed for f in kept), sources)


def _made_at(repo: Path, bad: str, target_dir: Path) -> Callable[[str | None], bool]:
    """``recorded target_commit -> whether runs made there ran the bad commit's code``."""
    bad_tree = tree_of(repo, bad)

    def at_bad(recorded: str | None) -> bool:
        if recorded is None:
            return checked_out_at(target_dir, bad)
        if recorded.endswith("+dirty"):
            return False
        return recorded == bad or (bad_tree is not None and tree_of(repo, recorded) == bad_tree)

    return at_bad


def _other_stores(paths: StudyPaths) -> list[tuple[Path, str]]:
    """The other studies of a spec whose stores may hold runs at the bad commit, with who wrote them."""
    return [
        (paths.store, "bisect run"),
        (paths.amplify.search_store, "bisect amplify"),
        (paths.amplify.confirm_store, "bisect amplify"),
    ]


def _runs_of(path: Path, who: str, target: dict, base: Config) -> _Found | None:
    """The runs of ``base`` in the store at ``path`` if it ran ``target`` (None: none); read-only."""
    if not path.exists():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            if _stored_target(db) != target:
                return None
            environment = db.execute("SELECT value FROM meta WHERE key=?", (META_KEY,)).fetchone()
            recorded = json.loads(environment[0]).get("target_commit") if environment else None
            rows = db.execute(
                "SELECT config, failures FROM outcomes WHERE status = 'ok'"
            ).fetchall()
    except (sqlite3.Error, ValueError, AttributeError):
        return None
    changes = [list(pair) for pair in base.changes]
    mine = [
        failures
        for config, failures in rows
        if json.loads(config) == {"changes": changes, "commit": None}
    ]
    return _Found(path, who, recorded, len(mine), sum(f > 0 for f in mine)) if mine else None


def _stored_target(db: sqlite3.Connection) -> dict | None:
    """The target a store's identity names, re-derived under the current identity rule (None: no
    identity, or one of a rule this heisenbisect does not know)."""
    query = "SELECT key, value FROM meta WHERE key IN ('identity', ?)"
    meta = dict(db.execute(query, (IDENTITY_VERSION_KEY,)).fetchall())
    version = int(meta.get(IDENTITY_VERSION_KEY, FIRST_IDENTITY_VERSION))
    if "identity" not in meta or not FIRST_IDENTITY_VERSION <= version <= RULE.version:
        return None
    return RULE.upgrade(json.loads(meta["identity"]), version).get("target")
