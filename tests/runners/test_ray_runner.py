"""What only the Ray runner does: GPU scheduling, max_in_flight, lost workers, working_dir, resume."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Execution, Spec
from heisenbisect.hypotheses.targets import CommandSection as Target
from heisenbisect.records import Config, Outcome, Trial, TrialStatus
from heisenbisect.runners.factory import make_runner
from heisenbisect.runners.local import LocalRunner
from heisenbisect.store import Store
from heisenbisect.studies.options import with_overrides
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import CommandTarget
from runner_helpers import drain, stdout_of

pytestmark = pytest.mark.ray
ray_runner = pytest.importorskip("heisenbisect.runners.ray_runner")


def sh(script: str, timeout_s: float = 60, cwd: str | None = None) -> CommandTarget:
    return CommandTarget(argv=("sh", "-c", script), timeout_s=timeout_s, cwd=cwd)


def trial(n: int, **env: str) -> Trial:
    return Trial(trial_id=f"t{n:03d}", config=Config(), index=n, seed=n, env=env)


def wait_for_file(path: Path, runner, limit_s: float = 30) -> str:
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        runner.wait(timeout=0.1)
    return path.read_text().strip()


def intervals(outcomes: list[Outcome]) -> list[tuple[float, float]]:
    spans = []
    for outcome in outcomes:
        start, end = stdout_of(outcome.log_path).split()[-2:]
        spans.append((float(start), float(end)))
    return sorted(spans)


STAMPED = 'S=$(date +%s.%N); sleep 0.6; echo "gpu=$CUDA_VISIBLE_DEVICES $S $(date +%s.%N)"'


def test_one_gpu_per_trial_runs_two_at_once_with_ray_choosing_the_device(ray_session, tmp_path):
    # each trial waits (up to a minute) until both have started: they meet only if they run at once,
    # however slowly a loaded machine starts the second
    meet = (f'touch {tmp_path}/started.$HEISENBISECT_TRIAL_ID; n=0; '
            f'while [ $(ls {tmp_path} | grep -c "^started") -lt 2 ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; '
            f'[ $n -lt 600 ] && met=met || met=alone; echo "gpu=$CUDA_VISIBLE_DEVICES $met"')
    runner = ray_runner.RayRunner(sh(meet, timeout_s=120), tmp_path / "logs", gpus_per_trial=1, cpus_per_trial=0)
    try:
        assert runner.capacity == 2  # two logical GPUs, one per trial
        runner.submit(trial(0, CUDA_VISIBLE_DEVICES="7"))  # the trial may not pick its own GPU
        runner.submit(trial(1))
        outcomes = drain(runner, 2, limit_s=180)
    finally:
        runner.close()
    printed = sorted(stdout_of(o.log_path).split() for o in outcomes)
    assert printed == [["gpu=0", "met"], ["gpu=1", "met"]]  # each its own device, and they overlapped


def test_max_in_flight_holds_the_rest_in_the_driver(ray_session, tmp_path):
    runner = ray_runner.RayRunner(sh(STAMPED), tmp_path, max_in_flight=1, cpus_per_trial=0.5)
    try:
        for n in range(3):
            runner.submit(trial(n))
        outcomes = drain(runner, 3)
    finally:
        runner.close()
    spans = intervals(outcomes)
    assert len(spans) == 3
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:]))


def test_a_killed_worker_is_an_error_outcome_its_tree_dies_and_the_study_goes_on(ray_session, tmp_path):
    script = (
        'if [ "$MODE" = after ]; then echo fine; exit 0; fi; '
        f'sleep 60 & echo $! > {tmp_path}/child; echo $$ > {tmp_path}/leader; wait'
    )
    runner = ray_runner.RayRunner(sh(script), tmp_path / "logs", max_in_flight=1)
    try:
        runner.submit(trial(0))
        leader = psutil.Process(int(wait_for_file(tmp_path / "leader", runner)))
        child = psutil.Process(int(wait_for_file(tmp_path / "child", runner)))
        worker = leader.parent()
        assert "ray" in " ".join(worker.cmdline()).lower()
        time.sleep(0.3)  # the reaper's next look sees the whole tree
        worker.send_signal(signal.SIGKILL)
        (lost,) = drain(runner, 1)
        _, alive = psutil.wait_procs([leader, child], timeout=10)
        runner.submit(trial(1, MODE="after"))
        (after,) = drain(runner, 1)
    finally:
        runner.close()
    assert lost.status is TrialStatus.ERROR
    assert "Worker" in lost.detail or "worker" in lost.detail
    assert "lost" in Path(lost.log_path).read_text()
    assert alive == []
    assert (after.status, stdout_of(after.log_path)) == (TrialStatus.OK, "fine\n")


SHIPPING_DRIVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from heisenbisect.hypotheses.model import Execution, Spec
    from heisenbisect.hypotheses.targets import CommandSection as Target
    from heisenbisect.records import Config, Trial
    from heisenbisect.targets.command import CommandTarget
    from heisenbisect.runners.factory import make_runner

    address, folder = sys.argv[1], Path(sys.argv[2])
    spec = Spec(
        study="shipping",
        target=Target(command="sh trial.sh"),
        execution=Execution(runner="ray", working_dir="project", cpus_per_trial=0.5),
    )
    # the driver's folder is not where the task runs: Ray unpacks working_dir on the worker
    target = CommandTarget(argv=("sh", "trial.sh"), timeout_s=60, cwd=str(folder))
    with make_runner(spec, target, folder / "logs", address_override=address) as runner:
        runner.submit(Trial("t0", Config(), 0, 0, env={"SHIPPED": "yes"}))
        outcomes = []
        while not outcomes:
            outcomes = runner.wait(timeout=1)
    print(outcomes[0].status.value, Path(outcomes[0].log_path).read_text().splitlines()[1])  # the stdout section's line
    """
)


