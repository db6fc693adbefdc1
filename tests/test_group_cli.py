"""`bisect run` with group screening end to end: real processes, a kill -9 mid-split, resume, ground truth."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "many_flags"))
from make_spec import write  # noqa: E402


def bisect(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "heisenbisect", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def stored(store: Path) -> list[str]:
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT trial_id FROM outcomes")]


@pytest.mark.slow
def test_sixteen_flags_reach_ground_truth_after_a_kill_9_mid_split(tmp_path):
    write(16, tmp_path, study="flags16")
    spec, out = tmp_path / "hypotheses.yaml", tmp_path / "out"
    # a zero claim at 10% needs 29 clean runs, not 59: the same search, half the trials
    spec.write_text(spec.read_text().replace("zero_rate: 0.05", "zero_rate: 0.1"))
    store = out / "flags16" / "study.sqlite"
    first = bisect("run", str(spec), "--out", str(out), "--plain", start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not store.exists() or len(stored(store)) < 60):
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the driver and its trials, mid-search
    first.wait()
    before = stored(store)
    assert len(before) >= 60
    second = bisect("run", str(spec), "--out", str(out), "--plain")
    _, err = second.communicate(timeout=900)
    assert second.returncode in (0, 1), err[-2000:]
    after = stored(store)
    assert set(before) <= set(after) and len(set(after)) == len(after)  # nothing ran twice
    results = json.loads((out / "flags16" / "results.json").read_text())
    truth = json.loads((tmp_path / "truth.json").read_text())
    got = {a["factor"]: a["verdict"] for a in results["arms"]}
    for name in truth["eliminates"]:
        assert got[name] == "eliminates"
    assert got[truth["breakers"][0]] == "untestable"
    assert results["untestable"][0]["log"]
    assert second.returncode == (1 if "inconclusive" in got.values() else 0)  # 0 only when all is decided
    wrong = {n: v for n, v in got.items() if n not in truth["eliminates"] + truth["breakers"] + truth["or_pair"] + truth["reduces"] and v not in ("no_effect", "inconclusive")}
    assert not wrong
    assert (out / "flags16" / "search-tree.png").stat().st_size > 1000
    report = (out / "flags16" / "report.md").read_text()
    assert "## The search" in report and "## Untestable changes" in report
    rendered = subprocess.run([sys.executable, "-m", "heisenbisect", "report", str(spec), "--out", str(out)],
                              capture_output=True, text=True)
    assert rendered.returncode == 0 and json.loads((out / "flags16" / "results.json").read_text()) == results
