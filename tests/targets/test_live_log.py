"""A trial's log grows while the trial runs (``tail -f`` works), and ends in the labelled, capped form.

Real target processes that print on both streams, then wait: the test reads the log file
while they are still running.
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.runners.local import LocalRunner
from heisenbisect.targets import command
from heisenbisect.targets.command import CommandTarget
from runner_helpers import drain

# prints on stdout and stderr, then waits (a long trial) until the test lets it go
WAITER = """\
import json, os, sys, time
print("warming up", flush=True)
print("[W] a warning on stderr", file=sys.stderr, flush=True)
sys.stdout.write("partial line without a newline")
sys.stdout.flush()
go = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go")
deadline = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.05)
print()
print(json.dumps({"failures": 1, "total": 3}), flush=True)
print("torn down", file=sys.stderr)
"""


def wait_for(path: Path, wanted: bytes, limit_s: float = 30) -> bytes:
    """The file's bytes once they contain ``wanted`` (while the trial still runs)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists() and wanted in (data := path.read_bytes()):
            return data
        time.sleep(0.05)
    raise AssertionError(f"{path} never showed {wanted!r}; it ends {path.read_bytes()[-300:] if path.exists() else 'no file'!r}")


def test_the_log_shows_output_while_the_trial_runs_through_the_local_runner(tmp_path):
    (tmp_path / "target.py").write_text(WAITER)
    target = CommandTarget((sys.executable, "target.py"), timeout_s=60, cwd=str(tmp_path))
    with LocalRunner(target, tmp_path / "logs", parallel=1) as runner:
        runner.submit(Trial("t-0001", Config(), 0, seed=1))
        log = tmp_path / "logs" / "t-0001.log"
        live = wait_for(log, b"partial line")
        assert live.startswith(b"--- stdout (live) ---\nwarming up\n")  # the order of reads: both pipes at once
        assert b"--- stderr (live) ---\n[W] a warning on stderr\n" in live
        (tmp_path / "go").touch()
        [outcome] = drain(runner, 1)
    assert (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 1, 3)
    assert outcome.log_path == str(log)  # what the report links to
    final = log.read_text()
    assert final.startswith("--- stdout (")
    assert final.index("warming up") < final.index('{"failures": 1') < final.index("--- stderr (")
    assert final.index("--- stderr (") < final.index("[W] a warning") < final.index("torn down")
    assert "(live)" not in final
    assert sorted(p.name for p in log.parent.iterdir()) == ["t-0001.log"]  # no temporary file left


def test_a_runaway_stream_is_live_only_up_to_its_head_cap(tmp_path):
    chunk = "y" * 1023 + "\n"
    (tmp_path / "target.py").write_text(textwrap.dedent(f"""\
        import os, sys, time
        sys.stdout.write({chunk!r} * 3000)  # 3 MiB: past the head cap
        sys.stdout.flush()
        go = os.path.join(os.path.dirname(os.path.abspath(__file__)), "go")
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.05)
        print('{{"failures": 0, "total": 1}}')
        """))
    target = CommandTarget((sys.executable, "target.py"), timeout_s=60, cwd=str(tmp_path))
    log = tmp_path / "logs" / "t-0001.log"
    done = []
    thread = threading.Thread(target=lambda: done.append(
        target.execute(Trial("t-0001", Config(), 0, seed=1), log, threading.Event())))
    thread.start()
    try:
        live = wait_for(log, b"are added when the trial ends]")
        time.sleep(0.3)  # the rest of the 3 MiB has arrived by now: none of it is written live
        assert len(log.read_bytes()) == len(live) < command.LOG_HEAD_BYTES + 200
    finally:
        (tmp_path / "go").touch()
        thread.join(60)
    [outcome] = done
    assert outcome.status is TrialStatus.OK
    final = log.read_bytes()
    assert b"bytes of stdout cut here]" in final and final.rstrip().endswith(b'{"failures": 0, "total": 1}\n--- stderr (0 bytes) ---')


def test_a_target_that_cannot_start_leaves_one_line_in_its_log(tmp_path):
    target = CommandTarget((str(tmp_path / "missing"),), timeout_s=60, cwd=str(tmp_path))
    outcome = target.execute(Trial("t-0001", Config(), 0, seed=1), tmp_path / "logs" / "t-0001.log", threading.Event())
    assert outcome.status is TrialStatus.ERROR
    assert Path(outcome.log_path).read_text().startswith(f"cannot start {str(tmp_path / 'missing')!r}")
