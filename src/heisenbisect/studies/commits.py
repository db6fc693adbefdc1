"""A commit bisection end to end: spec + range -> worktrees, builds, trials, store, strategy.

The deciding is `decide.commits.CommitStrategy`; git lives in `git.py`; this module wires
them to the engine, and runs each probe in a worktree of its own (built first, when the
spec has a build command) with the worktree's ``pythonpath`` folder on PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar

import yaml

from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.engine import Engine, Progress, replay
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.git import CommitRange, WorktreePool, checked_out_at, commit_range, remove_stale_worktrees
from heisenbisect.hypotheses.loader import position
from heisenbisect.hypotheses.model import Commits, Spec
from heisenbisect.records import Config, Outcome, Trial, TrialStatus
from heisenbisect.targets.base import TrialTarget
from heisenbisect.runners.factory import make_runner
from heisenbisect.targets.preflight import Problem, commits_repo, lines_of, worktree_folder
from heisenbisect.targets.process import kill_tree, start_process_group
from heisenbisect.targets.protocol import merged_environment, trial_outcome
from heisenbisect.targets.registry import make_target
from heisenbisect.store import Store
from heisenbisect.studies.common import StudyPaths, open_store, spec_identity, trial_factory

STORE_NAME = "commits.sqlite"
REPORT_FILES = ("commits.md", "commits.png", "commits.json")  # reports.commits writes these


@dataclass(frozen=True)
class CommitStudy:
    """Everything fixed before the first trial: the spec, the resolved range, the config."""

    spec: Spec
    spec_path: Path
    range: CommitRange
    base: Config
    folder: Path  # <output>/<study>/, shared with the screening's study.sqlite, report.md, results.json
    workdir: str = "."  # target.cwd as a folder of each worktree (targets.preflight.worktree_folder)
    stored: "StoredRuns | None" = None  # runs earlier studies left at the bad commit, when p is learned

    @property
    def commits(self) -> Commits:
        assert self.spec.commits is not None
        return self.spec.commits

    @property
    def store_path(self) -> Path:
        return self.folder / STORE_NAME

    @property
    def logs_dir(self) -> Path:
        return self.folder / "logs" / "commits"

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
        shas = [c.sha for c in self.range.candidates]
        return CommitStrategy(shas, self.range.good.sha, self.settings(), self.base)

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
        }


def prepare(spec: Spec, spec_path: Path, base: Config, out: str | None = None) -> CommitStudy:
    """Resolve the spec's commit range; any problem with it is a `HeisenbisectError` (exit 2)."""
    if spec.commits is None:
        raise HeisenbisectError(f"{spec_path}: no 'commits:' section; add one with repo, good and bad")
    c = spec.commits
    resolved = commit_range(
        commits_repo(spec, spec_path.parent), c.good, c.bad, first_parent=c.first_parent, paths=tuple(c.paths),
        label=spec_labeller(spec_path),
    )
    workdir = worktree_folder(spec, spec_path.parent, resolved.repo)
    if isinstance(workdir, Problem):
        raise SpecError(lines_of([workdir], spec_path))
    folder = StudyPaths.of(spec, out, spec_path).root
    stored = None if c.p_bad is not None else stored_bad_end_runs(spec, spec_path, resolved.bad.sha, base, folder)
    return CommitStudy(
        spec=spec, spec_path=spec_path, range=resolved, base=base, folder=folder, workdir=workdir, stored=stored
    )


@dataclass(frozen=True)
class StoredRuns:
    """Runs of the same target and config at the bad commit, stored by earlier studies."""

    runs: int
    failed: int
    sources: tuple[str, ...]  # "bisect run: 91 runs (study.sqlite)", ...


# the other studies of a spec whose stores may hold runs at the bad commit: (file, who, its configs)
OTHER_STORES = (("study.sqlite", "bisect run"), ("amplify.sqlite", "bisect amplify"), ("confirm.sqlite", "bisect amplify"))


def stored_bad_end_runs(spec: Spec, spec_path: Path, bad: str, base: Config, folder: Path) -> StoredRuns | None:
    """What `bisect run`'s baseline and `bisect amplify`'s current settings already measured.

    Their runs ran the target in its own folder, not in a worktree: they count only when that
    folder is checked out at the bad commit with no tracked file changed, and only runs of the
    same target and config (a screening arm's or an amplify candidate's do not).
    """
    target_dir = spec_path.resolve().parent / (spec.target.cwd or ".")
    if spec.target.command is None or not checked_out_at(target_dir, bad):
        return None
    wanted = spec.target.model_dump(mode="json")
    runs = failed = 0
    sources = []
    for name, who in OTHER_STORES:
        counts = _runs_of(folder / name, wanted, base)
        if counts[0]:
            runs, failed = runs + counts[0], failed + counts[1]
            sources.append(f"{who}: {counts[0]} runs, {counts[1]} failed ({name})")
    return StoredRuns(runs, failed, tuple(sources)) if runs else None


def _runs_of(path: Path, target: dict, base: Config) -> tuple[int, int]:
    """(runs, failed runs) of ``base`` in the store at ``path`` if it ran ``target``; read-only."""
    if not path.exists():
        return 0, 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT value FROM meta WHERE key='identity'").fetchone()
            if row is None or json.loads(row[0]).get("target") != target:
                return 0, 0
            rows = db.execute("SELECT config, failures FROM outcomes WHERE status = 'ok'").fetchall()
    except sqlite3.Error:
        return 0, 0
    changes = [list(pair) for pair in base.changes]
    mine = [failures for config, failures in rows if json.loads(config) == {"changes": changes, "commit": None}]
    return len(mine), sum(f > 0 for f in mine)


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
    companions = [study.logs_dir, *(study.folder / name for name in REPORT_FILES)]
    return open_store(study.store_path, study.identity(), fresh, "commit bisection", companions)


