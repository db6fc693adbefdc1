"""`heisenbisect.amplify` is `bisect amplify`: a real Optuna search over a real subprocess target
(tests/amplify_target.py fails more often under more load), its answer returned as values that
match amplify.json; bad input raises `HeisenbisectError` before anything is recorded."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import heisenbisect
from heisenbisect.cli import main

pytest.importorskip("optuna")

TARGET = Path(__file__).resolve().parents[1] / "amplify_target.py"

# a budget of seconds: the search and the confirmation each run a few dozen short processes
SPEC = f"""\
study: amp
target:
  command: [python, {TARGET}]
  timeout: 30
amplify:
  knobs:
    - {{name: load, type: int, var: AMP_LOAD, low: 6, high: 12}}
    - {{name: mode, type: choice, var: AMP_MODE, choices: [calm, storm]}}
  max_runs: 16
  first_runs: 2
  max_candidate_runs: 4
  confirm_runs: 10
  first_look: 10
"""

EXIT_CODES = {"confirmed": 0, "not_confirmed": 1, "current_best": 1, "never_failed": 3}


def stored_runs(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def same_as_saved(measured: heisenbisect.MeasuredSettings, saved: dict) -> bool:
    return (measured.runs, measured.failed_runs, measured.rate, list(measured.rate_interval), measured.runs_per_s,
            list(measured.runs_per_s_interval), measured.bits_per_s, list(measured.bits_per_s_interval)) == (
        saved["runs"], saved["failed_runs"], saved["rate"], saved["rate_interval"], saved["runs_per_s"],
        saved["runs_per_s_interval"], saved["bits_per_s"], saved["bits_per_s_interval"])


def test_amplify_through_the_api_returns_what_amplify_json_says(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    result = heisenbisect.amplify(spec, out=tmp_path / "out", parallel=2)

    folder = tmp_path / "out" / "amp"
    assert isinstance(result, heisenbisect.AmplifyResult) and result.study == "amp"
    saved = json.loads(result.results.read_text())
    assert result.results == folder / "amplify.json" and result.report == folder / "amplify.md"
    assert result.ending == saved["ending"] and result.exit_code == EXIT_CODES[result.ending]
    assert result.confirmed == (result.ending == "confirmed")
    assert result.best.knobs == saved["best"] and result.current.knobs == {}
    assert (result.search_runs, result.candidates) == (saved["search"]["runs"], saved["search"]["candidates"])
    assert result.search_runs == stored_runs(result.search_store) == 16
    confirmation = saved["confirmation"]
    if confirmation is None:  # the search alone decided: nothing beats the current settings, or nothing failed
        assert result.measured_by == "search" and (result.speedup, result.p_value, result.confirm_store) == (None,) * 3
        measured = saved["search"]
    else:  # the estimates are the confirmation's fresh runs
        assert result.measured_by == "confirmation" and result.confirm_store == folder / "confirm.sqlite"
        assert (result.speedup, result.p_value, result.looks) == (
            confirmation["speedup"], confirmation["p_value"], confirmation["looks"])
        assert stored_runs(result.confirm_store) == result.best.runs + result.current.runs
        measured = confirmation
    assert same_as_saved(result.best, measured["best"]) and same_as_saved(result.current, measured["current"])
    assert result.headline in result.report.read_text()

    amplified = folder / "amplified.yaml"
    assert amplified.exists() == result.confirmed == (result.amplified == amplified)
    assert saved["amplified"] == (str(amplified) if result.confirmed else None)
    assert result.dashboard == f"optuna-dashboard {saved['optuna_storage']}" == f"optuna-dashboard sqlite:///{result.optuna_db}"
    assert result.optuna_db.is_file() and result.plot.is_file() and any(result.logs.glob("*.log"))
    assert capsys.readouterr().out == ""  # the answer is returned, not printed

    # the CLI is a caller of the same function: it replays the stores, runs nothing, prints the answer
    assert main(["amplify", str(spec), "--out", str(tmp_path / "out"), "--plain"]) == result.exit_code
    printed = capsys.readouterr()
    assert printed.out.splitlines()[0] == result.headline and result.dashboard in printed.out
    assert "resuming amp: 16 search runs reused" in printed.err
    assert stored_runs(result.search_store) == 16


@pytest.mark.parametrize("text, error, message", [
    (SPEC.split("amplify:")[0], heisenbisect.HeisenbisectError,
     "{spec}: no 'amplify:' section; add one with the knobs to search"),
    (SPEC.replace(str(TARGET), "missing.py"), heisenbisect.SpecError,
     "{spec}:3:12: target.command: python script 'missing.py' not found in "),
])
def test_bad_input_raises_before_anything_is_recorded(tmp_path, text, error, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    with pytest.raises(error) as exc:
        heisenbisect.amplify(spec, out=tmp_path / "out")
    assert str(exc.value).startswith(message.format(spec=spec)) and exc.value.exit_code == 2
    assert not (tmp_path / "out").exists()
    assert main(["amplify", str(spec), "--out", str(tmp_path / "out")]) == 2


# SIGINT as a terminal sends it (see tests/commands/test_api.py: a background pytest passes SIGINT on ignored)
DRIVER = """\
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
import sys
import heisenbisect
try:
    heisenbisect.amplify(sys.argv[1], out=sys.argv[2], parallel=2)
except heisenbisect.StudyInterrupted as exc:
    print("interrupted", exc.exit_code, exc.store, isinstance(exc, KeyboardInterrupt))
    sys.exit(exc.exit_code)
"""


def test_ctrl_c_raises_study_interrupted_with_the_search_store(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("  timeout: 30\n", '  timeout: 30\n  env: {AMP_SLOW: "5"}\n'))  # runs of 5 s
    (tmp_path / "driver.py").write_text(DRIVER)
    driver = subprocess.Popen([sys.executable, "driver.py", str(spec), str(tmp_path / "out")], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    logs = tmp_path / "out" / "amp" / "logs" / "amplify"
    deadline = time.monotonic() + 60
    while not (logs.is_dir() and len(list(logs.glob("*.log"))) >= 2) and time.monotonic() < deadline:
        time.sleep(0.05)  # the first two runs started
    driver.send_signal(signal.SIGINT)
    out, err = driver.communicate(timeout=60)
    store = tmp_path / "out" / "amp" / "amplify.sqlite"
    assert driver.returncode == 130, err[-2000:]
    assert out.strip() == f"interrupted 130 {store} True"
    assert "resume with: the same heisenbisect call" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "amp" / "amplify.json").exists()  # no report of a search cut short
