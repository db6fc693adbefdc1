"""Skipped runs never hide a failure, end to end: real targets whose flaky failure is a
FileNotFoundError traceback raised at run time (a temp-file race inside a function), which the
protocol reads as "could not run" and skips."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from bisect_cli import bisect

RACE = """\
import json, os, random

def work(shared_tmp, draw):
    if draw < RATE:
        if shared_tmp:  # the change moves the race into a temp file another run removed
            open("/nonexistent/heisenbisect-race.tmp")
        return 1
    return 0

draw = random.Random(int(os.environ["HEISENBISECT_SEED"])).random()
failed = work(os.environ.get("SHARED_TMP") == "1" or BASELINE_RAISES, draw)
print(json.dumps({"failures": failed, "total": 1}))
"""


def study(folder: Path, rate: float, baseline_raises: bool, extra: str = "") -> Path:
    script = RACE.replace("RATE", str(rate)).replace("BASELINE_RAISES", str(baseline_raises))
    (folder / "race.py").write_text(script)
    spec = folder / "race.yaml"
    spec.write_text(textwrap.dedent("""\
        study: race
        target:
          command: [python, race.py]
          timeout: 30
        factors:
          - {name: shared_tmp, var: SHARED_TMP, levels: ["0", "1"]}
        statistics: {zero_rate: 0.2, max_trials: 40, first_look: 10}
        execution: {parallel: 2}
        """).replace("  timeout: 30\n", "  timeout: 30\n" + extra))
    return spec


@pytest.mark.slow
def test_an_arm_whose_failures_became_skips_is_untestable_never_eliminates(tmp_path: Path):
    spec = study(tmp_path, rate=0.45, baseline_raises=False)
    done = bisect("run", str(spec), "--plain")
    assert done.returncode == 1, done.stdout + done.stderr  # not decided (it was 0, eliminates)
    data = json.loads((tmp_path / "reports" / "race" / "results.json").read_text())
    (arm,) = data["arms"]
    assert arm["verdict"] == "untestable", arm
    assert "FileNotFoundError" in arm["note"] and "traceback_is_failure: true" in arm["note"]
    assert "untestable" in done.stdout.splitlines()[0]
    report = (tmp_path / "reports" / "race" / "report.md").read_text()
    assert "`shared_tmp=1` is untestable" in report


@pytest.mark.slow
def test_a_baseline_whose_failures_are_all_skips_says_so_not_cannot_reproduce(tmp_path: Path):
    spec = study(tmp_path, rate=0.3, baseline_raises=True)
    done = bisect("run", str(spec), "--plain")
    assert done.returncode == 1, done.stdout + done.stderr  # it was 3, "cannot reproduce"
    text = done.stdout + done.stderr
    assert "cannot be reproduced" not in text and "could not be reproduced" not in text
    assert "the baseline never failed, but" in text and "traceback_is_failure: true" in text

    fixed = study(tmp_path, rate=0.3, baseline_raises=True, extra="  traceback_is_failure: true\n  result: exit\n")
    again = bisect("run", str(fixed), "--plain", "--fresh")
    data = json.loads((tmp_path / "reports" / "race" / "results.json").read_text())
    assert data["baseline"]["failures"] > 0, again.stdout + again.stderr  # the traceback counts


@pytest.mark.slow
def test_group_screening_holds_a_change_whose_failures_became_skips_untestable(tmp_path: Path):
    """The group search narrows onto the change (its runs never fail) and its claim arm would say
    `eliminates`: the skip rule holds the claim as one-at-a-time screening does."""
    spec = study(tmp_path, rate=0.45, baseline_raises=False)
    inert = "".join(f"  - {{name: inert{i}, var: INERT{i}, levels: ['0', '1']}}\n" for i in range(7))
    text = spec.read_text().replace("statistics: {", inert + "statistics: {strategy: group, ")
    spec.write_text(text.replace("max_trials: 40", "max_trials: 60"))
    done = bisect("run", str(spec), "--plain")
    assert done.returncode == 1, done.stdout + done.stderr  # not decided (0, `eliminates`, without the rule)
    data = json.loads((tmp_path / "reports" / "race" / "results.json").read_text())
    arm = next(a for a in data["arms"] if a["factor"] == "shared_tmp")
    assert arm["verdict"] == "untestable" and "untestable rather than eliminates" in arm["note"], arm
    assert "FileNotFoundError" in arm["note"] and data["untestable"] == []  # not a breaker
    report = (tmp_path / "reports" / "race" / "report.md").read_text()
    assert "`shared_tmp=1` is untestable: skipped runs may hide the failure" in report
