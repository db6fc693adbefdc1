"""`bisect run` with group screening end to end: real processes, a kill -9 mid-search, resume, ground truth.

Sized for CI: 12 flags (three groups of four, split down to single changes), a strong baseline
failure (75% of runs) and a zero claim at 20% (14 clean runs), single arms capped at 30 runs.
That is about 450 trials where 16 flags at the example's rates took 3200; the search logic
itself is checked against simulated truths in test_group_strategy.py.
"""

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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "many_flags"))
from make_spec import write  # noqa: E402

SIZED_FOR_CI = {"zero_rate: 0.05": "zero_rate: 0.2", "max_trials: 480": "max_trials: 30", "first_look: 15": "first_look: 10"}


def bisect(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "heisenbisect", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def stored(store: Path) -> list[str]:
    """The stored trial ids; none while the driver has created the file and not yet its tables."""
    with sqlite3.connect(store) as db:
        try:
            return [row[0] for row in db.execute("SELECT trial_id FROM outcomes")]
        except sqlite3.OperationalError:
            return []


def write_study(folder: Path) -> tuple[Path, dict]:
    """The many_flags spec for 12 flags, with rates that make every decision quick."""
    write(12, folder, study="flags12")
    spec = folder / "hypotheses.yaml"
    text = spec.read_text()
    for old, new in SIZED_FOR_CI.items():
        assert old in text
        text = text.replace(old, new)
    spec.write_text(text)
    truth_file = folder / "truth.json"
    truth = json.loads(truth_file.read_text())
    # two causes at 50%: the baseline fails 75% of runs; the reducer leaves 44%, far from a zero
    truth.update(cause_rate=0.5, reducer_factor=0.5)
    truth_file.write_text(json.dumps(truth))
    return spec, truth


@pytest.mark.slow
def test_twelve_flags_reach_ground_truth_after_a_kill_9_mid_search(tmp_path):
    spec, truth = write_study(tmp_path)
    out = tmp_path / "out"
    store = out / "flags12" / "study.sqlite"
    first = bisect("run", str(spec), "--out", str(out), "--plain", start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not store.exists() or len(stored(store)) < 100):
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)  # the driver and its trials, mid-search
    first.wait()
    before = stored(store)
    assert len(before) >= 100
    second = bisect("run", str(spec), "--out", str(out), "--plain")
    _, err = second.communicate(timeout=900)
    assert second.returncode in (0, 1), err[-2000:]
    assert f"{len(before)} finished trials reused" in err
    after = stored(store)
    assert set(before) <= set(after) and len(set(after)) == len(after)  # nothing ran twice
    results = json.loads((out / "flags12" / "results.json").read_text())
    got = {a["factor"]: a["verdict"] for a in results["arms"]}
    for name in truth["eliminates"]:
        assert got[name] == "eliminates"
    assert got[truth["breakers"][0]] == "untestable"
    assert [u["factor"] for u in results["untestable"]] == truth["breakers"]
    assert results["untestable"][0]["log"]
    assert results["groups"]  # the search went through groups, not one arm per flag
    assert second.returncode == (1 if "inconclusive" in got.values() else 0)  # 0 only when all is decided
    for name in truth["reduces"] + truth["or_pair"]:  # alone, each leaves 44% or 50% of runs failing
        assert got[name] != "eliminates"
    inert = {n: v for n, v in got.items() if n not in truth["eliminates"] + truth["breakers"] + truth["or_pair"] + truth["reduces"]}
    assert inert and set(inert.values()) <= {"no_effect", "inconclusive"}
    assert (out / "flags12" / "search-tree.png").stat().st_size > 1000
    report = (out / "flags12" / "report.md").read_text()
    assert "## The search" in report and "## Untestable changes" in report
    rendered = subprocess.run([sys.executable, "-m", "heisenbisect", "report", str(spec), "--out", str(out)],
                              capture_output=True, text=True)
    assert rendered.returncode == second.returncode  # the study's own code, as `bisect run` gave it
    assert json.loads((out / "flags12" / "results.json").read_text()) == results
