"""Shared fixtures, and a guard that fails the suite when a test leaves a process behind.

The Ray cluster is started once per session, and only if a test asks for it. Every process
the suite starts inherits a session token in ``HEISENBISECT_TOKENS`` (the marker containment
itself rests on, `heisenbisect.targets.markers`), so whatever still carries it when the
session ends was left behind by a test: the run fails, naming each one, and they are killed.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest

from heisenbisect.targets.markers import TOKENS_VAR, kill_marked, marked_processes, new_token

SESSION_TOKEN = new_token()
# Ray's workers and a killed tree's last members need a moment to go; test_suite_guard.py's inner
# suite, whose one leftover never goes, sets it short so as not to wait the full grace for nothing
LEFTOVER_GRACE_S = float(os.environ.get("HEISENBISECT_TEST_LEFTOVER_GRACE_S", "15"))


def pytest_configure(config) -> None:
    previous = os.environ.get(TOKENS_VAR)
    os.environ[TOKENS_VAR] = ":".join(t for t in (previous, SESSION_TOKEN) if t)


def pytest_sessionfinish(session, exitstatus) -> None:
    """Runs after every fixture (the Ray cluster's too) was torn down."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (left := _leftovers()) and time.monotonic() < deadline:
        time.sleep(0.5)
    if not left:
        return
    lines = [f"  pid {p.pid}: {_cmdline(p)}" for p in left]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = f"{len(left)} processes started by the tests outlived the suite:\n" + "\n".join(lines)
    if reporter is not None:
        reporter.write_sep("=", "processes left behind", red=True)
        reporter.write_line(message)
    kill_marked([SESSION_TOKEN], spare=[os.getpid()])
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _leftovers() -> list[psutil.Process]:
    return [p for p in marked_processes({SESSION_TOKEN}) if p.pid != os.getpid()]


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())[:200] or proc.name()
    except psutil.Error:
        return "(gone)"


@pytest.fixture(scope="session")
def ray_session():
    """A real local Ray with 2 CPUs and 2 logical GPUs (no GPU needed); its GCS address."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
