"""Issue 37's new-user cuts, end to end: the SGLang suspects spec where SGLang is not installed.

`validate --probe` said "error" and exited 0; `bisect run` ran 10 errored trials and exited 4;
the preset's launcher was the `python` on PATH, not the interpreter running heisenbisect.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

from bisect_cli import bisect

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sglang") is not None, reason="needs an interpreter without sglang"
)

SPEC = """\
study: sglang-suspects
target:
  timeout: 900
  server:
    preset: sglang
    model: "Qwen/Qwen3-0.6B"
    trials_per_launch: 1
    workload: {sessions: 4, rounds: 1}
factors:
  - {name: cuda_graph, kind: arg, levels: [[], [--disable-cuda-graph]]}
  - {name: overlap, kind: env, var: SGLANG_X, levels: ["0", "1"]}
statistics: {max_trials: 60}
"""
# the interpreter running heisenbisect, then Python's own complaint
LAUNCHER_SAYS = f"{sys.executable} -m sglang.launch_server --help: exit 1: {sys.executable}: "


def spec(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SPEC)
    return path


def test_probe_of_a_server_that_cannot_launch_is_exit_2(tmp_path):
    done = bisect("validate", "--probe", str(spec(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert LAUNCHER_SAYS in line and "No module named 'sglang'" in line and "Traceback" not in done.stderr


def test_run_of_a_server_that_cannot_launch_stops_at_the_first_trial(tmp_path):
    done = bisect("run", str(spec(tmp_path)), "--plain", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: the target did not run: " + LAUNCHER_SAYS), line
    assert "No module named 'sglang'" in line and "install what it runs" in line
    store = sqlite3.connect(tmp_path / "reports" / "sglang-suspects" / "study.sqlite")
    assert store.execute("select count(*) from outcomes").fetchone() == (1,)  # not 10 errors


def test_launch_says_otherwise(tmp_path):
    """`launch:` replaces the preset's launcher: its own interpreter is used as written."""
    path = spec(tmp_path)
    path.write_text(SPEC.replace("preset: sglang", "preset: sglang\n    launch: [/nonexistent/python3, -m, sglang.launch_server]"))
    done = bisect("run", str(path), "--plain", cwd=tmp_path)
    assert done.returncode == 2 and "/nonexistent/python3 -m sglang.launch_server --help" in done.stderr, done.stderr