def test_working_dir_ships_the_target_files_to_the_worker(ray_session, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "trial.sh").write_text('echo "shipped from $(pwd) $SHIPPED"\n')
    (tmp_path / "driver.py").write_text(SHIPPING_DRIVER)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "driver.py"), ray_session, str(tmp_path)], capture_output=True, timeout=180
    )
    assert done.returncode == 0, done.stderr.decode()
    status, shipped, _, where, flag = done.stdout.decode().splitlines()[-1].split()
    assert (status, shipped, flag) == ("ok", "shipped", "yes")
    assert "_ray_pkg_" in where and not where.startswith(str(tmp_path))  # it ran in Ray's unpacked copy


def test_working_dir_needs_a_driver_that_connects_itself(ray_session, tmp_path):
    with pytest.raises(HeisenbisectError, match="working_dir"):
        ray_runner.RayRunner(sh("true"), tmp_path, working_dir=str(tmp_path))


def test_factory_picks_the_runner_from_spec_flags_and_environment(ray_session, tmp_path, monkeypatch):
    spec = Spec(study="s", target=Target(command="true"))
    target = sh("true")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with make_runner(spec, target, tmp_path) as runner:
        assert isinstance(runner, LocalRunner)
    with make_runner(spec, target, tmp_path, runner_override="ray") as runner:
        assert isinstance(runner, ray_runner.RayRunner)
    with make_runner(spec, target, tmp_path, address_override=ray_session) as runner:
        assert isinstance(runner, ray_runner.RayRunner)
    with make_runner(spec, target, tmp_path, address_override=ray_session, runner_override="local") as runner:
        assert isinstance(runner, LocalRunner)
    monkeypatch.setenv("RAY_ADDRESS", ray_session)
    with make_runner(spec, target, tmp_path) as runner:
        assert isinstance(runner, LocalRunner)  # the variable picks a cluster, not the runner
    with pytest.raises(HeisenbisectError, match="--runner"):
        make_runner(spec, target, tmp_path, runner_override="slurm")
    bad_dir = Spec(study="s", target=Target(command="true"), execution=Execution(runner="ray", working_dir="nope"))
    with pytest.raises(HeisenbisectError, match="execution.working_dir"):
        make_runner(bad_dir, target, tmp_path)


