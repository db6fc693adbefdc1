"""Shared fixtures, and a guard that fails the suite when a test leaves a process behind.

The Ray cluster is started once per session, and only if a test asks for it. Every process
the suite starts inherits a session token in ``HEISENBISECT_TOKENS`` (the marker containment
itself rests on, `heisenbisect.markers`), so whatever still carries it when the
session ends was left behind by a test: the run fails, naming each one, and they are killed.

With pytest-xdist installed (the ``test`` extra) the whole suite runs on two workers unless
``-n`` says otherwise (``-n 0``: one process; named files run in one process too): most of it
waits on processes, servers and sleeps, so two keep a 2-core machine busy. Without xdist it
runs in one process. The controller's token goes to every worker, which marks what its tests
start; the controller itself and the workers stay unmarked, and the controller alone checks for
leftovers, once every worker has torn its fixtures down. The tests that share one thing run on
one worker, in order: those of the session's Ray cluster (one per worker would start two on a
2-core machine), and the sglang wheel's fetcher and the test that reads it.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest

from heisenbisect.markers import TOKENS_VAR, kill_marked, marked_processes, new_token

SESSION_TOKEN = new_token()
TOKEN_INPUT = "heisenbisect_session_token"  # the controller's token, in each xdist worker's input
# Ray's workers and a killed tree's last members need a moment to go; test_suite_guard.py's inner
# suite, whose one leftover never goes, sets it short so as not to wait the full grace for nothing
LEFTOVER_GRACE_S = float(os.environ.get("HEISENBISECT_TEST_LEFTOVER_GRACE_S", "15"))
WORKERS = 2  # the CI machine has two cores


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns -n into workers
def pytest_cmdline_main(config) -> None:
    """``-n 2 --dist loadgroup`` for the whole suite (``pytest -q``, ``pytest -m "not slow"``)
    where xdist is installed and the line names no ``-n``. Not for named files or folders: two
    workers take longer to start than one file takes to run. Never in a worker, which runs this
    hook too and would start workers of its own, and so on."""
    if _is_worker(config) or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if config.args_source is pytest.Config.ArgsSource.ARGS:
        return
    if not config.pluginmanager.hasplugin("xdist") or config.option.numprocesses is not None or config.option.usepdb:
        return
    config.option.numprocesses = WORKERS
    if config.option.dist == "no":
        config.option.dist = "loadgroup"


def pytest_configure(config) -> None:
    global SESSION_TOKEN
    if _is_worker(config):
        SESSION_TOKEN = config.workerinput[TOKEN_INPUT]
    elif _hands_tests_to_workers(config):
        return  # the workers it starts inherit its environment: they must not carry the token
    previous = os.environ.get(TOKENS_VAR)
    os.environ[TOKENS_VAR] = ":".join(t for t in (previous, SESSION_TOKEN) if t)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist, in the controller, before starting a worker."""
    node.workerinput[TOKEN_INPUT] = SESSION_TOKEN


# name -> whether a test belongs to it; each such group runs on one xdist worker, in collection order
SHARED = {
    "ray": lambda item: "ray_session" in item.fixturenames,
    "sglang-wheel": lambda item: item.path.name in ("test_sglang_factors.py", "test_group_sglang.py"),
}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return  # one process: nothing to group (and the mark is xdist's)
    for item in items:
        for name, member in SHARED.items():
            if member(item):
                item.add_marker(pytest.mark.xdist_group(name))


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _hands_tests_to_workers(config) -> bool:
    """The xdist controller: it runs no test itself."""
    return getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "tx", None))


def pytest_sessionfinish(session, exitstatus) -> None:
    """Runs after every fixture (the Ray cluster's too) was torn down; in the controller, after
    every worker finished."""
    if _is_worker(session.config):
        return  # the controller checks once for all
    left = _leftovers()
    if not left:  # a process in the middle of an exec shows no environment for a moment: look again
        time.sleep(0.2)
        left = _leftovers()
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _leftovers()
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


@pytest.fixture(scope="session")
def releases(tmp_path_factory):
    """``flakypkg`` in 20 released versions: a git history with tags and one wheel per tag
    (tests/wheelhouse.py), made once per session."""
    from wheelhouse import make_releases

    return make_releases(tmp_path_factory.mktemp("releases"))
