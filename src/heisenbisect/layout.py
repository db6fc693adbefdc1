"""Where things are: the folder a target runs in, the repository a bisection probes and the
target's folder in each worktree (from the spec), and the study folder, every file each study
kind keeps under ``<out>/<study>/``, named once.

One folder per study holds the screening (``bisect run``), the commit bisection and the
amplification side by side, each with its own store, logs and report files, so that each
kind's ``--fresh`` moves aside only its own. The studies write these files, the reports
render into them and `bisect report` reads them back: all of them find the names here.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.lock import LOCK_NAME
from heisenbisect.store import store_files

PREVIOUS = "previous"  # where --fresh moves an earlier study (`store.move_aside`)
AMPLIFIED_SUFFIX = (
    "-amplified"  # amplified.yaml's study: its screening's costs are at the stress settings
)


def output_folder(spec: Spec, out: str | os.PathLike | None, spec_path: str | os.PathLike) -> Path:
    """Where studies go: ``out`` from the current folder, else ``output:`` from the spec's folder."""
    if out:
        return Path(out).expanduser().resolve()
    return (Path(spec_path).parent / Path(spec.output).expanduser()).resolve()


def target_folder(spec: Spec, spec_dir: Path) -> Path:
    """The folder trials run in: ``target.cwd`` from the spec's folder (default: that folder)."""
    return (spec_dir / spec.target.cwd).resolve() if spec.target.cwd else spec_dir.resolve()


def commits_repo(spec: Spec, spec_dir: Path) -> Path:
    """``commits.repo``, a relative one taken from the spec's folder."""
    assert spec.commits is not None
    repo = Path(spec.commits.repo).expanduser()
    return repo if repo.is_absolute() else spec_dir.resolve() / repo


def worktree_folder(spec: Spec, spec_dir: Path, repo_root: Path) -> str | None:
    """``target.cwd`` as a folder of each commit's worktree (relative to its root, "." the root).

    ``target.cwd`` is taken from the spec's folder, as `bisect run` takes it; a folder inside the
    repository's working tree is the same folder of the worktree, so a spec or an amplified.yaml
    kept in the repository probes each commit, never the working tree at HEAD. A spec outside the
    repository names a folder of the worktree by a relative ``target.cwd`` (default: its root).
    Any other folder would run every probe outside the commit: None (`preflight` refuses it).
    """
    root = repo_root.resolve()
    folder = target_folder(spec, spec_dir)
    if folder.is_relative_to(root):
        return folder.relative_to(root).as_posix()
    cwd = spec.target.cwd or "."
    inside = posixpath.normpath(cwd)
    if not posixpath.isabs(cwd) and inside != ".." and not inside.startswith("../"):
        return inside
    return None


@dataclass(frozen=True)
class CommitsPaths:
    """The commit bisection's files (`bisect commits`)."""

    root: Path

    @property
    def store(self) -> Path:
        return self.root / "commits.sqlite"

    @property
    def logs(self) -> Path:
        return self.root / "logs" / "commits"

    @property
    def report(self) -> Path:
        return self.root / "commits.md"

    @property
    def plot(self) -> Path:
        return self.root / "commits.png"

    @property
    def results(self) -> Path:
        return self.root / "commits.json"

    @property
    def adhoc_spec(self) -> Path:
        return self.root / "spec.yaml"  # what `bisect commits --good/--bad -- CMD` writes

    def companions(self) -> list[Path]:
        """What ``--fresh`` moves aside with the store."""
        return [self.logs, self.report, self.plot, self.results]


@dataclass(frozen=True)
class VersionsPaths:
    """The version bisection's files (`bisect versions`), in a study folder of its own, and the
    cache of one environment per version (``envs/``, kept by ``--fresh``: an installed version
    stays what it was). Its continuation into commits keeps `CommitsPaths`' files beside them."""

    root: Path

    @property
    def store(self) -> Path:
        return self.root / "versions.sqlite"

    @property
    def logs(self) -> Path:
        return self.root / "logs" / "versions"

    @property
    def report(self) -> Path:
        return self.root / "versions.md"

    @property
    def results(self) -> Path:
        return self.root / "results.json"

    @property
    def envs(self) -> Path:
        return self.root / "envs"

    @property
    def spec(self) -> Path:
        return self.root / "spec.yaml"  # what `bisect versions ... -- CMD` writes

    @property
    def commits_spec(self) -> Path:
        return self.root / "commits-spec.yaml"  # the continuation into the commits between

    def companions(self) -> list[Path]:
        """What ``--fresh`` moves aside with the store."""
        return [self.logs, self.report, self.results]


