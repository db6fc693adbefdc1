"""The Python API runs the same studies as the CLI: real target processes, a real sqlite store,
the same report; bad input raises `HeisenbisectError`, which the CLI prints as one line, exit 2."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

import heisenbisect
from heisenbisect.cli import main

# fails about half the runs at the baseline, never with FIXED=1; stderr after the result, as real targets do
FLAKY = """\
import json, os, random, sys
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
rate = 0.0 if os.environ.get("FIXED") == "1" else 0.5
print(json.dumps({"failures": int(rng.random() < rate), "total": 1}), flush=True)
print("[W] destroy_process_group() was not called before program exit", file=sys.stderr)
"""


def write_study(folder: Path, command: str = "[python, flaky.py]") -> Path:
    (folder / "flaky.py").write_text(FLAKY)
    spec = folder / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: api
        question: Does FIXED=1 stop the failure?
        target:
          command: {command}
          timeout: 60
        factors:
          - name: fixed
            var: FIXED
            levels: ["0", "1"]
        statistics:
          max_trials: 5
          first_look: 5
        """))
    return spec


def stored_trials(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def test_a_study_through_the_api_is_the_cli_study(tmp_path, capsys):
    spec = write_study(tmp_path)
    result = heisenbisect.run(spec, out=tmp_path / "out", parallel=2)

    assert isinstance(result, heisenbisect.StudyResult)
    assert (result.study, result.strategy) == ("api", "one_at_a_time")
    assert result.store == tmp_path / "out" / "api" / "study.sqlite" and stored_trials(result.store) == 10
    assert result.baseline.runs == 5 and result.baseline.failed_runs > 0
    [arm] = result.arms
    assert (arm.change, arm.runs, arm.failed_runs) == ("fixed=1", 5, 0)
    assert arm.verdict == result.verdict("fixed=1") == "inconclusive"  # 5 runs cannot prove zero
    assert (result.exit_code, result.decided) == (1, False)
    saved = json.loads(result.results.read_text())
    assert saved["conclusion"] == result.conclusion and saved["arms"][0]["verdict"] == arm.verdict
    assert result.report.read_text().startswith("# ") and result.report.parent == result.logs.parent
    assert len(list(result.logs.glob("*.log"))) == 10
    assert capsys.readouterr().out == ""  # the answer is returned, not printed

    again = heisenbisect.run(str(spec), out=str(tmp_path / "out"))  # resumes: nothing runs twice
    assert stored_trials(again.store) == 10 and again.arms == result.arms
    assert "resuming api: 10 finished trials reused" in capsys.readouterr().err

    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--plain"]) == result.exit_code
    assert "fixed=1" in capsys.readouterr().out

    fresh = heisenbisect.run(spec, out=tmp_path / "out", fresh=True)
    assert stored_trials(fresh.store) == 10 and list((tmp_path / "out" / "api" / "previous").iterdir())


@pytest.mark.parametrize("call, message", [
    (lambda spec: heisenbisect.run(spec, parallel=0), "parallel: expected a whole number of trials at once, 1 or more, got 0"),
    (lambda spec: heisenbisect.run(spec, runner="slurm"), "runner: expected one of 'local', 'ray', got 'slurm'"),
    (lambda spec: heisenbisect.run({"study": "x"}), "spec: expected the path of a hypotheses file, got dict"),
    (lambda spec: heisenbisect.run(spec, out=5), "out: expected a folder's path, got int"),
    (lambda spec: heisenbisect.commits(spec, config="fixed=1"), "config: expected a list of 'FACTOR=LEVEL' strings"),
])
def test_bad_arguments_raise_heisenbisect_error_naming_the_argument(tmp_path, call, message):
    spec = write_study(tmp_path)
    with pytest.raises(heisenbisect.HeisenbisectError, match="^" + message.replace("(", r"\(").replace(")", r"\)")) as exc:
        call(spec)
    assert exc.value.exit_code == 2
    assert not (tmp_path / "reports").exists()


def test_a_bad_spec_raises_spec_error_with_the_cli_line(tmp_path, capsys):
    spec = write_study(tmp_path, command="true")  # a YAML boolean where a command is expected
    with pytest.raises(heisenbisect.SpecError) as exc:
        heisenbisect.run(spec, out=tmp_path / "out")
    line = (f"{spec}:4:12: target.command: expected a list of strings or a string, got 'true' "
            "(unquoted, YAML reads it as a boolean; write \"true\" for the text)")
    assert exc.value.problems == [line] and isinstance(exc.value, heisenbisect.HeisenbisectError)
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines() == [line]
    assert not (tmp_path / "out").exists()  # nothing recorded

    with pytest.raises(heisenbisect.SpecError, match="cannot read the hypotheses file"):
        heisenbisect.run(tmp_path / "missing.yaml")


def test_a_target_that_cannot_run_raises_before_any_trial(tmp_path):
    spec = write_study(tmp_path, command="[python, missing.py]")
    with pytest.raises(heisenbisect.SpecError, match=r"target\.command: python script 'missing.py' not found"):
        heisenbisect.run(spec, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_importing_heisenbisect_loads_none_of_the_heavy_libraries():
    """`import heisenbisect` stays as fast as the CLI's startup: the API is imported on first use."""
    probe = ("import sys, heisenbisect; heisenbisect.HeisenbisectError; "
             "print(sorted(m for m in ('numpy', 'scipy', 'rich', 'yaml', 'pydantic', 'heisenbisect.api') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.slow  # a real repository, worktrees and a few dozen runs
def test_commits_through_the_api_names_the_culprit(tmp_path, capsys):
    from commits_repo import make_flaky_repo, write_spec

    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    found = heisenbisect.commits(spec, parallel=2)
    assert isinstance(found, heisenbisect.CommitsResult)
    assert (found.state, found.exit_code, found.culprit) == ("found", 0, repo.culprit)
    assert found.probability >= 0.999 and "Ada Tester" in found.culprit_line
    assert json.loads(found.results.read_text())["culprit"] == repo.culprit
    assert capsys.readouterr().out == ""
    again = heisenbisect.commits(spec)  # decided already: replays the store, runs nothing
    assert (again.culprit, again.trials) == (found.culprit, found.trials)


# the target prints its pid, then runs long: the study is interrupted while its first trials run
LONG = """\
import os, sys, time
print("pid", os.getpid(), flush=True)
time.sleep(60)
print('{"failures": 0, "total": 1}')
"""

# SIGINT as a terminal sends it: a pytest started in the background (`cmd &` in a script) passes
# SIGINT on ignored, and a process that starts with it ignored keeps ignoring it (POSIX); the
# driver then ran its trials to their timeouts (a full suite run, launched with nohup ... &)
SCRIPT = """\
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
import sys
import heisenbisect
try:
    heisenbisect.run(sys.argv[1], out=sys.argv[2], parallel=2)
except heisenbisect.StudyInterrupted as exc:
    print("interrupted", exc.exit_code, exc.store, isinstance(exc, KeyboardInterrupt))
    sys.exit(exc.exit_code)
"""


def test_ctrl_c_raises_study_interrupted_and_stops_the_trials(tmp_path):
    spec = write_study(tmp_path)
    (tmp_path / "flaky.py").write_text(LONG)
    (tmp_path / "driver.py").write_text(SCRIPT)
    driver = subprocess.Popen([sys.executable, "driver.py", str(spec), str(tmp_path / "out")], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    logs = tmp_path / "out" / "api" / "logs"
    deadline = time.monotonic() + 60
    pids: list[int] = []
    while len(pids) < 2 and time.monotonic() < deadline and driver.poll() is None:  # the live logs say both started
        pids = [int(pid) for log in logs.glob("*.log")  # whole lines only: a log may be mid-write
                for pid in re.findall(r"^pid (\d+)\s", log.read_text(), re.MULTILINE)] if logs.is_dir() else []
        time.sleep(0.05)
    if len(pids) < 2:  # say why: the driver's own account, and what the logs held
        driver.kill()
        out, err = driver.communicate(timeout=30)
        held = {log.name: log.read_text()[-500:] for log in logs.glob("*.log")} if logs.is_dir() else {}
        raise AssertionError(f"the trials never started (driver exit {driver.returncode}): {err[-2000:]} logs: {held}")
    driver.send_signal(signal.SIGINT)
    out, err = driver.communicate(timeout=60)
    assert driver.returncode == 130, err[-2000:]
    assert out.strip() == f"interrupted 130 {tmp_path / 'out' / 'api' / 'study.sqlite'} True"
    assert "resume with: the same heisenbisect call" in err and "Traceback" not in err
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)
