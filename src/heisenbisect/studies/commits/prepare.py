"""A commit bisection before its first trial: the resolved range, the config, the prior.

The deciding is `decide.commits.CommitStrategy`; git lives in `git.py`. `prepare` resolves
the spec's range (any problem with it is bad input, exit 2) and, when the spec leaves
``p_bad`` to be learned, counts the runs other studies of the same folder already stored at
the bad commit; `open_commits_store` binds the bisection's own store to all of it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.git import CommitRange, checked_out_at, commit_range, tree_of
from heisenbisect.hypotheses.loader import position
from heisenbisect.hypotheses.model import Commits, Spec
from heisenbisect.layout import (
    CommitsPaths,
    StudyPaths,
    commits_repo,
    target_folder,
    worktree_folder,
)
from heisenbisect.records import Config
from heisenbisect.store import FIRST_IDENTITY_VERSION, IDENTITY_VERSION_KEY, Store
from heisenbisect.studies.commits.direction import strategy_order, strategy_weights
from heisenbisect.studies.commits.marks import replay_without_undone
from heisenbisect.studies.commits.priors import Weights, commit_weights
from heisenbisect.studies.common import open_store
from heisenbisect.studies.identity import RULE, canonical, spec_identity, target_identity
from heisenbisect.study_meta import META_KEY
from heisenbisect.targets.preflight import lines_of, outside_repository


@dataclass(frozen=True)
class CommitStudy:
    """Everything fixed before the first trial: the spec, the resolved range, the config."""

    spec: Spec
    spec_path: Path
    range: CommitRange
    base: Config
    folder: (
        Path  # <output>/<study>/, shared with the screening's study.sqlite, report.md, results.json
    )
    workdir: str = "."  # target.cwd as a folder of each worktree (layout.worktree_folder)
    stored: StoredRuns | None = (
        None  # runs earlier studies left at the failing end, when p is learned
    )
    weights: Weights | None = None  # commits.priors' weight of each candidate (range order)

    @property
    def commits(self) -> Commits:
        assert self.spec.commits is not None
        return self.spec.commits

    @property
    def fix(self) -> bool:
        """Whether the search is for the commit where the failure rate went down (``direction: fix``)."""
        return self.commits.direction == "fix"

    @property
    def paths(self) -> CommitsPaths:
        return StudyPaths(self.folder).commits

    def settings(self) -> Settings:
        c = self.commits
        return Settings(
            p_bad=c.p_bad,
            p_good=c.p_good,
            confidence=c.confidence,
            max_trials=c.max_trials,
            bad_end_trials=c.bad_end_trials,
            stored_bad_runs=self.stored.runs if self.stored else 0,
            stored_bad_failures=self.stored.failed if self.stored else 0,
        )

    def strategy(self) -> CommitStrategy:
        """The deciding, in its own order: a fix's range reversed (`studies.commits.direction`)."""
        shas, good = strategy_order(self.range, self.fix)
        prior = strategy_weights(self.weights.weights if self.weights else None, self.fix)
        return CommitStrategy(shas, good, self.settings(), self.base, prior)

    def identity(self) -> dict:
        """What makes stored trials comparable; confidence and budget may change between runs."""
        c = self.commits
        return {
            **spec_identity(self.spec),
            "kind": "commits",
            "config": self.base.key,
            "good": self.range.good.sha,
            "bad": self.range.bad.sha,
            "first_parent": c.first_parent,
            "paths": list(c.paths),
            "build": c.build,
            "pythonpath": c.pythonpath,
            # only when set, so that stores made before these keys existed keep resuming
            **({"direction": c.direction} if self.fix else {}),
            **({"priors": [canonical(p) for p in c.priors]} if c.priors else {}),
        }


def prepare(
    spec: Spec,
    spec_path: Path,
    base: Config,
    out: str | None = None,
    label: Callable[[str], str] | None = None,
) -> CommitStudy:
    """Resolve the spec's commit range; any problem with it is a `HeisenbisectError` (exit 2).

    ``label(field)`` names a field of ``commits:`` in messages (default: the spec's file:line:col)."""
    if spec.commits is None:
        raise HeisenbisectError(
            f"{spec_path}: no 'commits:' section; add one with repo, good and bad"
        )
    c = spec.commits
    spec_dir = spec_path.parent
    label = label or spec_labeller(spec_path)
    repo, target_dir = commits_repo(spec, spec_dir), target_folder(spec, spec_dir)
    folder = StudyPaths.of(spec, out, spec_path).root
    resolved = commit_range(
        repo, c.good, c.bad, first_parent=c.first_parent, paths=tuple(c.paths), label=label
    )
    workdir = worktree_folder(spec, spec_dir, resolved.repo)
    if workdir is None:
        refused = outside_repository(spec, spec_dir, resolved.repo)
        raise SpecError(lines_of([refused], spec_path))
    failing_end = resolved.good.sha if c.direction == "fix" else resolved.bad.sha
    stored = (
        None
        if c.p_bad is not None
        else stored_bad_end_runs(_countable(spec), repo, target_dir, failing_end, base, folder)
    )
    return CommitStudy(
        spec=spec,
        spec_path=spec_path,
        range=resolved,
        base=base,
        folder=folder,
        workdir=workdir,
        stored=stored,
        weights=commit_weights(resolved.repo, resolved.candidates, c.priors),
    )


