"""Failed runs that crashed with a Python traceback are pointed out, in the report and on stderr."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from heisenbisect.decide.crashes import crashed_runs
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.reports.tracebacks import summary, warning_lines
from heisenbisect.targets.log_endings import TAIL_BYTES, LogEndings

TRACEBACK = """\
starting stress run
Traceback (most recent call last):
  File "check.py", line 3, in <module>
    import flakymod
ModuleNotFoundError: No module named 'flakymod'
"""

CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 1, in <module>
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 3, in <module>
RuntimeError: cache corrupted
"""


def outcome(tmp_path: Path, name: str, text: str | None, failed: bool = True) -> Outcome:
    log = tmp_path / f"{name}.log"
    if text is not None:
        log.write_text(text)
    return Outcome(name, "k", 0, TrialStatus.OK, int(failed), 1, log_path=str(log))


def test_counts_failed_runs_with_a_traceback_and_names_the_last_exception(tmp_path):
    broken, other = Config(changes=(("graph", "0"),)), Config()
    found = crashed_runs([
        (broken, outcome(tmp_path, "a", TRACEBACK)),
        (broken, outcome(tmp_path, "b", "wrong token in reply 17\n")),  # the bug itself: no traceback
        (broken, outcome(tmp_path, "c", CHAINED)),
        (broken, outcome(tmp_path, "d", TRACEBACK, failed=False)),  # passed: not a failure to explain
        (other, outcome(tmp_path, "e", "x" * (2 * TAIL_BYTES) + TRACEBACK)),  # only the tail is read
        (other, outcome(tmp_path, "f", None)),  # log gone
    ], LogEndings())
    assert [(c.config, c.crashed, c.failed) for c in found] == [(broken, 2, 3), (other, 1, 2)]
    assert found[0].exception == "RuntimeError: cache corrupted"
    assert found[1].exception == "ModuleNotFoundError: No module named 'flakymod'"
    lines = "\n".join(warning_lines(found, lambda c: c.key or "baseline"))
    assert "2 of 3 failed runs" in lines and "exit 125" in lines
    assert (summary(found) or "").startswith("warning: 3 failed runs logged a Python traceback")


def test_nothing_to_say_without_a_traceback(tmp_path):
    found = crashed_runs([(Config(), outcome(tmp_path, "a", "reply 3 leaked a tool call\n"))], LogEndings())
    assert found == [] and warning_lines(found, str) == [] and summary(found) is None


CHECK = """\
import os, random, sys

def check():
    if os.environ.get("BROKEN") == "1":
        os.environ.settings  # the check itself is broken under this level: AttributeError
    sys.exit(1 if random.random() < 0.5 else 0)

check()
"""


@pytest.mark.slow
def test_bisect_run_warns_when_an_arm_fails_by_crashing(tmp_path):
    (tmp_path / "check.py").write_text(CHECK)
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(
        f"""\
study: crashy
target:
  command: [python, check.py]
  result: exit
  cwd: {str(tmp_path)!r}
  timeout: 30
factors:
  - name: broken
    var: BROKEN
    levels: ["0", "1"]
statistics:
  max_trials: 20
  first_look: 10
output: {str(tmp_path / 'out')!r}
execution:
  parallel: 2
"""
    )
    done = subprocess.run(
        [sys.executable, "-m", "heisenbisect", "run", str(spec), "--plain"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "failed runs logged a Python traceback (e.g. AttributeError" in done.stderr
    report = (tmp_path / "out" / "crashy" / "report.md").read_text()
    assert "## Warning: failed runs that crashed" in report
    crashed = re.search(r"- broken=1: (\d+) of (\d+) failed runs, e.g. `AttributeError", report)
    assert crashed and crashed[1] == crashed[2] and "- baseline" not in report.split("## Warning")[1]
