"""``bisect commits start | mark | undo | log | next``: a bisection driven by hand, as `git bisect` is.

Each opens the bisection's own store (locked, bound to the spec's range, target and config,
exactly as an automated run opens it), so marks and automated runs are one record: a resumed
``bisect commits`` uses the marks, and ``next`` uses the automated runs. Nothing here runs a
trial, and nothing touches the user's working tree: ``next`` names the commit, and checks it
out only into a new worktree of its own when asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.git import CommitInfo, add_worktree, open_repo, resolve
from heisenbisect.records import Config
from heisenbisect.studies.commits.marks import (
    Mark,
    Verb,
    counts_of,
    log_lines,
    record_mark,
    undo_mark,
)
from heisenbisect.studies.commits.marks import repair as repair_marks
from heisenbisect.studies.commits.prepare import (
    CommitStudy,
    from_options,
    open_commits_store,
    replayed,
)
from heisenbisect.studies.commits.study import shown
from heisenbisect.studies.options import Options


@dataclass(frozen=True)
class Standing:
    """Where the bisection stands after an action: its headline, and whether it is decided."""

    headline: str
    finished: bool
    trials: int


@dataclass(frozen=True)
class NextProbe:
    """The commit a run would tell most about (None once decided), and where it was checked out."""

    commit: CommitInfo | None
    standing: Standing
    repo: Path
    worktree: Path | None = None


def _standing(study: CommitStudy, store) -> Standing:
    strategy = replayed(study, store)
    seen = shown(study, strategy)
    return Standing(seen.headline, strategy.finished(), seen.result.trials)


def start(options: Options, label: Callable[[str], str] | None = None) -> Standing:
    """Record a bisection without running anything (``--no-run``, ``start``): its store, bound
    to the range, target and config, so that `mark`, `next` and `log` find it at once."""
    study = from_options(options, [], label)
    with open_commits_store(study, options.fresh) as store:
        return _standing(study, store)


def mark(
    options: Options,
    verb: Verb,
    rev: str,
    runs: int | None,
    failures: int | None,
    label: Callable[[str], str] | None = None,
) -> tuple[Mark, Standing]:
    """Record ``runs`` runs of ``rev`` (``failures`` failed), or ``rev`` as untestable."""
    counts = counts_of(verb, runs, failures)
    study = from_options(options, [], label)
    repo = open_repo(study.range.repo)
    try:
        sha = resolve(repo, rev, "mark")
    finally:
        repo.close()
    with open_commits_store(study, fresh=False) as store:
        recorded = record_mark(store, study.range, study.base, verb, rev, sha, *counts)
        return recorded, _standing(study, store)


def undo(
    options: Options, label: Callable[[str], str] | None = None
) -> tuple[Mark | None, Standing]:
    """Withdraw the last mark in force (its runs stay stored, and replays leave them out)."""
    study = from_options(options, [], label)
    with open_commits_store(study, fresh=False) as store:
        return undo_mark(store), _standing(study, store)


def log(
    options: Options,
    prefix: str,
    label: Callable[[str], str] | None = None,
    repair: bool = False,
) -> list[str]:
    """Every mark as the command that records it again, after ``prefix`` (``bisect commits ...``).
    With ``repair``, a damaged marks log is first cut to its valid start (`marks.repair`)."""
    study = from_options(options, [], label)
    with open_commits_store(study, fresh=False) as store:
        repaired = []
        if repair:
            kept, dropped = repair_marks(store)
            repaired = [
                f"# repaired: kept the first {kept} marks; the runs of {dropped} marks after "
                "them stay stored and are left out"
                if dropped
                else f"# the marks log is whole: {kept} marks, nothing repaired"
            ]
        standing = _standing(study, store)
        return [*repaired, *log_lines(store, prefix), f"# {standing.headline}"]


def next_probe(
    options: Options, worktree: Path | None = None, label: Callable[[str], str] | None = None
) -> NextProbe:
    """The commit the automated search would run next; with ``worktree``, checked out there."""
    study = from_options(options, [], label)
    with open_commits_store(study, fresh=False) as store:
        strategy = replayed(study, store)
        standing = _standing(study, store)
        proposed: list[Config] = [] if strategy.finished() else strategy.propose({}, 1)
    repo = study.range.repo
    if not proposed:
        return NextProbe(None, standing, repo)
    infos = {c.sha: c for c in (*study.range.candidates, study.range.good)}
    commit = infos[proposed[0].commit or ""]
    if worktree is not None:
        add_worktree(repo, worktree, commit.sha, "--worktree")
    return NextProbe(commit, standing, repo, worktree.resolve() if worktree else None)
