"""docs/results-schema.md lists exactly the keys a real study's results.json holds.

A small study of examples/simulated (its real trial script, real processes, a real store) runs
one change at a time and by group screening; each object of its results.json must have the keys
of its table in the page, no more and no fewer, and `schema_version` the one the page names.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

import heisenbisect

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "results-schema.md"
EXAMPLE = ROOT / "examples" / "simulated"
ARMS_ONLY = "Arms only."  # the arm record's keys that the baseline's record lacks
OPTIONAL = "optional"


def tables() -> dict[str, dict[str, str]]:
    """``{heading: {key: row}}`` for every ``### heading`` followed by a table of `key` rows."""
    found: dict[str, dict[str, str]] = {}
    heading = None
    for line in DOC.read_text().splitlines():
        if line.startswith("#"):
            heading = line[4:].strip() if line.startswith("### ") else None
            if heading:
                found[heading] = {}
        elif heading and (m := re.match(r"\| `([A-Za-z_]+)` \|", line)):
            found[heading][m.group(1)] = line
    return found


def keys(heading: str, *, arms_only: bool = True, optional: bool = True) -> set[str]:
    rows = tables()[heading]
    return {
        key for key, row in rows.items()
        if (arms_only or ARMS_ONLY not in row) and (optional or f"| {OPTIONAL}" not in row and f", {OPTIONAL} |" not in row)
    }


def study(folder: Path, strategy: str) -> dict:
    """Run a small real study of the simulated example; its results.json."""
    for name in ("trial.py", "truth.json"):
        shutil.copy(EXAMPLE / name, folder / name)
    spec = folder / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: schema-{strategy}
        target:
          command: [python, trial.py]
          timeout: 30
        factors:
          - {{name: overlap, var: SIM_OVERLAP, levels: ["1", "0"]}}
          - {{name: topk_v2, var: SIM_TOPK_V2, levels: ["1", "0"]}}
        statistics:
          zero_rate: 0.1
          max_trials: 10
          first_look: 10
          cost_metric: tokens_per_s
          strategy: {strategy}
        execution:
          parallel: 2
        """))
    result = heisenbisect.run(spec)
    return json.loads(result.results.read_text())


@pytest.mark.slow  # about 30 trials of a real script
def test_one_at_a_time_results_json_has_exactly_the_documented_keys(tmp_path):
    data = study(tmp_path, "one_at_a_time")

    assert set(data) == keys("results.json: top level")
    version = re.search(r"today \*\*(\d+)\*\*", DOC.read_text())
    assert version and data["schema_version"] == int(version.group(1))
    assert set(data["baseline"]) == keys("results.json: arm record", arms_only=False)
    assert len(data["arms"]) == 2
    for arm in data["arms"]:
        assert set(arm) == keys("results.json: arm record")
        assert set(arm["reach"]) == keys("results.json: reach")  # env factors: tracked
    assert set(data["evidence"]) == keys("results.json: evidence")
    assert set(data["environment"]) == keys("results.json: environment")
    assert set(data["settings"]) == keys("results.json: settings")


@pytest.mark.slow  # a real group search over the same two changes
def test_group_results_json_has_exactly_the_documented_keys(tmp_path):
    data = study(tmp_path, "group")

    assert data["strategy"] == "group"
    assert set(data) == keys("group results.json: top level")
    for change in data["arms"]:
        assert keys("group results.json: change", optional=False) <= set(change) <= keys("group results.json: change")
        assert change["reach"] is None or set(change["reach"]) == keys("results.json: reach")
    assert data["groups"]
    for arm in data["groups"]:
        assert set(arm) == keys("group results.json: search arm")
