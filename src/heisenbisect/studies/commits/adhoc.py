"""``bisect commits --good A --bad B -- CMD``: a bisection with no spec file, as `git bisect run`.

The command line is turned into a spec, written as ``spec.yaml`` into the study's folder
(``<repo>/reports/commits/``, or ``--out``): the study then runs, resumes and reports exactly
as a written spec's, and ``mark``, ``undo``, ``log`` and ``next`` find it there. As in `git
bisect`, one such bisection is under way per folder; another range or command is refused
until ``--fresh`` moves the earlier one aside (nothing is deleted). The new spec is written
only once the store has accepted it: a refused command line leaves the folder as it was.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from heisenbisect.errors import HeisenbisectError
from heisenbisect.git import open_repo, resolve
from heisenbisect.layout import PREVIOUS, StudyPaths

STUDY = "commits"  # the study name, hence the folder, of a bisection started without a spec
FLAGS = {
    "repo": "--repo",
    "good": "--good",
    "bad": "--bad",
}  # the range's fields as this command line names them


@dataclass(frozen=True)
class AdHoc:
    """What the command line says about a bisection without a spec."""

    good: str
    bad: str
    command: list[str]
    repo: str = "."
    out: str | None = None
    fix: bool = False
    result: str = "exit"  # as `bisect trial --result`
    timeout: float | None = None  # None: derived from the ends' run times (studies.commits.check)
    confidence: float = 0.95
    max_trials: int = 2000
    p_good: float | None = None  # --good-never-fails: 0
    p_bad: float | None = None  # --bad-always-fails: 1
    retry_timeouts: int = 0


def flag_label(field: str) -> str:
    """A range field as the command line's option (`studies.commits.prepare.prepare`'s ``label``)."""
    return FLAGS.get(field, f"commits.{field}")


def repo_root(repo: str) -> Path:
    """The top folder of the git work tree holding ``repo``; not one: `HeisenbisectError`."""
    found = open_repo(Path(repo).expanduser().resolve(), "--repo")
    try:
        return Path(found.working_tree_dir or found.git_dir).resolve()
    finally:
        found.close()


def study_root(out: str | None, repo: str) -> Path:
    """``<out>`` or ``<repo's top folder>/reports``: where the ``commits`` study folder goes."""
    return Path(out).expanduser().resolve() if out else repo_root(repo) / "reports"


def spec_path(out: str | None, repo: str) -> Path:
    return StudyPaths(study_root(out, repo) / STUDY).commits.adhoc_spec


@dataclass(frozen=True)
class StagedSpec:
    """The spec a command line makes, not yet written: ``path`` is where it goes once the
    bisection's store has accepted it, so that a refused command line changes nothing."""

    path: Path
    text: str

    @contextmanager
    def draft(self) -> Iterator[Path]:
        """The spec in a temporary file of its own, to load and check before it is saved."""
        with tempfile.TemporaryDirectory(prefix="heisenbisect-spec-") as folder:
            draft = Path(folder) / self.path.name
            draft.write_text(self.text)
            yield draft

    def save(self) -> Path:
        """Write the spec into its study folder (an earlier one that differs goes to
        ``previous/``); called once the store, under the study lock, has accepted it."""
        path = self.path
        if path.exists() and path.read_text() != self.text:
            stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{path.name}"
            kept = path.parent / PREVIOUS / stamp
            kept.parent.mkdir(parents=True, exist_ok=True)
            path.rename(kept)
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")  # inside the repository, `git status` never sees the study
        path.write_text(self.text)
        return path


def stage_adhoc_spec(adhoc: AdHoc, cwd: Path | None = None) -> StagedSpec:
    """The spec of ``adhoc`` and where it goes, checked but not written (`StagedSpec`).

    The trials run in the current folder's place in each worktree (the repository's top folder
    when the current folder lies outside it).
    """
    if not adhoc.command:
        raise HeisenbisectError(
            "commits: give the command to run after '--', e.g. "
            "bisect commits --good v1.0 --bad HEAD -- pytest -x tests/test_flaky.py"
        )
    root = repo_root(adhoc.repo)
    found = open_repo(root, "--repo")
    try:  # shas, not refs: a branch or HEAD that moves later must not move the range under the store
        good, bad = resolve(found, adhoc.good, "--good"), resolve(found, adhoc.bad, "--bad")
    finally:
        found.close()
    here = (cwd or Path.cwd()).resolve()
    target = {
        "command": list(adhoc.command),
        "result": adhoc.result,
        **({"timeout": adhoc.timeout} if adhoc.timeout is not None else {}),
        "cwd": str(here if here.is_relative_to(root) else root),
    }
    commits = {
        "repo": str(root),
        "good": good,
        "bad": bad,
        "confidence": adhoc.confidence,
        "max_trials": adhoc.max_trials,
        **({"direction": "fix"} if adhoc.fix else {}),
        **({"p_good": adhoc.p_good} if adhoc.p_good is not None else {}),
        **({"p_bad": adhoc.p_bad} if adhoc.p_bad is not None else {}),
        **({"retry_timeouts": adhoc.retry_timeouts} if adhoc.retry_timeouts else {}),
    }
    output = study_root(adhoc.out, str(root))
    text = "# written by: bisect commits --good/--bad -- CMD (no spec file); rerun that line to resume\n"
    text += yaml.safe_dump(
        {"study": STUDY, "target": target, "commits": commits, "output": str(output)},
        sort_keys=False,
    )
    return StagedSpec(StudyPaths(output / STUDY).commits.adhoc_spec, text)
