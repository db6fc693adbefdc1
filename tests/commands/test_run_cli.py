"""`bisect run` end to end on the simulated example: verdicts, report, kill -9 and resume, a changed spec."""

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

from bisect_cli import bisect

SIMULATED = Path(__file__).resolve().parents[2] / "examples" / "simulated" / "hypotheses.yaml"


def ledger_env(tmp_path: Path) -> dict:
    return {**os.environ, "SIM_LEDGER": str(tmp_path / "ledger")}


def spec_copy(tmp_path: Path, text: str) -> Path:
    """``text`` (made from `absolute_command`) as ``tmp_path``/hypotheses.yaml."""
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(text)
    return spec


def absolute_command() -> str:
    """The simulated spec's text with its trial.py named by absolute path, to copy elsewhere."""
    return SIMULATED.read_text().replace("command: [python, trial.py]", f"command: [python, {SIMULATED.parent / 'trial.py'}]")


def ledger(tmp_path: Path) -> list[str]:
    """The trial ids the target really ran, in order (trial.py appends one per run)."""
    path = tmp_path / "ledger"
    return path.read_text().split() if path.exists() else []


def stored_ids(store: Path) -> list[str]:
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT trial_id FROM outcomes")]


@pytest.mark.slow
def test_a_study_killed_mid_way_resumes_to_its_ground_truth_without_rerunning_a_trial(tmp_path):
    """One study of the simulated example: kill -9 early, the same command finishes it, a third
    run only replays, and `bisect report` rebuilds the same results."""
    # the default output folder, beside the spec (a copy in tmp_path, not in examples/)
    spec = spec_copy(tmp_path, absolute_command())
    study = tmp_path / "reports" / "simulated"
    store = study / "study.sqlite"
    env = ledger_env(tmp_path)
    command = [sys.executable, "-m", "heisenbisect", "run", str(spec), "--plain"]
    driver = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not store.exists() or len(stored_ids(store)) < 25):
        time.sleep(0.2)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = stored_ids(store)
    assert 25 <= len(before)
    time.sleep(1.5)  # let trials orphaned by the kill end (they are not recorded)
    cut_off = set(ledger(tmp_path)) - set(before)  # in flight at the kill: ran, never recorded

    resumed = bisect("run", str(spec), "--plain", env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{len(before)} finished trials reused" in resumed.stderr
    after = stored_ids(store)
    assert len(after) == len(set(after)) and set(before) <= set(after)  # no trial id stored twice
    ran = ledger(tmp_path)
    assert set(after) <= set(ran) and all(ran.count(t) == 1 for t in after if t not in cut_off)  # each ran once
    assert len(cut_off) <= 2 and all(ran.count(t) <= 2 for t in cut_off)  # parallel: 2
    results = json.loads((study / "results.json").read_text())
    assert results["finished"] is True
    verdicts = {(a["factor"], a["level"]): a["verdict"] for a in results["arms"]}
    assert verdicts == {
        ("overlap", "0"): "eliminates",
        ("precision", "fp8"): "eliminates",
        ("cache", "1"): "reduces",
        ("topk_v2", "0"): "no_effect",
    }
    assert results["cheapest_fix"] == "precision=fp8"  # 3% slower beats overlap's 10%
    assert "jointly necessary" in results["conclusion"]
    report = (study / "report.md").read_text()
    assert "| `overlap` | `0` | **eliminates**" in report and (study / "rates.png").stat().st_size > 1000

    again = bisect("run", str(spec), "--plain", env=env, cwd=tmp_path)
    assert again.returncode == 0
    assert ledger(tmp_path) == ran  # decided: nothing ran again
    assert json.loads((study / "results.json").read_text())["arms"] == results["arms"]

    (study / "results.json").unlink()
    rendered = bisect("report", str(spec), cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr
    assert json.loads((study / "results.json").read_text()) == results


@pytest.mark.slow
def test_an_undecided_study_reports_its_exit_code_and_a_changed_spec_is_refused_until_fresh(tmp_path):
    """One undecided study, two facts: `bisect report` answers as `bisect run` did (issue 37: it
    said 0 on an undecided study), and a changed spec is refused until --fresh, which keeps the
    old store aside."""
    out = tmp_path / "out"
    # 10 runs cannot prove zero: the eliminating arms stay inconclusive, so the exit is 1 (undecided)
    text = absolute_command().replace("max_trials: 320", "max_trials: 10")
    spec = spec_copy(tmp_path, text)
    ran = bisect("run", str(spec), "--out", str(out), "--plain")
    assert ran.returncode == 1, ran.stderr[-2000:]
    rendered = bisect("report", str(spec), "--out", str(out))
    assert rendered.returncode == 1 and "report:" in rendered.stdout, rendered.stderr[-2000:]
    pasted = bisect("report", str(spec), "--out", str(out), "--paste")
    assert pasted.returncode == 1 and pasted.stdout.strip(), pasted.stderr[-2000:]

    old_ids = stored_ids(out / "simulated" / "study.sqlite")
    spec_copy(tmp_path, text.replace('levels: ["0", "1"]', 'levels: ["0", "2"]'))
    refused = bisect("run", str(spec), "--out", str(out), "--plain")
    assert refused.returncode == 2 and "--fresh" in refused.stderr and "Traceback" not in refused.stderr
    fresh = bisect("run", str(spec), "--out", str(out), "--plain", "--fresh", "--parallel", "2")
    assert fresh.returncode == 1 and "reused" not in fresh.stderr, fresh.stderr[-2000:]
    results = json.loads((out / "simulated" / "results.json").read_text())
    assert ("cache", "2") in {(a["factor"], a["level"]) for a in results["arms"]}  # the new spec ran
    kept = list((out / "simulated" / "previous").glob("*/study.sqlite"))
    assert len(kept) == 1 and sorted(stored_ids(kept[0])) == sorted(old_ids)  # moved aside, not deleted


EXTRA_FIELDS_TARGET = """\
import os, random
random.seed(int(os.environ["HEISENBISECT_SEED"]))
bad = os.environ.get("FIX") != "1" and random.random() < 0.5
print('{"failures": %d, "total": 1, "overlap": true, "tok_s": 12.5}' % bad)
"""


def test_extra_result_fields_warn_once_per_study(tmp_path):
    """Issue 37: a result with extra numeric fields made every run an error (exit 4)."""
    (tmp_path / "t.py").write_text(EXTRA_FIELDS_TARGET)
    spec = spec_copy(tmp_path, f"""\
study: extras
target:
  command: [python, {tmp_path / 't.py'}]
  timeout: 30
factors:
  - {{name: fix, var: FIX, levels: ["0", "1"]}}
statistics: {{max_trials: 12, first_look: 12}}
execution: {{parallel: 2}}
""")
    ran = bisect("run", str(spec), "--out", str(tmp_path / "out"), "--plain")
    assert ran.returncode in (0, 1), ran.stderr[-2000:]  # verdicts, not "no trial produced a result"
    warned = [line for line in ran.stderr.splitlines() if "besides 'failures' and 'total'" in line]
    assert len(warned) == 1 and "(overlap, tok_s)" in warned[0], ran.stderr[-2000:]
    report = (tmp_path / "out" / "extras" / "report.md").read_text()
    assert "kept as metrics" in report
