"""A stop signal at any moment of `bisect run`, its heavy imports included, ends it with 128 + the
signal, one line and no traceback; once the store exists, with the command that resumes it.

Moments are found by watching the process, not the clock: "importing" is when numpy's core
library appears in /proc/PID/maps (the command line's heavy imports are under way), "store"
when the study's sqlite file exists.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
WATCH_LIMIT_S = 120.0  # a safety net for a broken run, not a timing assertion
SPEC = """\
study: sig
target:
  command: [{python}, -c, "import time; time.sleep(60)"]
factors:
  - {{name: MODE, levels: [a, b]}}
statistics: {{max_trials: 4, first_look: 2}}
"""


def start_run(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(SPEC.format(python=sys.executable))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "heisenbisect", "run", str(spec), "--out", str(out), "--plain"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out / "sig" / "study.sqlite"


def importing_numpy(pid: int) -> bool:
    try:
        return "_multiarray_umath" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def wait_for(proc: subprocess.Popen, ready) -> None:
    deadline = time.monotonic() + WATCH_LIMIT_S
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(0.001)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_the_heavy_imports_is_a_clean_stop(tmp_path, signum):
    proc, _ = start_run(tmp_path)
    wait_for(proc, lambda: importing_numpy(proc.pid))
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=WATCH_LIMIT_S)
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err


def test_a_signal_once_the_store_exists_says_how_to_resume(tmp_path):
    proc, store = start_run(tmp_path)
    wait_for(proc, store.exists)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=WATCH_LIMIT_S)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert "resume with: bisect run" in err