def _countable(spec: Spec) -> dict | None:
    """The target identity other stores' runs are matched by; None when it runs no command."""
    return target_identity(spec) if spec.target.command is not None else None


@dataclass(frozen=True)
class StoredRuns:
    """Runs of the same target and config at the bad commit, stored by earlier studies."""

    runs: int
    failed: int
    sources: tuple[str, ...]  # "bisect run: 91 runs (study.sqlite)", ...


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
    made_at_bad = _made_at(repo, bad, lambda: checked_out_at(target_dir, bad))
    runs = failed = 0
    sources = []
    for path, who in _other_stores(StudyPaths(folder)):
        counts = _runs_of(path, wanted, base, made_at_bad)
        if counts[0]:
            runs, failed = runs + counts[0], failed + counts[1]
            sources.append(f"{who}: {counts[0]} runs, {counts[1]} failed ({path.name}{counts[2]})")
    return StoredRuns(runs, failed, tuple(sources)) if runs else None


def _made_at(repo: Path, bad: str, here_at_bad: Callable[[], bool]) -> Callable[[str | None], bool]:
    """``recorded target_commit -> whether runs made there ran the bad commit's code``."""
    bad_tree = tree_of(repo, bad)

    def at_bad(recorded: str | None) -> bool:
        if recorded is None:
            return here_at_bad()
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


def _runs_of(
    path: Path, target: dict, base: Config, at_bad: Callable[[str | None], bool]
) -> tuple[int, int, str]:
    """(runs, failed runs, where they were made) of ``base`` in the store at ``path`` if it ran
    ``target`` at the bad commit; read-only."""
    if not path.exists():
        return 0, 0, ""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            if _stored_target(db) != target:
                return 0, 0, ""
            environment = db.execute("SELECT value FROM meta WHERE key=?", (META_KEY,)).fetchone()
            recorded = json.loads(environment[0]).get("target_commit") if environment else None
            if not at_bad(recorded):
                return 0, 0, ""
            rows = db.execute(
                "SELECT config, failures FROM outcomes WHERE status = 'ok'"
            ).fetchall()
    except (sqlite3.Error, ValueError, AttributeError):
        return 0, 0, ""
    changes = [list(pair) for pair in base.changes]
    mine = [
        failures
        for config, failures in rows
        if json.loads(config) == {"changes": changes, "commit": None}
    ]
    where = f", made at {recorded[:10]}" if recorded else ""
    return len(mine), sum(f > 0 for f in mine), where


def _stored_target(db: sqlite3.Connection) -> dict | None:
    """The target a store's identity names, re-derived under the current identity rule (None: no
    identity, or one of a rule this heisenbisect does not know)."""
    query = "SELECT key, value FROM meta WHERE key IN ('identity', ?)"
    meta = dict(db.execute(query, (IDENTITY_VERSION_KEY,)).fetchall())
    version = int(meta.get(IDENTITY_VERSION_KEY, FIRST_IDENTITY_VERSION))
    if "identity" not in meta or not FIRST_IDENTITY_VERSION <= version <= RULE.version:
        return None
    return RULE.upgrade(json.loads(meta["identity"]), version).get("target")


def spec_labeller(spec_path: Path) -> Callable[[str], str]:
    """``field -> "file:line:col: commits.field"``, the position of that key's value in the spec."""
    try:
        root = yaml.compose(spec_path.read_text(), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        root = None
    section = _value_of(root, "commits")

    def label(field: str) -> str:
        node = _value_of(section, field) or section
        where = position(node, spec_path)
        return f"{where}: commits.{field}"

    return label


def _value_of(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            if key_node.value == key:
                return value
    return None


def open_commits_store(study: CommitStudy, fresh: bool) -> Store:
    """The bisection's own store beside the screening's, bound to the resolved range."""
    return open_store(
        study.paths.store, study.identity(), fresh, "commit bisection", study.paths.companions()
    )


def replayed(study: CommitStudy, store: Store) -> CommitStrategy:
    """The strategy as the stored trials leave it (marks undone by `bisect commits undo` left out)."""
    strategy = study.strategy()
    replay_without_undone(strategy, store)
    return strategy
