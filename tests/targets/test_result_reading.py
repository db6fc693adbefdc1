"""Results are read faithfully from real target processes that misbehave as real GPU programs do."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import threading
from pathlib import Path

import psutil
import pytest

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets import command
from heisenbisect.targets.command import CommandTarget
from heisenbisect.targets.protocol import NEVER_RAN


def run_script(tmp_path: Path, body: str, argv: tuple[str, ...] | None = None, **kwargs):
    script = tmp_path / "target.py"
    script.write_text(textwrap.dedent(body))
    target = CommandTarget(argv or (sys.executable, str(script)), timeout_s=60, cwd=str(tmp_path), **kwargs)
    trial = Trial("t-0001", Config(), 1, seed=7)
    return target.execute(trial, tmp_path / "logs" / "t-0001.log", threading.Event())


def test_result_line_followed_by_stderr_lines_is_read(tmp_path):
    outcome = run_script(tmp_path, """
        import sys
        print('{"failures": 3, "total": 10}', flush=True)
        print("[W] destroy_process_group() was not called before program exit", file=sys.stderr)
        print("NCCL WARN something at teardown", file=sys.stderr)
    """)
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 3, 10)
    log = Path(outcome.log_path).read_text()
    assert log.index("--- stdout") < log.index('{"failures": 3') < log.index("--- stderr") < log.index("NCCL WARN")


def test_result_line_followed_by_a_stdout_line_is_read_with_a_warning(tmp_path):
    outcome = run_script(tmp_path, """
        print('{"failures": 1, "total": 4, "metrics": {"tokens_per_s": 10.5}}')
        print("shutting down workers")
    """)
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 1, 4)
    assert outcome.metrics == {"tokens_per_s": 10.5}
    assert "stdout went on after the result" in outcome.detail and "shutting down workers" in outcome.detail


def test_the_last_result_line_counts(tmp_path):
    outcome = run_script(tmp_path, """
        print('{"failures": 2, "total": 4}')
        print('{"failures": 0, "total": 4}')
    """)
    assert (outcome.failures, outcome.total) == (0, 4)


@pytest.mark.parametrize("payload, says", [
    ('{"failures": 0, "total": 4, "metrics": {"tokens_per_s": NaN}}', "metrics.tokens_per_s is NaN"),
    ('{"failures": 0, "total": 4, "metrics": {"tokens_per_s": 1e999}}', "metrics.tokens_per_s is inf"),
    ('{"failures": 0, "total": 4, "extra": [-Infinity]}', "extra[0] is -Infinity"),
    ('{"failures": 5, "total": 4}', "failures <= total"),
    ('{"failures": 0, "total": 1, "x": ' + "[" * 40 + "]" * 40 + "}", "nested deeper"),
])
def test_malformed_result_line_is_an_error_that_says_what(tmp_path, payload, says):
    outcome = run_script(tmp_path, f"print({payload!r})")
    assert outcome.status is TrialStatus.ERROR and says in outcome.detail, outcome.detail


def test_malformed_result_file_is_an_error_that_says_what(tmp_path):
    outcome = run_script(tmp_path, """
        import os
        open(os.environ["HEISENBISECT_RESULT"], "wb").write(b'{"failures": 0, "total": 4, "note": "\\xff"}')
    """)
    assert outcome.status is TrialStatus.ERROR and "not UTF-8 (byte 0xff" in outcome.detail
    huge = run_script(tmp_path, """
        import json, os
        json.dump({"failures": 0, "total": 4, "pad": "x" * 2_000_000}, open(os.environ["HEISENBISECT_RESULT"], "w"))
    """)
    assert huge.status is TrialStatus.ERROR and "byte limit" in huge.detail


def test_huge_output_is_capped_in_the_log_and_the_result_still_found(tmp_path):
    outcome = run_script(tmp_path, """
        import sys
        chunk = "x" * 1023 + "\\n"
        sys.stdout.write(chunk * 3000)
        print('{"failures": 1, "total": 2}')
        sys.stdout.write(chunk * 3000)
        sys.stderr.write(chunk * 3000)
    """)
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 1, 2)
    assert "stdout went on after the result" in outcome.detail
    log = Path(outcome.log_path).read_bytes()
    assert b"bytes of stdout cut here]" in log and b"bytes of stderr cut here]" in log
    assert len(log) < 4 * (command.LOG_HEAD_BYTES + command.LOG_TAIL_BYTES) // 2 + 4096


def test_an_exit_status_above_127_is_an_exit_not_a_signal(tmp_path):
    outcome = run_script(tmp_path, "raise SystemExit(200)")
    assert outcome.status is TrialStatus.ERROR
    assert outcome.detail.startswith("exit 200") and "signal" not in outcome.detail


def test_a_missing_script_never_ran(tmp_path):
    outcome = run_script(tmp_path, "", argv=(sys.executable, str(tmp_path / "flakyy.py")))
    assert outcome.status is TrialStatus.ERROR and outcome.detail.startswith(NEVER_RAN)
    assert "can't open file" in outcome.detail


def test_a_shell_command_not_found_never_ran(tmp_path):
    outcome = run_script(tmp_path, "", argv=("/bin/sh", "-c", "no-such-command-here --x"))
    assert outcome.status is TrialStatus.ERROR and outcome.detail.startswith(NEVER_RAN), outcome.detail


def test_a_test_that_exits_2_on_its_own_is_a_failure(tmp_path):
    outcome = run_script(tmp_path, "import sys; print('assertion failed', file=sys.stderr); sys.exit(2)")
    assert (outcome.status, outcome.failures) == (TrialStatus.OK, 1)


def test_a_daemon_holding_the_pipes_does_not_hold_the_trial(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    done = []
    worker = threading.Thread(target=lambda: done.append(run_script(tmp_path, f"""
        import subprocess, sys
        d = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(d.pid))
        print('{{"failures": 0, "total": 3}}')
    """)))
    worker.start()
    worker.join(60)
    try:
        assert done and (done[0].status, done[0].total) == (TrialStatus.OK, 3)
    finally:
        pid = int(pid_file.read_text())
        if psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_result_path_made_into_a_folder_is_an_error_and_a_rerun_clears_it(tmp_path):
    body = """
        import os, pathlib
        (pathlib.Path(os.environ["HEISENBISECT_RESULT"]) / "inner").mkdir(parents=True)
        print('{"failures": 1, "total": 5}')
    """
    for _ in range(2):  # the second run of the same trial finds the first one's folder in its way
        outcome = run_script(tmp_path, body)
        assert outcome.status is TrialStatus.ERROR and "other than a file" in outcome.detail
