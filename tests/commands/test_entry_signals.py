"""Signals at the very start of the `bisect` script: from the first statements of
`heisenbisect.entry` (the module the console script imports) a stop signal is a clean stop,
128 + the signal and one line; what comes before it is Python's own start (docs/reliability.md).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU_RACE = str(ROOT / "examples" / "cpu_race" / "hypotheses.yaml")
WATCH_LIMIT_S = 120.0  # a safety net for a broken run, not a timing assertion
# pip's console script for `bisect = "heisenbisect.entry:main"`, word for word
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from heisenbisect.entry import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
SIGNALS = [pytest.param(s, id=s.name) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]


def catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_while_entry_is_still_importing_is_a_clean_stop(signum):
    """The signal arrives right after `import heisenbisect.entry`, before `main` runs: before,
    SIGTERM and SIGHUP killed silently and SIGINT printed a KeyboardInterrupt traceback."""
    probe = ("import os, signal, time\n"
             "import heisenbisect.entry\n"
             f"os.kill(os.getpid(), {int(signum)})\n"
             "time.sleep(30)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=WATCH_LIMIT_S)
    assert done.returncode == 128 + signum, done.stderr
    assert done.stderr == "interrupted\n"


def test_an_ignored_sigint_stays_ignored():
    """A shell starts a background job with SIGINT ignored; entry must not undo that."""
    probe = ("import signal\n"
             "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
             "import heisenbisect.entry\n"
             "print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=WATCH_LIMIT_S)
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_the_moment_the_console_script_handles_signals_is_a_clean_stop(tmp_path, signum):
    script = tmp_path / "bisect"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    proc = subprocess.Popen([str(script), "run", CPU_RACE, "--out", str(tmp_path / "out"), "--plain"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + WATCH_LIMIT_S
    while not catches_sigterm(proc.pid):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the handlers never came"
        time.sleep(0.0002)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=WATCH_LIMIT_S)
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err


def test_nohup_keeps_a_run_going_through_the_hangup(tmp_path):
    """`nohup bisect run` starts with SIGHUP ignored: the hangup it asked to survive must not stop
    it. SIGHUP then SIGTERM, sent together: the run stops for SIGTERM (143), never SIGHUP (129)."""
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(f"study: sig\ntarget:\n  command: [{sys.executable}, -c, 'import time; time.sleep(60)']\n"
                    "factors:\n  - {name: MODE, levels: [a, b]}\nstatistics: {max_trials: 4, first_look: 2}\n")
    logs = tmp_path / "out" / "sig" / "logs"
    proc = subprocess.Popen([sys.executable, "-m", "heisenbisect", "run", str(spec), "--out", str(tmp_path / "out"),
                             "--plain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + WATCH_LIMIT_S
    while not (logs.is_dir() and any(logs.iterdir())):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no trial started"
        time.sleep(0.01)
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=WATCH_LIMIT_S)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "resume with: bisect run" in err and "Traceback" not in err
