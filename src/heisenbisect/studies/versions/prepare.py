"""A version bisection before its first trial: the request, the listed range, the spec.

`write_spec` lists the package's versions (`releases`), checks the ends against them (a
problem is bad input, exit 2) and writes the study's ``spec.yaml`` (its target: CMD, run in
the current folder), so the study runs, resumes and reports as a spec's does; `prepare`
turns the loaded spec into a `VersionStudy`, whose store is bound to everything that makes
the experiment (`identity`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.utils import canonicalize_name

from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import PREVIOUS, StudyPaths, VersionsPaths
from heisenbisect.records import Config
from heisenbisect.releases import (
    Release,
    VersionRange,
    between,
    parse_version,
    versions_from_index,
    versions_from_pip,
    versions_in_folder,
)
from heisenbisect.store import Store
from heisenbisect.studies.commits.marks import replay_without_undone
from heisenbisect.studies.common import open_store
from heisenbisect.studies.identity import spec_identity
from heisenbisect.targets.installed import Installation, installer


@dataclass(frozen=True)
class VersionsRequest:
    """What ``bisect versions PACKAGE --good V1 --bad V2 ... -- CMD`` asks for."""

    package: str
    good: str
    bad: str
    command: tuple[str, ...]
    find_links: str | None = None
    index_url: str | None = None
    pins: tuple[str, ...] = ()  # --with PKG==VER
    pre: bool = False
    yanked: bool = False
    out: str | None = None
    result: str = "exit"  # as `bisect trial --result`
    timeout: float = 600.0
    confidence: float = 0.95
    max_trials: int = 2000
    repo: str | None = (
        None  # --repo: continue into the commits between (`studies.versions.handover`)
    )
    tag_pattern: str = "v{version}"
    pythonpath: str | None = None  # the worktree folder that holds the package (default: found)
    installer: str = "auto"  # --installer: auto (uv when found, else pip), uv or pip
    end_runs: int = 30  # --end-runs: runs at each end before an undecided range check goes on

    @property
    def study(self) -> str:
        return f"versions-{canonicalize_name(self.package)}"

    def root(self) -> Path:
        """``<--out>`` or ``./reports``: the folder the study's own folder goes into."""
        return Path(self.out or "reports").expanduser().resolve()

    def paths(self) -> VersionsPaths:
        return StudyPaths(self.root() / self.study).versions

    def installation(self) -> Installation:
        find_links = str(Path(self.find_links).expanduser().resolve()) if self.find_links else None
        return Installation(
            self.package, self.pins, find_links, self.index_url, installer(self.installer)
        )


@dataclass(frozen=True)
class VersionStudy:
    """Everything fixed before the first trial: the request, the range, the spec."""

    request: VersionsRequest
    range: VersionRange
    spec: Spec
    spec_path: Path
    installation: Installation

    @property
    def paths(self) -> VersionsPaths:
        return self.request.paths()

    def settings(self) -> Settings:
        return Settings(confidence=self.request.confidence, max_trials=self.request.max_trials)

    def strategy(self) -> CommitStrategy:
        """The commit bisection's strategy: a version list is an ordered candidate list."""
        return CommitStrategy(
            list(self.range.candidates), self.range.good, self.settings(), Config()
        )

    def identity(self) -> dict:
        """What makes stored trials comparable; confidence and budget may change between runs."""
        i = self.installation
        return {
            **spec_identity(self.spec),
            "kind": "versions",
            "package": canonicalize_name(i.package),
            "good": self.range.good,
            "bad": self.range.bad,
            "pins": list(i.pins),
            "find_links": i.find_links,
            "index_url": i.index_url,
            "pre": self.request.pre,
            "yanked": self.request.yanked,
        }


def list_range(request: VersionsRequest) -> VersionRange:
    """The versions between the ends, oldest first; an end the source does not offer: exit 2."""
    good = parse_version(request.good, "--good")
    bad = parse_version(request.bad, "--bad")
    if not good < bad:
        raise HeisenbisectError(
            f"versions: --good {good} is not older than --bad {bad}; the search runs from the "
            "older, working version (--good) to the newer, failing one (--bad)"
        )
    releases, source = _listed(request)
    offered = {r.version for r in releases}
    for option, end in (("--good", good), ("--bad", bad)):
        if end not in offered:
            near = ", ".join(str(r.version) for r in releases[-12:]) or "none"
            raise HeisenbisectError(
                f"versions: {option} {end}: {request.package} {end} is not in {source} "
                f"(its versions, newest last: {near})"
            )
    candidates = between(releases, good, bad, request.pre, request.yanked)
    if len(candidates) < 2:
        raise HeisenbisectError(
            f"versions: nothing to bisect: {request.package} {bad} directly follows {good} in "
            f"{source} (pre-releases and yanked versions count only with --pre / --yanked)"
        )
    return VersionRange(
        request.package, str(good), str(bad), tuple(str(v) for v in candidates), source
    )


def _listed(request: VersionsRequest) -> tuple[list[Release], str]:
    if request.find_links:
        folder = Path(request.find_links).expanduser().resolve()
        return versions_in_folder(folder, request.package), str(folder)
    if request.index_url:
        return versions_from_index(request.index_url, request.package), request.index_url
    if request.yanked:
        raise HeisenbisectError(
            "--yanked: pip's index listing leaves yanked versions out; name the index with "
            "--index-url URL (its simple API marks them)"
        )
    return versions_from_pip(request.package, request.pre), "pip's index"


def write_spec(request: VersionsRequest, versions: VersionRange, cwd: Path | None = None) -> Path:
    """Write the study's spec (its target: CMD in the current folder) and return its path.

    An earlier spec that differs is kept under ``previous/``; the store refuses another
    command unless ``--fresh``."""
    if not request.command:
        raise HeisenbisectError(
            "versions: give the command to run after '--', e.g. "
            "bisect versions mypkg --good 1.0 --bad 1.4 -- python -c 'import mypkg; mypkg.check()'"
        )
    target = {
        "command": list(request.command),
        "result": request.result,
        "timeout": request.timeout,
        "cwd": str((cwd or Path.cwd()).resolve()),
    }
    text = (
        f"# written by: bisect versions {versions.package} --good {versions.good} "
        f"--bad {versions.bad} -- CMD; rerun that line to resume\n"
    )
    text += yaml.safe_dump(
        {"study": request.study, "target": target, "output": str(request.root())}, sort_keys=False
    )
    path = request.paths().spec
    if path.exists() and path.read_text() != text:
        stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        kept = path.parent / PREVIOUS / f"{stamp}-{path.name}"
        kept.parent.mkdir(parents=True, exist_ok=True)
        path.rename(kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def open_versions_store(study: VersionStudy, fresh: bool) -> Store:
    """The bisection's own store, bound to its range, installation and target."""
    return open_store(
        study.paths.store, study.identity(), fresh, "version bisection", study.paths.companions()
    )


def replayed(study: VersionStudy, store: Store) -> CommitStrategy:
    """The strategy as the stored trials leave it, the verification's runs left out."""
    strategy = study.strategy()
    replay_without_undone(strategy, store)  # a version bisection has no marks to undo
    return strategy
