"""`bisect amplify` end to end: a real Optuna study over a real subprocess target.

The target (tests/amplify_target.py) fails more often under more load; every run is a real
process. Checks: the search, its confirmation and amplified.yaml; the Optuna storage opened
as optuna-dashboard would; resume after kill -9 mid-search; bad `amplify:` sections.
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

from bisect_cli import bisect

optuna = pytest.importorskip("optuna")

TARGET = Path(__file__).resolve().parents[1] / "amplify_target.py"

SPEC = f"""\
study: amp
target:
  command: [python, {TARGET}]
  timeout: 30
amplify:
  knobs:
    - {{name: load, type: int, var: AMP_LOAD, low: 1, high: 12}}
    - {{name: mode, type: choice, var: AMP_MODE, choices: [calm, storm]}}
    - {{name: noise, type: float, var: AMP_NOISE, low: 0.001, high: 1, log: true}}
  max_runs: 60
  first_runs: 3
  max_candidate_runs: 12
  confirm_runs: 40
execution:
  parallel: 2
"""


def write_spec(tmp_path: Path, text: str = SPEC, env: dict[str, str] | None = None) -> Path:
    if env:
        text = text.replace("  timeout: 30\n", "  timeout: 30\n  env: " + json.dumps(env) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    return spec


def stored_ids(db: Path) -> list[str]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return [r[0] for r in conn.execute("SELECT trial_id FROM outcomes")]
        except sqlite3.OperationalError:
            return []


def recorded_environment(store: Path) -> dict:
    with sqlite3.connect(store) as db:
        return json.loads(db.execute("SELECT value FROM meta WHERE key='environment'").fetchone()[0])


@pytest.mark.slow
def test_amplifies_confirms_and_writes_a_spec_that_validates(tmp_path):
    spec = write_spec(tmp_path)
    out = tmp_path / "out"
    done = bisect("amplify", str(spec), "--out", str(out), "--plain")
    folder = out / "amp"
    assert done.returncode == 0, done.stderr
    assert f"optuna-dashboard sqlite:///{folder / 'optuna.db'}" in done.stdout
    results = json.loads((folder / "amplify.json").read_text())
    assert results["ending"] == "confirmed" and results["confirmation"]["speedup"] > 1
    assert int(results["best"]["load"]) >= 4  # the current settings run at load 1
    assert len(stored_ids(folder / "amplify.sqlite")) == 60

    study = optuna.load_study(study_name="amp", storage=f"sqlite:///{folder / 'optuna.db'}")
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert complete and all({"runs", "failed_runs", "seconds", "config"} <= set(t.user_attrs) for t in complete)
    assert all(t.user_attrs["runs"] >= 3 and t.value >= 0 for t in complete)

    report = (folder / "amplify.md").read_text()
    assert "bisect commits, 256 commits" in report and "optuna-dashboard" in report
    assert "## Knobs" in report and "## Environment" in report and f"bisect amplify {spec}" in report
    assert "One run at the best settings" in report and f"AMP_LOAD={results['best']['load']}" in report
    recorded = recorded_environment(folder / "amplify.sqlite")  # where the runs ran, not where the report is drawn
    assert recorded["runner"] == "local" and "| runner | local," in report
    assert (folder / "amplify.png").stat().st_size > 5000

    amplified = folder / "amplified.yaml"
    checked = bisect("validate", str(amplified))
    assert checked.returncode == 0, checked.stderr
    assert f"AMP_LOAD: '{results['best']['load']}'" in amplified.read_text()

    again = bisect("amplify", str(spec), "--out", str(out), "--plain")  # decided: replays, runs nothing
    assert again.returncode == 0 and len(stored_ids(folder / "amplify.sqlite")) == 60
    assert json.loads((folder / "amplify.json").read_text())["best"] == results["best"]
    assert recorded_environment(folder / "amplify.sqlite") == recorded  # a replay running nothing keeps it


@pytest.mark.slow
def test_resume_after_kill_9_mid_search_loses_nothing(tmp_path):
    slow = tmp_path / "slow"  # slow runs until the kill, so that it lands mid-search
    slow.touch()
    spec = write_spec(tmp_path, env={"AMP_SLOW": "0.15", "AMP_SLOW_WHILE": str(slow)})
    out = tmp_path / "out"
    db = out / "amp" / "amplify.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "heisenbisect", "amplify", str(spec), "--out", str(out), "--plain"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while len(stored_ids(db)) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = stored_ids(db)
    assert 20 <= len(before) < 60
    storage = f"sqlite:///{out / 'amp' / 'optuna.db'}"
    killed = optuna.load_study(study_name="amp", storage=storage)
    assert any(t.state == optuna.trial.TrialState.RUNNING for t in killed.trials)
    slow.unlink()

    done = bisect("amplify", str(spec), "--out", str(out), "--plain")
    assert done.returncode in (0, 1), done.stderr
    assert f"{len(before)} search runs reused" in done.stderr
    after = stored_ids(db)
    assert len(after) == 60 and len(set(after)) == 60 and set(before) <= set(after), done.stderr
    study = optuna.load_study(study_name="amp", storage=storage)
    assert not any(t.state == optuna.trial.TrialState.RUNNING for t in study.trials)
    told = sum(t.user_attrs.get("runs", 0) for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE)
    assert told >= 30  # the trials the kill left running were told from the stored runs


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        ("{name: load, type: int, low: 5, high: 2}", r"amplify\.knobs\[0\]: .*'low' < 'high'"),
        ("{name: load, type: choice, choices: [a]}", r"amplify\.knobs\[0\]: .*at least two"),
        ("{name: load, type: float, low: 0, high: 1, log: true}", r"amplify\.knobs\[0\]: .*'low' > 0"),
        ("{name: load, type: int, kind: arg, low: 1, high: 2}", r"amplify\.knobs\[0\]: .*needs 'flag'"),
        ("{name: load, typ: int, low: 1, high: 2}", r"amplify\.knobs\[0\]\.typ: unknown key 'typ'; did you mean 'type'"),
    ],
)
def test_a_bad_knob_is_one_line_with_its_position_and_exit_2(tmp_path, knob, message):
    text = SPEC.replace("{name: load, type: int, var: AMP_LOAD, low: 1, high: 12}", knob)
    assert_refused(tmp_path, text, r"spec\.yaml:7:\d+: " + message)


def assert_refused(tmp_path: Path, text: str, pattern: str) -> None:
    """`bisect validate` refuses the spec: exit 2, no traceback, a line matching ``pattern``."""
    import re

    done = bisect("validate", str(write_spec(tmp_path, text)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert re.search(pattern, done.stderr), done.stderr


def test_a_spec_without_amplify_section_is_exit_2(tmp_path):
    spec = write_spec(tmp_path, SPEC.split("amplify:")[0])
    done = bisect("amplify", str(spec), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "no 'amplify:' section" in done.stderr


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("  sampler: gpx\n", r"spec\.yaml:\d+:\d+: amplify\.sampler: .*'gp', 'tpe' or 'random'"),
        ("  sampler: gp\n  first_runs: 12\n", r"spec\.yaml:\d+:\d+: amplify: .*first_runs <= max_candidate_runs"),
    ],
)
def test_a_bad_sampler_setting_is_one_line_and_exit_2(tmp_path, line, message):
    assert_refused(tmp_path, SPEC.replace("  first_runs: 3\n  max_candidate_runs: 12\n", line), message)


def test_each_sampler_validates_with_its_own_candidate_runs(tmp_path):
    from heisenbisect.hypotheses import load_spec

    for sampler, runs in (("gp", (1, 8)), ("tpe", (2, 24)), ("random", (2, 24))):
        text = SPEC.replace("  first_runs: 3\n  max_candidate_runs: 12\n", f"  sampler: {sampler}\n")
        spec = load_spec(write_spec(tmp_path, text))
        assert (spec.amplify.first_runs, spec.amplify.max_candidate_runs) == runs
