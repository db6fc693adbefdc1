"""The suite's own guard (conftest.py): a test that leaves a process behind fails the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

LEAKY = '''
import subprocess
import time

def test_leaves_a_sleeper(tmp_path):
    # a double fork with setsid: reparented to init, outside the test's process group
    subprocess.run(["sh", "-c", "setsid sleep 300 & echo $! > {pid}"], check=True)
    # until it is sleep itself: mid-exec (sh, then setsid, then sleep) a process shows no
    # environment for a moment, and on a loaded machine the guard could look just then
    deadline = time.monotonic() + 30
    with open("{pid}") as f:
        cmdline = "/proc/" + f.read().strip() + "/cmdline"
    while time.monotonic() < deadline:
        with open(cmdline, "rb") as f:
            if f.read().startswith(b"sleep"):
                break
        time.sleep(0.05)
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_process_left_behind_fails_the_suite_and_is_killed(tmp_path, workers):
    """In one process, and under xdist, where the test runs in a worker and the controller checks."""
    if "-n" in workers:
        pytest.importorskip("xdist")
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(Path(__file__).with_name("conftest.py"), suite / "conftest.py")
    pid_file = tmp_path / "pid"
    (suite / "test_leaky.py").write_text(LEAKY.format(pid=pid_file))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, str(suite)],
        capture_output=True, text=True, timeout=120, cwd=suite,
        env={**os.environ, "HEISENBISECT_TEST_LEFTOVER_GRACE_S": "1"},  # the sleeper never goes: no use waiting 15 s
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "processes left behind" in done.stdout and "sleep 300" in done.stdout
    assert "1 processes started by the tests outlived the suite" in done.stdout  # the sleeper alone: no worker
    pid = int(pid_file.read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
