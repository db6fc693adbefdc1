"""`bisect run` end to end on the simulated example: verdicts, report, resume, kill -9."""

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

SIMULATED = Path(__file__).resolve().parent.parent / "examples" / "simulated" / "hypotheses.yaml"
DECOY = """  - name: topk_v2
    var: SIM_TOPK_V2
    levels: ["1", "0"]
"""


def bisect(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "heisenbisect", *args], capture_output=True, text=True, env=env, **kwargs
    )


def ledger_env(tmp_path: Path) -> dict:
    return {**os.environ, "SIM_LEDGER": str(tmp_path / "ledger")}


def spec_copy(tmp_path: Path, text: str | None = None) -> Path:
    """The simulated spec in ``tmp_path`` (its trial.py named by absolute path), or ``text`` made from it."""
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(text if text is not None else absolute_command())
    return spec


def absolute_command() -> str:
    return SIMULATED.read_text().replace("command: [python, trial.py]", f"command: [python, {SIMULATED.parent / 'trial.py'}]")


def stored_ids(store: Path) -> list[str]:
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT trial_id FROM outcomes")]


@pytest.mark.slow
def test_simulated_study_reaches_its_ground_truth_and_resumes_without_rerunning(tmp_path):
    out = tmp_path / "out"
    env = ledger_env(tmp_path)
    first = bisect("run", str(SIMULATED), "--out", str(out), "--plain", env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    study = out / "simulated"
    results = json.loads((study / "results.json").read_text())
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
    ran = (tmp_path / "ledger").read_text().split()
    assert sorted(ran) == sorted(stored_ids(study / "study.sqlite"))  # each stored trial ran once

    again = bisect("run", str(SIMULATED), "--out", str(out), "--plain", env=env)
    assert again.returncode == 0
    assert (tmp_path / "ledger").read_text().split() == ran  # nothing ran again
    assert json.loads((study / "results.json").read_text())["arms"] == results["arms"]

    (study / "results.json").unlink()
    rendered = bisect("report", str(SIMULATED), "--out", str(out))
    assert rendered.returncode == 0, rendered.stderr
    assert json.loads((study / "results.json").read_text()) == results


def test_kill_9_in_mid_study_then_the_same_command_finishes_without_repeats(tmp_path):
    # without the decoy (whose no-effect verdict takes 320 of the 480 trials): the same resume
    spec = spec_copy(tmp_path, absolute_command().replace(DECOY, ""))
    # the default output folder, relative to where the command runs (here tmp_path)
    out = tmp_path / "reports"
    env = ledger_env(tmp_path)
    store = out / "simulated" / "study.sqlite"
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

    resumed = bisect("run", str(spec), "--plain", env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"{len(before)} finished trials reused" in resumed.stderr
    after = stored_ids(store)
    assert len(after) == len(set(after))  # no trial id stored twice
    assert set(before) <= set(after)
    ran = (tmp_path / "ledger").read_text().split()
    assert all(ran.count(trial_id) == 1 for trial_id in before)  # no finished trial ran again
    results = json.loads((out / "simulated" / "results.json").read_text())
    assert results["finished"] is True
    assert {a["factor"]: a["verdict"] for a in results["arms"]} == {"overlap": "eliminates", "precision": "eliminates", "cache": "reduces"}


def test_a_changed_spec_is_refused_until_fresh(tmp_path):
    out = tmp_path / "out"
    # 10 runs cannot prove zero: the eliminating arms stay inconclusive, so the exit is 1 (undecided)
    text = absolute_command().replace("max_trials: 320", "max_trials: 10")
    spec = spec_copy(tmp_path, text)
    assert bisect("run", str(spec), "--out", str(out), "--plain").returncode == 1
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
