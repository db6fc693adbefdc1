"""Bad specs: one line each with file:line:col and the field, exit 2, no traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.errors import SpecError
from heisenbisect.hypotheses import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = """\
study: demo
target:
  command: [python, trial.py]
  timeout: 5
factors:
  - name: overlap
    var: OVERLAP
    levels: ["1", "0"]
  - name: graph
    kind: arg
    levels: ["", "--disable-cuda-graph"]
"""

BAD = {
    "misspelt key": (GOOD.replace("timeout: 5", "timeot: 5"), r":4:3: target\.timeot: unknown key 'timeot'; did you mean 'timeout'\?"),
    "wrong type": (GOOD.replace("timeout: 5", "timeout: soon"), r":4:12: target\.timeout: .*number.*got 'soon'"),
    "no target": (GOOD.split("target:")[0] + "factors: []\n", r":1:1: target: required field is missing"),
    "duplicate factor": (GOOD.replace("name: graph", "name: overlap"), r":9:11: factors\[1\]\.name: factor name is used twice, got .overlap."),
    "empty levels": (GOOD.replace('levels: ["1", "0"]', "levels: []"), r":8:13: factors\[0\]\.levels: .*at least 2.*got \[\]"),
    "invalid yaml": (GOOD.replace("  timeout: 5", "  timeout: [5"), r":\d+:\d+: invalid YAML"),
    "duplicate key": (GOOD.replace("  timeout: 5", "  timeout: 5\n  timeout: 6"), r":5:3: target\.timeout: key given twice"),
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hypotheses.yaml"
    path.write_text(text)
    return path


def test_a_good_spec_loads_into_a_frozen_model(tmp_path):
    spec = load_spec(write(tmp_path, GOOD))
    assert [a.key for a in spec.arms()] == ["overlap=0", "graph=--disable-cuda-graph"]
    assert spec.environment(spec.arms()[0])["OVERLAP"] == "0"
    assert spec.arguments(spec.arms()[1]) == ["--disable-cuda-graph"]
    with pytest.raises(Exception):
        spec.study = "other"  # frozen


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_spec_is_one_line_with_location_and_exit_2(tmp_path, capsys, case):
    """`bisect validate` through the `main` the script runs, in this process (a traceback would
    fail the test); test_run_on_a_bad_spec_exits_2_before_running_anything runs its own."""
    text, pattern = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert any(re.search(re.escape(str(path)) + pattern, line) for line in caught.value.problems), caught.value.problems
    assert main(["validate", str(path)]) == 2
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert lines and all(line.startswith(str(path) + ":") for line in lines)
    assert re.search(re.escape(str(path)) + pattern, stderr)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    text = GOOD.replace("timeout: 5", "timeot: 5").replace("levels: [\"1\", \"0\"]", "levels: []")
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, text))
    assert len(caught.value.problems) == 2


def test_run_on_a_bad_spec_exits_2_before_running_anything(tmp_path):
    path = write(tmp_path, GOOD.replace("timeout: 5", "timeot: 5"))
    proc = subprocess.run(
        [sys.executable, "-m", "heisenbisect", "run", str(path), "--out", str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("example", ["cpu_race", "simulated", "sglang"])
def test_shipped_examples_validate(example, capsys):
    assert main(["validate", str(EXAMPLES / example / "hypotheses.yaml")]) == 0, capsys.readouterr().err