def replayed(study: CommitStudy, store: Store) -> CommitStrategy:
    """The strategy as the stored trials leave it."""
    strategy = study.strategy()
    replay(strategy, store)
    return strategy


def run_study(
    study: CommitStudy,
    store: Store,
    strategy: CommitStrategy,
    progress: Progress | None = None,
    *,
    runner_override: str | None = None,
    address_override: str | None = None,
) -> None:
    """Probe until ``strategy`` (already replayed from ``store``) is done, on the spec's runner."""
    if strategy.finished():
        return
    spec = study.spec
    commits = study.commits
    target = CommitTarget(
        make_target(spec, study.spec_path.parent),
        study.range.repo,
        spec.execution.parallel,
        _build_argv(commits.build),
        commits.pythonpath,
        study.workdir,
        commits.build_timeout,
    )
    try:
        with target, make_runner(
            spec, target, study.logs_dir, runner_override=runner_override, address_override=address_override
        ) as runner:
            Engine(strategy, runner, store, spec.study, trial_factory(spec), progress).run()
    finally:
        remove_stale_worktrees(study.range.repo)  # those of Ray hosts killed rather than closed


def _build_argv(build: list[str] | str | None) -> tuple[str, ...] | None:
    """A string runs through the shell (``pip install -e python && make``); a list is argv."""
    if build is None:
        return None
    if isinstance(build, str):
        return ("/bin/sh", "-c", build)
    return tuple(build)


class CommitTarget(TrialTarget):
    """Runs a trial of ``inner`` in a worktree checked out at the trial's commit.

    Builds the commit there first when ``build`` is set (once per worktree and commit); a
    failed build makes the trial a ``skip``, which marks the commit untestable. The trial runs
    in ``workdir`` of the worktree (the spec's ``target.cwd`` mapped into it by `prepare`).

    The worktrees come from a `WorktreePool` of up to ``slots`` that each copy of the target
    makes on first use, in the process that runs it: the local runner shares one copy (and
    pool) between its threads; on Ray, ``keeps_state`` gives each probed commit a host actor
    whose copy keeps one worktree, built once, for all of that commit's trials. The repository
    must be at the same path on every Ray node (one host, or a shared filesystem).
    """

    keeps_state: ClassVar[bool] = True

    def __init__(
        self,
        inner: TrialTarget,
        repo: Path,
        slots: int,
        build: tuple[str, ...] | None,
        pythonpath: str | None,
        workdir: str,
        build_timeout_s: float = 1800.0,
    ):
        self.inner = inner
        self.repo = Path(repo)
        self.slots = slots
        self.build = build
        self.pythonpath = pythonpath
        self.workdir = workdir
        self.build_timeout_s = build_timeout_s
        self._setup()

    def _setup(self) -> None:
        self._pool: WorktreePool | None = None
        self._failed_builds: set[str] = set()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        """What a Ray worker needs: the settings, never this process's worktrees or locks."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_pool", "_failed_builds", "_lock")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._setup()

    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome:
        sha = trial.config.commit
        assert sha is not None, "commit trials carry a commit"
        with self._lock:
            failed = sha in self._failed_builds
            if self._pool is None:
                self._pool = WorktreePool(self.repo, self.slots)
            pool = self._pool
        if failed:
            return _skip(trial, log_path, f"build failed earlier for {sha[:10]}")
        with pool.checkout(sha) as tree:
            env = dict(trial.env)
            if self.pythonpath is not None:
                existing = env.get("PYTHONPATH", os.environ.get("PYTHONPATH"))
                env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree.path / self.pythonpath), existing) if p)
            if self.build and not tree.built:
                build_log = log_path.with_name(f"{trial.trial_id}.build.log")
                ok, detail = run_build(
                    self.build, tree.path, merged_environment(env), build_log, cancelled, self.build_timeout_s
                )
                if cancelled.is_set():
                    return trial_outcome(trial, TrialStatus.ERROR, log_path=log_path, detail="cancelled")
                if not ok:
                    with self._lock:
                        self._failed_builds.add(sha)
                    return _skip(trial, build_log, f"build failed ({detail})")
                tree.built = True
            workdir = str(tree.path / self.workdir)
            return self.inner.execute(dataclasses.replace(trial, workdir=workdir, env=env), log_path, cancelled)

    def close(self) -> None:
        """Stop the inner target's state and remove this copy's worktrees; idempotent."""
        self.inner.close()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> "CommitTarget":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_build(
    argv: tuple[str, ...],
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    cancelled: threading.Event,
    timeout_s: float,
) -> tuple[bool, str]:
    """Run the build command; (succeeded, what happened). Killed with its tree on cancel or timeout."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        log.write(f"$ {shlex.join(argv)}  (in {cwd})\n".encode())
        log.flush()
        try:
            proc = start_process_group(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        except OSError as exc:
            return False, f"cannot start: {exc}"
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            if cancelled.is_set() or time.monotonic() > deadline:
                kill_tree(proc)
                if cancelled.is_set():
                    return False, "cancelled"
                log.write(f"\nheisenbisect: build killed after commits.build_timeout ({timeout_s:g} s)\n".encode())
                return False, f"timed out after {timeout_s:g} s (commits.build_timeout), log {log_path}"
            time.sleep(0.05)
        kill_tree(proc)
    return proc.returncode == 0, f"exit {proc.returncode}, log {log_path}"


def _skip(trial: Trial, log_path: Path, detail: str) -> Outcome:
    return trial_outcome(trial, TrialStatus.SKIP, log_path=log_path, detail=detail)
