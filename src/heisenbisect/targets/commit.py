"""A trial at a commit: run in a worktree checked out there, built first when the spec says so.

The commit bisection's target (`studies.commits`) wraps the spec's own: each probe runs in a
worktree of its own, never the user's, with the worktree's ``pythonpath`` folder on PYTHONPATH.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import ClassVar

from heisenbisect.git import WorktreePool
from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.redaction import Redactor, argv_secrets, env_secrets
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.process import kill_tree, start_process_group
from heisenbisect.targets.protocol import merged_environment, trial_outcome

BUILD_TIMEOUT_S = (
    600.0  # commits.build_timeout: a Python package builds in minutes; a hung one is untestable
)
STARTED = (
    "heisenbisect: build started at "  # a build log's second line: the epoch second it started
)
ENDED = (
    "heisenbisect: build ended: "  # its last: how it ended; a log without it is a build under way
)
TAIL_BYTES = 4096


def build_argv(build: list[str] | str | None) -> tuple[str, ...] | None:
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
        build_timeout_s: float = BUILD_TIMEOUT_S,
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
        return {
            k: v for k, v in self.__dict__.items() if k not in ("_pool", "_failed_builds", "_lock")
        }

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
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (str(tree.path / self.pythonpath), existing) if p
                )
            if self.build and not tree.built:
                build_log = log_path.with_name(f"{trial.trial_id}.build.log")
                ok, detail = run_build(
                    self.build,
                    tree.path,
                    merged_environment(env),
                    build_log,
                    cancelled,
                    self.build_timeout_s,
                    getattr(self.inner, "secret_names", ()),
                )
                if cancelled.is_set():
                    return trial_outcome(
                        trial, TrialStatus.ERROR, log_path=log_path, detail="cancelled"
                    )
                if not ok:
                    with self._lock:
                        self._failed_builds.add(sha)
                    return _skip(trial, build_log, f"build failed ({detail})")
                tree.built = True
            workdir = str(tree.path / self.workdir)
            return self.inner.execute(
                dataclasses.replace(trial, workdir=workdir, env=env), log_path, cancelled
            )

    def close(self) -> None:
        """Stop the inner target's state and remove this copy's worktrees; idempotent."""
        self.inner.close()
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> CommitTarget:
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
    secret_names: tuple[str, ...] = (),
) -> tuple[bool, str]:
    """Run the build command; (succeeded, what happened). Killed with its tree on cancel or timeout.

    The log says when the build started and, last, how it ended: `builds_under_way` reads them
    for the live table, from any process (a Ray worker builds in its own).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        log.write(f"$ {shlex.join(argv)}  (in {cwd})\n{STARTED}{time.time():.0f}\n".encode())
        log.flush()
        ok, detail = _build(argv, cwd, env, log, log_path, cancelled, timeout_s)
        log.write(f"\n{ENDED}{detail}\n".encode())
    # the build wrote straight into the log; once it ended, its secrets are masked (`redaction`)
    names = secret_names
    secrets = Redactor().with_known([*env_secrets(env, names), *argv_secrets(argv, names)], names)
    try:
        log_path.write_bytes(secrets.bytes(log_path.read_bytes()))
    except OSError:
        pass  # a full disk: the log stays as the build left it
    return ok, detail


def _build(
    argv: tuple[str, ...],
    cwd: Path,
    env: dict[str, str],
    log,
    log_path: Path,
    cancelled: threading.Event,
    timeout_s: float,
) -> tuple[bool, str]:
    try:
        proc = start_process_group(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
    except OSError as exc:
        return False, f"cannot start: {exc}"
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        if cancelled.is_set() or time.monotonic() > deadline:
            kill_tree(proc)
            if cancelled.is_set():
                return False, "cancelled"
            log.write(
                f"\nheisenbisect: build killed after commits.build_timeout ({timeout_s:g} s)\n".encode()
            )
            return False, f"timed out after {timeout_s:g} s (commits.build_timeout), log {log_path}"
        time.sleep(0.05)
    kill_tree(proc)
    return proc.returncode == 0, f"exit {proc.returncode}, log {log_path}"


def builds_under_way(logs: Path, now: float | None = None) -> list[str]:
    """One line per build still running, from its log: ``building TRIAL: 42s: <its last output line>``."""
    now = time.time() if now is None else now
    lines = []
    for path in sorted(Path(logs).glob("*.build.log")):
        try:
            with open(path, "rb") as log:
                log.readline()  # the command line; the start time is on the second
                head = log.readline().decode(errors="replace")  # "" while the log is still empty
                log.seek(max(0, path.stat().st_size - TAIL_BYTES))
                tail = log.read().decode(errors="replace")
        except OSError:
            continue
        if not head.startswith(STARTED) or ENDED in tail:
            continue
        started = float(head[len(STARTED) :] or now)
        output = [
            line.strip()
            for line in tail.splitlines()
            if line.strip() and not line.startswith(STARTED)
        ]
        last = output[-1][:120] if output and not output[-1].startswith("$ ") else "(no output yet)"
        lines.append(f"building {path.name[: -len('.build.log')]}: {now - started:.0f}s: {last}")
    return lines


def _skip(trial: Trial, log_path: Path, detail: str) -> Outcome:
    return trial_outcome(trial, TrialStatus.SKIP, log_path=log_path, detail=detail)
