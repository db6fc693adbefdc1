"""Containment: no process a trial starts outlives it, its timeout, its driver, or a signal to it.

The target misbehaves as real ones do: it double-forks, and the grandchild calls ``setsid`` so it
leaves the trial's session and process group and is reparented to init.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget
from heisenbisect.targets.commit import run_build
from heisenbisect.targets.process import kill_tree, marked_processes, start_process_group

ESCAPER = textwrap.dedent(
    """\
    import glob, os, sys, time
    pids = sys.argv[1]
    os.makedirs(pids, exist_ok=True)
    def note(role):
        with open(os.path.join(pids, f"{role}-{os.getpid()}"), "w") as f:
            f.write(str(os.getpid()))
    note("leader")
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            note("escaped")
            time.sleep(120)
        os._exit(0)
    os.wait()
    while not glob.glob(os.path.join(pids, "escaped-*")):  # the grandchild is up and counted
        time.sleep(0.01)
    time.sleep(float(os.environ.get("HANG", "0")))
    print('{"failures": 0, "total": 1}')
    """
)


def escaper(tmp_path: Path) -> Path:
    script = tmp_path / "escaper.py"
    script.write_text(ESCAPER)
    return script


def noted(pids: Path, role: str = "") -> list[int]:
    return [int(p.read_text()) for p in pids.glob(f"{role}*") if p.read_text()]


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def a_trial(**env: str) -> Trial:
    return Trial(trial_id="t-0000", config=Config(), index=0, seed=1, env=env)


def run_target(tmp_path: Path, timeout_s: float, **env: str):
    pids = tmp_path / "pids"
    target = CommandTarget(argv=(sys.executable, str(escaper(tmp_path)), str(pids)), timeout_s=timeout_s)
    outcome = target.execute(a_trial(**env), tmp_path / "logs" / "t.log", threading.Event())
    return outcome, pids


def test_a_setsid_grandchild_is_gone_when_its_trial_ends(tmp_path):
    outcome, pids = run_target(tmp_path, timeout_s=60)
    assert outcome.status is TrialStatus.OK
    (escaped,) = noted(pids, "escaped")
    assert not alive(escaped)


def test_a_setsid_grandchild_is_gone_after_its_trial_times_out(tmp_path):
    outcome, pids = run_target(tmp_path, timeout_s=1, HANG="60")
    assert outcome.status is TrialStatus.TIMEOUT
    assert noted(pids) and not any(alive(pid) for pid in noted(pids))


def test_a_cancelled_trial_leaves_no_process(tmp_path):
    pids = tmp_path / "pids"
    target = CommandTarget(argv=(sys.executable, str(escaper(tmp_path)), str(pids)), timeout_s=60)
    cancelled = threading.Event()
    threading.Timer(0.2, lambda: wait_for(lambda: noted(pids, "escaped")) and cancelled.set()).start()
    outcome = target.execute(a_trial(HANG="60"), tmp_path / "t.log", cancelled)
    assert outcome.detail == "cancelled"
    assert noted(pids, "escaped") and not any(alive(pid) for pid in noted(pids))


def test_only_a_cleared_environment_sheds_the_marker(tmp_path):
    """What the marker can and cannot see, as docs/reliability.md says."""
    proc = start_process_group(["/bin/sh", "-c", "sleep 30 & env -i sleep 31 & wait"])
    try:
        started = lambda: {" ".join(c.cmdline()) for c in psutil.Process(proc.pid).children()}  # noqa: E731
        assert wait_for(lambda: started() == {"sleep 30", "sleep 31"})
        found = {" ".join(p.cmdline()) for p in marked_processes({proc.token})}
        assert "sleep 30" in found and "sleep 31" not in found
    finally:
        kill_tree(proc)


def test_a_build_past_build_timeout_is_killed_with_its_tree(tmp_path):
    pids = tmp_path / "pids"
    argv = ("/bin/sh", "-c", f"HANG=60 {sys.executable} {escaper(tmp_path)} {pids}")
    ok, detail = run_build(argv, tmp_path, dict(os.environ), tmp_path / "build.log", threading.Event(), 1.0)
    assert not ok and "commits.build_timeout" in detail
    assert noted(pids, "escaped") and not any(alive(pid) for pid in noted(pids))
    assert "killed after commits.build_timeout" in (tmp_path / "build.log").read_text()


# -- the driver: kill -9, signals, a second driver ---------------------------------------------


def write_spec(tmp_path: Path, *, parallel: int = 2, max_trials: int = 60, hang: str | None = None) -> Path:
    """The escaper as a study's target; ``hang`` in the spec reaches Ray workers, HANG in the driver's
    environment only local trials."""
    spec = tmp_path / "hypotheses.yaml"
    env = f"env: {{HANG: '{hang}'}}" if hang is not None else ""
    spec.write_text(
        textwrap.dedent(
            f"""\
            study: escape
            target:
              command: [{sys.executable!r}, {str(escaper(tmp_path))!r}, {str(tmp_path / 'pids')!r}]
              timeout: 120
              {env}
            factors:
              - name: MODE
                levels: ["a", "b"]
            statistics:
              max_trials: {max_trials}
              first_look: 2
            execution:
              parallel: {parallel}
            output: {str(tmp_path / 'out')!r}
            """
        )
    )
    return spec


# SIGINT as at a terminal, even when this suite runs as a background job (which ignores it)
BISECT = [
    sys.executable,
    "-c",
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('heisenbisect', run_name='__main__')",
]


def start_driver(spec: Path, *args: str, hang: str = "120") -> subprocess.Popen:
    """``bisect run`` in a session of its own, as a batch system starts it."""
    env = {**os.environ, "HANG": hang}
    return subprocess.Popen(
        [*BISECT, "run", str(spec), "--plain", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def running_trials(tmp_path: Path, driver: subprocess.Popen, count: int = 2) -> list[int]:
    pids = tmp_path / "pids"
    assert wait_for(lambda: len(noted(pids, "escaped")) >= count or driver.poll() is not None), "no trial started"
    assert driver.poll() is None, driver.communicate()
    return noted(pids)


def test_kill_9_of_the_driver_group_kills_its_trials_within_5_s(tmp_path):
    driver = start_driver(write_spec(tmp_path))
    pids = running_trials(tmp_path, driver)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert wait_for(lambda: not any(alive(pid) for pid in pids), timeout=5)


@pytest.mark.slow
def command_of(proc: psutil.Process) -> list[str]:
    """A child's command line; empty for one that exited while it was listed (a zombie's is unreadable)."""
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def test_the_next_driver_kills_what_a_dead_driver_and_its_reaper_left(tmp_path):
    spec = write_spec(tmp_path, parallel=1, max_trials=2)
    driver = start_driver(spec)
    pids = running_trials(tmp_path, driver, count=1)
    (reaper,) = [p for p in psutil.Process(driver.pid).children() if "heisenbisect.targets.reaper" in command_of(p)]
    reaper.kill()
    assert wait_for(lambda: not alive(reaper.pid))
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    time.sleep(0.5)
    assert all(alive(pid) for pid in pids)  # nothing else would have killed them
    again = start_driver(spec, hang="0")
    _, stderr = again.communicate(timeout=120)
    assert "left running by an earlier driver" in stderr, stderr
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_stop_signal_stops_the_trials_and_prints_how_to_resume(tmp_path, signum, code):
    spec = write_spec(tmp_path)
    driver = start_driver(spec)
    pids = running_trials(tmp_path, driver)
    driver.send_signal(signum)
    _, stderr = driver.communicate(timeout=60)
    assert driver.returncode == code, stderr
    assert f"resume with: bisect run {spec}" in stderr and "Traceback" not in stderr
    assert not any(alive(pid) for pid in pids)


@pytest.mark.slow
def test_a_second_driver_is_refused_naming_the_first(tmp_path):
    spec = write_spec(tmp_path)
    first = start_driver(spec)
    try:
        running_trials(tmp_path, first)
        second = subprocess.run(
            [sys.executable, "-m", "heisenbisect", "run", str(spec), "--fresh"], capture_output=True, text=True
        )
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert second.returncode == 2
    assert second.stderr.strip() == (
        f"error: {tmp_path / 'out' / 'escape'}: another bisect (pid {first.pid}) is running this study; "
        "wait for it or stop it"
    )
    assert not (tmp_path / "out" / "escape" / "previous").exists()  # the refused --fresh moved nothing


@pytest.mark.slow
def test_sigterm_stops_a_ray_study_without_ray_swallowing_it(ray_session, tmp_path):
    spec = write_spec(tmp_path, hang="120")
    driver = start_driver(spec, "--address", ray_session)
    pids = running_trials(tmp_path, driver)
    driver.send_signal(signal.SIGTERM)
    _, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 143, stderr
    assert f"resume with: bisect run {spec}" in stderr
    assert "Traceback" not in stderr and "SIGTERM" not in stderr  # no stack dump from Ray's handlers
    assert wait_for(lambda: not any(alive(pid) for pid in pids), timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_removes_the_worktrees_of_bisect_commits(tmp_path, signum, code):
    from commits_repo import git, make_flaky_repo
    from commits_repo import write_spec as write_commits_spec

    repo = make_flaky_repo(tmp_path)
    spec = write_commits_spec(
        tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n", extra="execution:\n  parallel: 2\n",
        env={"RUN_SLEEP": "30", "RUN_LOG": str(tmp_path / "runs")},  # RUN_LOG: which check.py processes are this test's
    )
    driver = subprocess.Popen([*BISECT, "commits", str(spec)], stderr=subprocess.PIPE, text=True)
    assert wait_for(lambda: worktrees(repo.path) >= 2)
    time.sleep(0.5)  # the trials are running in their worktrees
    driver.send_signal(signum)
    _, stderr = driver.communicate(timeout=60)
    assert driver.returncode == code, stderr
    assert f"resume with: bisect commits {spec}" in stderr
    assert git(repo.path, "worktree", "list").count("\n") == 0
    ours = str(tmp_path / "runs")  # not another test's check.py, run beside this one by the other xdist worker
    assert not [p for p in psutil.process_iter(["environ"]) if (p.info["environ"] or {}).get("RUN_LOG") == ours]


def worktrees(repo: Path) -> int:
    """How many worktrees besides the main one; -1 while git cannot list them because another
    process is adding one (``failed to read .git/worktrees/wN/locked``, exit 128)."""
    done = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True)
    return done.stdout.strip().count("\n") if done.returncode == 0 else -1


@pytest.mark.slow
def test_kill_9_of_the_driver_stops_its_sglang_server_and_workers(tmp_path):
    fake = (Path(__file__).resolve().parents[1] / "sglang_fake_server.py")
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(
        textwrap.dedent(
            f"""\
            study: server
            target:
              timeout: 120
              sglang:
                model: m
                launcher: [{sys.executable!r}, {str(fake)!r}, --fake-latency, "1", --fake-stubborn]
                startup_timeout: 60
                workload: {{sessions: 4, rounds: 4}}
            factors:
              - name: F
                levels: [a, b]
            output: {str(tmp_path / 'out')!r}
            """
        )
    )
    driver = subprocess.Popen(
        [*BISECT, "run", str(spec), "--plain"], stderr=subprocess.PIPE, text=True, start_new_session=True
    )

    def server_tree() -> list[psutil.Process]:
        """The fake server and its scheduler, detokenizer and TP worker (spawned: other command lines)."""
        try:
            servers = [p for p in psutil.Process(driver.pid).children(recursive=True) if str(fake) in p.cmdline()]
            return [tree for server in servers for tree in (server, *server.children(recursive=True))]
        except psutil.Error:
            return []

    assert wait_for(lambda: len(server_tree()) >= 4 or driver.poll() is not None, timeout=60)
    tree = server_tree()
    assert driver.poll() is None and len(tree) >= 4
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert wait_for(lambda: not any(alive(p.pid) for p in tree), timeout=5)


def test_sighup_from_a_terminal_that_is_gone_still_stops_cleanly_with_129(tmp_path):
    """A dropped SSH session: SIGHUP, and the terminal the resume hint would go to is closed."""
    import pty

    spec = write_spec(tmp_path)
    controller, terminal = pty.openpty()
    driver = subprocess.Popen(
        [*BISECT, "run", str(spec), "--plain"], stdout=terminal, stderr=terminal,
        env={**os.environ, "HANG": "120"}, start_new_session=True,
    )
    os.close(terminal)
    pids = running_trials(tmp_path, driver)
    os.close(controller)  # the session is gone: writes to the terminal fail with EIO
    driver.send_signal(signal.SIGHUP)
    assert driver.wait(60) == 129
    assert not any(alive(pid) for pid in pids)