def test_parallel_on_the_command_line_caps_trials_in_flight_on_ray_too(ray_session, tmp_path):
    spec = Spec(study="s", target=Target(command="true"), execution=Execution(runner="ray", cpus_per_trial=0.5))
    with make_runner(spec, sh("true"), tmp_path) as runner:
        assert runner.capacity == 4  # all that fits: 2 CPUs at 0.5 each
    capped = with_overrides(spec, argparse.Namespace(parallel=1))
    with make_runner(capped, sh("true"), tmp_path) as runner:
        assert runner.capacity == 1


DRIVER = textwrap.dedent(
    """
    import sys
    from collections import Counter
    from pathlib import Path
    from heisenbisect.engine import Engine, replay
    from heisenbisect.records import Config, Trial
    from heisenbisect.targets.command import CommandTarget
    from heisenbisect.runners.ray_runner import RayRunner
    from heisenbisect.store import Store

    class RunN:
        "Asks for N trials of the baseline; the smallest strategy that can be resumed."
        def __init__(self, n):
            self.n, self.seen = n, 0
        def observe(self, config, outcome):
            self.seen += 1
        def propose(self, in_flight, slots):
            return [Config()] * max(0, min(slots, self.n - self.seen - sum(in_flight.values())))
        def obsolete(self, in_flight):
            return []
        def finished(self):
            return self.seen >= self.n

    address, folder, total = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    script = f"echo $$ > {folder}/pids/$HEISENBISECT_TRIAL_ID; sleep 0.4"
    target = CommandTarget(argv=("sh", "-c", script), timeout_s=60)
    with Store(folder / "study.sqlite") as store:
        strategy = RunN(total)
        replay(strategy, store)
        make = lambda config, index, seed: Trial(f"{config.key}-{index:04d}", config, index, seed)
        with RayRunner(target, folder / "logs", address=address, max_in_flight=2, cpus_per_trial=0.5) as runner:
            Engine(strategy, runner, store, "resume", make).run()
    """
)


def test_a_driver_killed_mid_study_leaves_a_store_the_same_command_resumes(ray_session, tmp_path):
    (tmp_path / "pids").mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    command = [sys.executable, str(driver), ray_session, str(tmp_path), "10"]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    store_path = tmp_path / "study.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and first.poll() is None:
        if store_path.exists() and Store(store_path).count() >= 3:
            break
        time.sleep(0.1)
    assert first.poll() is None, first.stderr.read().decode()
    first.send_signal(signal.SIGKILL)
    first.wait()
    stored_before = Store(store_path).count()
    assert 3 <= stored_before < 10
    running = [psutil.Process(int(p.read_text())) for p in (tmp_path / "pids").iterdir() if p.read_text().strip()
               and psutil.pid_exists(int(p.read_text()))]
    _, alive = psutil.wait_procs(running, timeout=15)
    assert alive == []  # the dead driver's trials did not outlive it

    second = subprocess.run(command, capture_output=True, timeout=180)
    assert second.returncode == 0, second.stderr.decode()
    with Store(store_path) as store:
        outcomes = [outcome for _, outcome in store.outcomes()]
    assert len(outcomes) == 10
    assert len({o.trial_id for o in outcomes}) == 10
    assert all(o.status is TrialStatus.OK for o in outcomes)


class ServerKeepingTarget(TrialTarget):
    """A target that keeps a 'server' process up across trials of one config, as SGLang's does.

    Each trial runs ``sh -c script`` with SERVER_PID (the kept process) and HOST_PID (the
    process holding it) in its environment. ``close`` stops the server.
    """

    keeps_state = True

    def __init__(self, script: str):
        self._trial = CommandTarget(argv=("sh", "-c", script), timeout_s=60)
        self._server: subprocess.Popen | None = None

    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome:
        if self._server is None:
            self._server = subprocess.Popen(["sleep", "600"], start_new_session=True)
        env = {**trial.env, "SERVER_PID": str(self._server.pid), "HOST_PID": str(os.getpid())}
        return self._trial.execute(dataclasses.replace(trial, env=env), log_path, cancelled)

    def close(self) -> None:
        if self._server is not None:
            self._server.kill()
            self._server.wait()
            self._server = None


