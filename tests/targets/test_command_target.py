"""The command target follows the trial protocol with real processes, timeouts and signals."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget


def run_script(tmp_path: Path, body: str, timeout: float = 20, crashes_count: bool = False, env=None):
    script = tmp_path / "target.py"
    script.write_text(textwrap.dedent(body))
    target = CommandTarget((sys.executable, str(script)), timeout_s=timeout, cwd=str(tmp_path), crashes_count=crashes_count)
    trial = Trial("t-0001", Config(), 1, seed=42, env=env or {})
    return target.execute(trial, tmp_path / "logs" / "t-0001.log", threading.Event())


def test_json_result_file_wins(tmp_path):
    outcome = run_script(tmp_path, """
        import json, os
        assert os.environ["HEISENBISECT_SEED"] == "42" and os.environ["HEISENBISECT_TRIAL_ID"] == "t-0001"
        json.dump({"failures": 3, "total": 60, "metrics": {"tokens_per_s": 12.5}}, open(os.environ["HEISENBISECT_RESULT"], "w"))
        print("not json")
    """)
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 3, 60)
    assert outcome.metrics == {"tokens_per_s": 12.5}
    assert "not json" in Path(outcome.log_path).read_text()


def test_json_as_last_stdout_line(tmp_path):
    outcome = run_script(tmp_path, 'print("warming up")\nprint(\'{"failures": 0, "total": 8}\')')
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 0, 8)


@pytest.mark.parametrize("code,status,failures", [(0, TrialStatus.OK, 0), (1, TrialStatus.OK, 1), (3, TrialStatus.OK, 1), (125, TrialStatus.SKIP, 0)])
def test_exit_codes_read_as_git_bisect_run_does(tmp_path, code, status, failures):
    outcome = run_script(tmp_path, f"raise SystemExit({code})")
    assert (outcome.status, outcome.failures) == (status, failures)


def test_env_levels_set_and_unset_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("DROP_ME", "x")
    outcome = run_script(
        tmp_path,
        'import os, sys\nsys.exit(0 if os.environ.get("KEEP") == "1" and "DROP_ME" not in os.environ else 1)',
        env={"KEEP": "1", "DROP_ME": None},
    )
    assert outcome.failures == 0


def test_bad_result_json_is_an_error_not_a_failure(tmp_path):
    outcome = run_script(tmp_path, 'import json, os\njson.dump({"failures": 5, "total": 2}, open(os.environ["HEISENBISECT_RESULT"], "w"))')
    assert outcome.status is TrialStatus.ERROR and "failures <= total" in outcome.detail


def test_segfault_is_an_error_unless_crashes_count(tmp_path):
    crash = "import ctypes\nctypes.string_at(0)"
    outcome = run_script(tmp_path, crash)
    assert outcome.status is TrialStatus.ERROR and "SIGSEGV" in outcome.detail
    counted = run_script(tmp_path, crash, crashes_count=True)
    assert (counted.status, counted.failures, counted.total) == (TrialStatus.OK, 1, 1)


def test_hanging_trial_is_killed_with_its_children_at_the_timeout(tmp_path):
    pids = tmp_path / "pids"
    outcome = run_script(tmp_path, f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
            "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            "open({str(pids)!r}, 'a').write(str(g.pid) + chr(10)); time.sleep(600)"])
        open({str(pids)!r}, "a").write(str(child.pid) + chr(10))
        time.sleep(600)
    """, timeout=3)
    assert outcome.status is TrialStatus.TIMEOUT
    assert 2.5 < outcome.duration_s
    recorded = [int(p) for p in pids.read_text().split()]
    assert len(recorded) == 2
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in recorded):
        time.sleep(0.1)
    assert not any(_alive(p) for p in recorded)


def test_a_grandchild_that_left_the_process_group_dies_too(tmp_path):
    pids = tmp_path / "pids"
    outcome = run_script(tmp_path, f"""
        import subprocess, sys, time
        g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        open({str(pids)!r}, "w").write(str(g.pid))
        time.sleep(600)
    """, timeout=3)
    assert outcome.status is TrialStatus.TIMEOUT
    pid = int(pids.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
