"""The `Runner` contract as a kit: every check a runner must pass, on real processes.

A new runner (Slurm, Kubernetes) passes the contract when ``run_runner_contract`` returns::

    from heisenbisect.testing.runner_contract import run_runner_contract

    def test_my_runner_keeps_the_contract(tmp_path):
        run_runner_contract(lambda target, logs, capacity: MyRunner(target, logs, slots=capacity), tmp_path)

or, one test per check, parametrize over `CHECKS`. Each check builds its runners through
the factory (a `CommandTarget` running ``sh``, the folder for logs, the slots), closes
them, and raises `AssertionError` naming what broke. The contract itself is the docstring
of `heisenbisect.runners.base.Runner`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from heisenbisect.records import Config, Outcome, Trial, TrialStatus
from heisenbisect.runners.base import Runner
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import CommandTarget

RunnerFactory = Callable[[TrialTarget, Path, int], Runner]
"""Builds the runner under test: (target, folder for trial logs, capacity) -> runner."""

PY = sys.executable


def drain(runner: Runner, expected: int, limit_s: float = 60) -> list[Outcome]:
    """Wait for ``expected`` outcomes from ``runner``, or until ``limit_s`` passes."""
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + limit_s
    while len(outcomes) < expected and time.monotonic() < deadline:
        outcomes.extend(runner.wait(timeout=0.5))
    return outcomes


def sh(script: str, timeout_s: float = 30) -> CommandTarget:
    """A target that runs ``script`` in ``sh``, reading its exit code as `git bisect run` does."""
    return CommandTarget(argv=("sh", "-c", script), timeout_s=timeout_s)


def trial(n: int, config: Config = Config(), **env: str) -> Trial:
    return Trial(trial_id=f"t{n:03d}", config=config, index=n, seed=1000 + n, env=env)


@contextmanager
def _runner(
    make: RunnerFactory, target: TrialTarget, workdir: Path, capacity: int = 2
) -> Iterator[Runner]:
    runner = make(target, workdir / "logs", capacity)
    try:
        yield runner
    finally:
        runner.close()


def _wait_for_files(runner: Runner, files: list[Path], limit_s: float = 30) -> list[Outcome]:
    """Poll the runner until every file holds a line; returns the outcomes seen meanwhile."""
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + limit_s
    while (
        not all(f.exists() and f.read_text().strip() for f in files) and time.monotonic() < deadline
    ):
        outcomes.extend(runner.wait(timeout=0.1))
    assert all(f.exists() and f.read_text().strip() for f in files), (
        f"the trial never started: no {files}"
    )
    return outcomes


def check_one_outcome_per_trial_following_the_protocol(make: RunnerFactory, workdir: Path) -> None:
    script = (
        'case "$MODE" in ok) exit 0;; fail) exit 1;; skip) exit 125;; '
        'json) echo \'{"failures": 2, "total": 5, "metrics": {"tps": 7.5}}\';; esac'
    )
    with _runner(make, sh(script), workdir) as runner:
        for n, mode in enumerate(["ok", "fail", "skip", "json"]):
            runner.submit(trial(n, MODE=mode))
        by_id = {o.trial_id: o for o in drain(runner, 4)}
        assert sorted(by_id) == ["t000", "t001", "t002", "t003"]
        assert (by_id["t000"].status, by_id["t000"].failures) == (TrialStatus.OK, 0)
        assert (by_id["t001"].status, by_id["t001"].failures) == (TrialStatus.OK, 1)
        assert by_id["t002"].status is TrialStatus.SKIP
        assert (by_id["t003"].failures, by_id["t003"].total, by_id["t003"].metrics) == (
            2,
            5,
            {"tps": 7.5},
        )
        assert runner.pending() == 0
        assert runner.wait(timeout=0.1) == []


def check_trial_environment_and_log_reach_the_driver(make: RunnerFactory, workdir: Path) -> None:
    with _runner(
        make,
        sh('echo "factor=$FACTOR_X seed=$HEISENBISECT_SEED id=$HEISENBISECT_TRIAL_ID"'),
        workdir,
    ) as runner:
        runner.submit(trial(7, FACTOR_X="on"))
        (outcome,) = drain(runner, 1)
        assert outcome.log_path is not None
        assert Path(outcome.log_path) == workdir / "logs" / "t007.log"
        log = "--- stdout (28 bytes) ---\nfactor=on seed=1007 id=t007\n--- stderr (0 bytes) ---\n"
        assert Path(outcome.log_path).read_text() == log


def check_submit_never_blocks_and_extra_trials_queue(make: RunnerFactory, workdir: Path) -> None:
    with _runner(make, sh("sleep 2"), workdir, capacity=2) as runner:
        for n in range(5):
            runner.submit(trial(n))
        # had submit waited for a trial, an outcome would be ready by now: none is
        assert runner.wait(timeout=0) == []
        assert runner.pending() == 5
        outcomes = drain(runner, 5)
        assert sorted(o.trial_id for o in outcomes) == [f"t{n:03d}" for n in range(5)]
        assert runner.pending() == 0


def check_wait_returns_nothing_once_its_timeout_passes(make: RunnerFactory, workdir: Path) -> None:
    with _runner(make, sh("sleep 3"), workdir) as runner:
        runner.submit(trial(0))
        assert runner.wait(timeout=0.3) == []
        assert runner.pending() == 1


def check_timeout_is_an_outcome(make: RunnerFactory, workdir: Path) -> None:
    with _runner(make, sh("sleep 30", timeout_s=0.5), workdir) as runner:
        runner.submit(trial(0))
        (outcome,) = drain(runner, 1)
        assert outcome.status is TrialStatus.TIMEOUT


def check_cancel_stops_the_process_tree_and_returns_no_outcome(
    make: RunnerFactory, workdir: Path
) -> None:
    pids = workdir / "pids"
    pids.mkdir(parents=True)
    # the trial and a grandchild record their pids, then sleep; a quick trial runs beside them
    script = (
        f'if [ "$MODE" = quick ]; then exit 0; fi; sleep 60 & echo $! > {pids}/child.$HEISENBISECT_TRIAL_ID; '
        f"echo $$ > {pids}/leader.$HEISENBISECT_TRIAL_ID; wait"
    )
    with _runner(make, sh(script), workdir) as runner:
        runner.submit(trial(0))
        runner.submit(trial(1, MODE="quick"))
        pid_files = [pids / "leader.t000", pids / "child.t000"]
        outcomes = _wait_for_files(runner, pid_files)
        procs = [psutil.Process(int(p.read_text())) for p in pid_files]
        runner.cancel(["t000"])
        outcomes.extend(drain(runner, 1 - len(outcomes)))
        _, alive = psutil.wait_procs(procs, timeout=15)
        assert alive == [], f"cancel left {alive} running"
        assert [o.trial_id for o in outcomes] == ["t001"]
        assert runner.wait(timeout=0.5) == []
        assert runner.pending() == 0


def check_cancel_of_a_queued_trial_means_it_never_runs(make: RunnerFactory, workdir: Path) -> None:
    marker = workdir / "ran"
    with _runner(
        make, sh(f"sleep 0.5; touch {marker}.$HEISENBISECT_TRIAL_ID"), workdir, capacity=1
    ) as runner:
        runner.submit(trial(0))
        runner.submit(trial(1))
        runner.cancel(["t001"])
        outcomes = drain(runner, 1)
        assert [o.trial_id for o in outcomes] == ["t000"]
        assert runner.wait(timeout=1.0) == []
        assert not Path(f"{marker}.t001").exists()


def check_close_is_idempotent_and_stops_running_trials(make: RunnerFactory, workdir: Path) -> None:
    pid_file = workdir / "pid"
    workdir.mkdir(parents=True, exist_ok=True)
    runner = make(sh(f"echo $$ > {pid_file}; exec sleep 60"), workdir / "logs", 2)
    try:
        runner.submit(trial(0))
        _wait_for_files(runner, [pid_file])
        proc = psutil.Process(int(pid_file.read_text()))
    finally:
        runner.close()
    runner.close()
    _, alive = psutil.wait_procs([proc], timeout=15)
    assert alive == [], f"close left {alive} running"


CHECKS: tuple[Callable[[RunnerFactory, Path], None], ...] = (
    check_one_outcome_per_trial_following_the_protocol,
    check_trial_environment_and_log_reach_the_driver,
    check_submit_never_blocks_and_extra_trials_queue,
    check_wait_returns_nothing_once_its_timeout_passes,
    check_timeout_is_an_outcome,
    check_cancel_stops_the_process_tree_and_returns_no_outcome,
    check_cancel_of_a_queued_trial_means_it_never_runs,
    check_close_is_idempotent_and_stops_running_trials,
)


def run_runner_contract(make: RunnerFactory, workdir: Path) -> None:
    """Run every check of the contract against runners built by ``make``, each in its own folder."""
    for check in CHECKS:
        folder = Path(workdir) / check.__name__
        folder.mkdir(parents=True, exist_ok=True)
        check(make, folder)