def config(name: str) -> Config:
    return Config(changes=(("arm", name),))


def pids(outcome: Outcome) -> tuple[int, int]:
    server, host = stdout_of(outcome.log_path).split()
    return int(server), int(host)


@pytest.fixture
def by_value():
    """Ray workers cannot import this test module: ship its classes by value."""
    cloudpickle = pytest.importorskip("ray.cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_a_stateful_target_keeps_one_host_and_server_per_config(ray_session, by_value, tmp_path):
    target = ServerKeepingTarget('echo "$SERVER_PID $HOST_PID"')
    runner = ray_runner.RayRunner(target, tmp_path, gpus_per_trial=1, cpus_per_trial=0)
    try:
        assert runner.capacity == 2
        for n, arm in enumerate(["a", "a", "b", "a"]):
            runner.submit(Trial(f"t{n}", config(arm), n, n))
        outcomes = {o.trial_id: o for o in drain(runner, 4)}
        servers = [psutil.Process(pids(o)[0]) for o in outcomes.values()]
    finally:
        runner.close()
    assert pids(outcomes["t0"]) == pids(outcomes["t1"]) == pids(outcomes["t3"])
    server_b, host_b = pids(outcomes["t2"])
    server_a, host_a = pids(outcomes["t0"])
    assert server_b != server_a and host_b != host_a
    _, alive = psutil.wait_procs(servers, timeout=10)
    assert alive == []  # close stopped every server


def test_a_new_config_retires_the_idle_host_of_another_when_out_of_room(ray_session, by_value, tmp_path):
    target = ServerKeepingTarget('echo "$SERVER_PID $HOST_PID"')
    runner = ray_runner.RayRunner(target, tmp_path, gpus_per_trial=1, cpus_per_trial=0, max_in_flight=1)
    try:
        runner.submit(Trial("a0", config("a"), 0, 0))
        (first,) = drain(runner, 1)
        server_a = psutil.Process(pids(first)[0])
        runner.submit(Trial("b0", config("b"), 0, 0))
        (second,) = drain(runner, 1)
        _, alive = psutil.wait_procs([server_a], timeout=10)
    finally:
        runner.close()
    assert second.status is TrialStatus.OK and pids(second)[0] != server_a.pid
    assert alive == []


def test_cancel_on_a_host_kills_the_trial_and_keeps_the_server(ray_session, by_value, tmp_path):
    target = ServerKeepingTarget(
        f'if [ "$MODE" = hang ]; then echo $$ > {tmp_path}/leader; exec sleep 60; fi; echo "$SERVER_PID $HOST_PID"'
    )
    runner = ray_runner.RayRunner(target, tmp_path / "logs", gpus_per_trial=1, cpus_per_trial=0)
    try:
        runner.submit(Trial("a0", config("a"), 0, 0, env={"MODE": "hang"}))
        leader = psutil.Process(int(wait_for_file(tmp_path / "leader", runner)))
        runner.cancel(["a0"])
        _, alive = psutil.wait_procs([leader], timeout=10)
        runner.submit(Trial("a1", config("a"), 1, 1))
        outcomes = drain(runner, 1)
        server = psutil.Process(pids(outcomes[0])[0])
        assert server.is_running()
    finally:
        runner.close()
    assert alive == []
    assert [o.trial_id for o in outcomes] == ["a1"]


def test_an_unreachable_address_is_one_clear_line_and_exit_2(tmp_path):
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text("study: s\ntarget:\n  command: 'true'\nfactors:\n  - name: X\n    levels: ['0', '1']\n")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "heisenbisect", "run", str(spec), "--out", str(tmp_path)]
    done = subprocess.run([*command, "--address", f"127.0.0.1:{port}"], capture_output=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        f"error: cannot connect to the Ray cluster at '127.0.0.1:{port}': [Errno 111] Connection refused"
    ]