@dataclass(frozen=True)
class AmplifyPaths:
    """The amplification's files (`bisect amplify`): the search's and the confirmation's stores,
    the Optuna study, the report and, once confirmed, the amplified spec."""

    root: Path

    @property
    def search_store(self) -> Path:
        return self.root / "amplify.sqlite"

    @property
    def confirm_store(self) -> Path:
        return self.root / "confirm.sqlite"

    @property
    def optuna_db(self) -> Path:
        return self.root / "optuna.db"

    @property
    def storage_url(self) -> str:
        return f"sqlite:///{self.optuna_db}"

    @property
    def logs(self) -> Path:
        return self.root / "logs" / "amplify"

    @property
    def report(self) -> Path:
        return self.root / "amplify.md"

    @property
    def plot(self) -> Path:
        return self.root / "amplify.png"

    @property
    def results(self) -> Path:
        return self.root / "amplify.json"

    @property
    def amplified(self) -> Path:
        return self.root / "amplified.yaml"

    def companions(self) -> list[Path]:
        """What ``--fresh`` moves aside with the search store: every other file of this kind."""
        return [
            *store_files(self.confirm_store),
            self.optuna_db,
            self.logs,
            self.report,
            self.plot,
            self.results,
            self.amplified,
        ]


@dataclass(frozen=True)
class WatchPaths:
    """A watched branch's files (`bisect watch`): its state store, its runs' logs, the spec it
    wrote (without a spec file), each regression's bisection folder and paste-ready report."""

    root: Path

    @property
    def store(self) -> Path:
        return self.root / "watch.sqlite"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def spec(self) -> Path:
        return self.root / "watch.yaml"  # what `bisect watch --repo DIR -- CMD` writes

    @property
    def bisections(self) -> Path:
        return self.root / "bisections"

    def bisection_spec(self, step: int) -> Path:
        return self.bisections / f"step-{step:04d}" / "spec.yaml"

    def regression(self, step: int) -> Path:
        return self.root / f"regression-{step:04d}.md"  # the paste-ready report

    def companions(self) -> list[Path]:
        """What ``--fresh`` moves aside with the store."""
        return [self.logs, self.bisections, *sorted(self.root.glob("regression-*.md"))]


@dataclass(frozen=True)
class StudyPaths:
    """Where a study keeps everything: ``<out>/<study>/``; the screening's files are its own,
    the other kinds' are under `commits` and `amplify`."""

    root: Path

    @classmethod
    def of(
        cls, spec: Spec, out: str | os.PathLike | None, spec_path: str | os.PathLike
    ) -> StudyPaths:
        """``<out>/<study>/``: ``out`` (``--out``) as typed, relative to the current folder;
        without it the spec's ``output:`` relative to the spec's own folder, so every command
        and the Python API find the same study from any folder."""
        # absolute: targets run in their own cwd and must still find their result file
        return cls((output_folder(spec, out, spec_path) / spec.study).resolve())

    @property
    def store(self) -> Path:
        return self.root / "study.sqlite"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def report(self) -> Path:
        return self.root / "report.md"

    @property
    def results(self) -> Path:
        return self.root / "results.json"

    @property
    def paste(self) -> Path:
        return self.root / "paste.md"  # the report for an upstream issue, self-contained

    @property
    def plot(self) -> Path:
        return self.root / "rates.png"

    @property
    def search_tree(self) -> Path:
        return self.root / "search-tree.png"  # group screening's splitting tree

    @property
    def commits(self) -> CommitsPaths:
        return CommitsPaths(self.root)

    @property
    def amplify(self) -> AmplifyPaths:
        return AmplifyPaths(self.root)

    @property
    def versions(self) -> VersionsPaths:
        return VersionsPaths(self.root)

    @property
    def watch(self) -> WatchPaths:
        return WatchPaths(self.root / "watch")  # `bisect watch FILE`

    def screening_files(self) -> list[Path]:
        """What ``bisect run --fresh`` moves aside with its store: everything in the folder but the
        lock, earlier move-asides and the other study kinds' files (each kind's share a stem:
        ``commits.*``, ``amplify.*``, ``confirm.*``, ``optuna.*``, ``amplified.*``,
        ``versions.*``, ``logs/<kind>``; and a version bisection's ``envs/`` and
        ``commits-spec.yaml``)."""
        if not self.root.is_dir():
            return []
        c, a, v = self.commits, self.amplify, self.versions
        theirs = [c.store, *c.companions(), a.search_store, *a.companions(), v.store, v.report]
        stems = tuple({p.name.split(".")[0] + "." for p in theirs})
        kept = {LOCK_NAME, PREVIOUS, self.logs.name, self.watch.root.name}  # watch: its own --fresh
        kept |= {v.envs.name, v.commits_spec.name}
        files = [
            p for p in self.root.iterdir() if p.name not in kept and not p.name.startswith(stems)
        ]
        their_logs = {c.logs.name, a.logs.name, v.logs.name}
        logs = (
            [p for p in self.logs.iterdir() if p.name not in their_logs]
            if self.logs.is_dir()
            else []
        )
        return sorted(files + logs)
