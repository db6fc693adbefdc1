"""The `Runner` contract, run once per backend (local threads, a real local Ray) on real processes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil
import pytest

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget
from heisenbisect.runners.local import LocalRunner
from runner_helpers import drain

PY = sys.executable


def sh(script: str, timeout_s: float = 30) -> CommandTarget:
    return CommandTarget(argv=("sh", "-c", script), timeout_s=timeout_s)


def trial(n: int, config: Config = Config(), **env: str) -> Trial:
    return Trial(trial_id=f"t{n:03d}", config=config, index=n, seed=1000 + n, env=env)


@pytest.fixture(
    params=["local", pytest.param("ray", marks=pytest.mark.ray), pytest.param("ray-hosts", marks=pytest.mark.ray)]
)
def make_runner(request, tmp_path):
    """Builds a runner of the parametrized backend with ``capacity`` slots; closes them all after.

    ``ray-hosts`` runs each config's trials in one actor (for targets that keep a server up).
    """
    made = []

    def make(target: CommandTarget, capacity: int = 2):
        if request.param == "local":
            runner = LocalRunner(target, tmp_path / "logs", parallel=capacity)
        else:
            request.getfixturevalue("ray_session")
            from heisenbisect.runners.ray_runner import RayRunner

            hosts = request.param == "ray-hosts"
            runner = RayRunner(
                target, tmp_path / "logs", max_in_flight=capacity, cpus_per_trial=0.5, per_config_hosts=hosts
            )
        made.append(runner)
        return runner

    yield make
    for runner in made:
        runner.close()


def test_one_outcome_per_trial_following_the_protocol(make_runner):
    runner = make_runner(
        sh('case "$MODE" in ok) exit 0;; fail) exit 1;; skip) exit 125;; '
           'json) echo \'{"failures": 2, "total": 5, "metrics": {"tps": 7.5}}\';; esac')
    )
    for n, mode in enumerate(["ok", "fail", "skip", "json"]):
        runner.submit(trial(n, MODE=mode))
    by_id = {o.trial_id: o for o in drain(runner, 4)}
    assert sorted(by_id) == ["t000", "t001", "t002", "t003"]
    assert (by_id["t000"].status, by_id["t000"].failures) == (TrialStatus.OK, 0)
    assert (by_id["t001"].status, by_id["t001"].failures) == (TrialStatus.OK, 1)
    assert by_id["t002"].status is TrialStatus.SKIP
    assert (by_id["t003"].failures, by_id["t003"].total, by_id["t003"].metrics) == (2, 5, {"tps": 7.5})
    assert runner.pending() == 0
    assert runner.wait(timeout=0.1) == []


def test_trial_environment_and_log_reach_the_driver(make_runner, tmp_path):
    runner = make_runner(sh('echo "factor=$FACTOR_X seed=$HEISENBISECT_SEED id=$HEISENBISECT_TRIAL_ID"'))
    runner.submit(trial(7, FACTOR_X="on"))
    (outcome,) = drain(runner, 1)
    assert Path(outcome.log_path) == tmp_path / "logs" / "t007.log"
    log = "--- stdout (28 bytes) ---\nfactor=on seed=1007 id=t007\n--- stderr (0 bytes) ---\n"
    assert Path(outcome.log_path).read_text() == log


def test_submit_never_blocks_and_extra_trials_queue(make_runner):
    runner = make_runner(sh("sleep 2"), capacity=2)
    for n in range(5):
        runner.submit(trial(n))
    # had submit waited for a trial, an outcome would be ready by now: none is
    assert runner.wait(timeout=0) == []
    assert runner.pending() == 5
    outcomes = drain(runner, 5)
    assert sorted(o.trial_id for o in outcomes) == [f"t{n:03d}" for n in range(5)]
    assert runner.pending() == 0


def test_wait_returns_nothing_once_its_timeout_passes(make_runner):
    runner = make_runner(sh("sleep 3"))
    runner.submit(trial(0))
    assert runner.wait(timeout=0.3) == []
    assert runner.pending() == 1


def test_timeout_is_an_outcome(make_runner):
    runner = make_runner(sh("sleep 30", timeout_s=0.5))
    runner.submit(trial(0))
    (outcome,) = drain(runner, 1)
    assert outcome.status is TrialStatus.TIMEOUT


def test_cancel_stops_the_process_tree_and_returns_no_outcome(make_runner, tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    # the trial and a grandchild record their pids, then sleep; a quick trial runs beside them
    runner = make_runner(
        sh(f'if [ "$MODE" = quick ]; then exit 0; fi; sleep 60 & echo $! > {pids}/child.$HEISENBISECT_TRIAL_ID; '
           f'echo $$ > {pids}/leader.$HEISENBISECT_TRIAL_ID; wait')
    )
    runner.submit(trial(0))
    runner.submit(trial(1, MODE="quick"))
    pid_files = [pids / "leader.t000", pids / "child.t000"]
    deadline = time.monotonic() + 30
    outcomes = []
    while not all(p.exists() and p.read_text().strip() for p in pid_files) and time.monotonic() < deadline:
        outcomes.extend(runner.wait(timeout=0.1))
    procs = [psutil.Process(int(p.read_text())) for p in pid_files]
    runner.cancel(["t000"])
    outcomes.extend(drain(runner, 1 - len(outcomes)))
    gone, alive = psutil.wait_procs(procs, timeout=15)
    assert alive == []
    assert [o.trial_id for o in outcomes] == ["t001"]
    assert runner.wait(timeout=0.5) == []
    assert runner.pending() == 0


def test_cancel_of_a_queued_trial_means_it_never_runs(make_runner, tmp_path):
    marker = tmp_path / "ran"
    runner = make_runner(sh(f'sleep 0.5; touch {marker}.$HEISENBISECT_TRIAL_ID'), capacity=1)
    runner.submit(trial(0))
    runner.submit(trial(1))
    runner.cancel(["t001"])
    outcomes = drain(runner, 1)
    assert [o.trial_id for o in outcomes] == ["t000"]
    assert runner.wait(timeout=1.0) == []
    assert not Path(f"{marker}.t001").exists()


def test_close_is_idempotent_and_stops_running_trials(make_runner, tmp_path):
    pid_file = tmp_path / "pid"
    runner = make_runner(sh(f"echo $$ > {pid_file}; exec sleep 60"))
    runner.submit(trial(0))
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        runner.wait(timeout=0.1)
    proc = psutil.Process(int(pid_file.read_text()))
    runner.close()
    runner.close()
    _, alive = psutil.wait_procs([proc], timeout=15)
    assert alive == []
