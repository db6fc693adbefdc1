"""A near-zero reducer among inert flags, in a real group study (issue 23): a real script, real
processes, a real store. Eager decoding on the GPU race failed 1 run in 70 under sharing: below
zero_rate, far below the baseline, and the search took its first failed run for "holds no
eliminator", put it in a clearing group and thrashed. It must get an arm of its own instead, and
results.json must count each stored run once."""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest

import heisenbisect

INERT = 7
APP = f"""\
import json, os, random
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
for i in range({INERT}):
    os.environ.get(f"APP_X{{i}}")  # read, and nothing done with it
rate = 0.05 if os.environ.get("APP_EAGER") == "1" else 0.9
print(json.dumps({{"failures": int(rng.random() < rate), "total": 1}}))
"""


@pytest.mark.slow  # a few hundred runs of a real script
def test_a_near_zero_reducer_gets_its_own_arm_and_every_run_is_counted_once(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    inert = "".join(f'\n  - {{name: x{i}, var: APP_X{i}, levels: ["0", "1"]}}' for i in range(INERT))
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(textwrap.dedent("""\
        study: near-zero
        target:
          command: [python, app.py]
          timeout: 30
        factors:
          - {name: eager, var: APP_EAGER, levels: ["0", "1"]}""") + inert + textwrap.dedent("""
        statistics:
          zero_rate: 0.1
          max_trials: 40
          first_look: 10
          strategy: group
          group_size: 4
        execution:
          parallel: 2
        """))
    result = heisenbisect.run(spec)
    data = json.loads(result.results.read_text())

    by_change = {f"{a['factor']}={a['level']}": a for a in data["arms"]}
    eager = by_change["eager=1"]
    assert eager["verdict"] in ("eliminates", "reduces") and not eager["via_group"]
    clearing = [g for g in data["groups"] if g["role"] == "clear"]
    assert clearing and not any({"factor": "eager", "level": "1"} in g["changes"] for g in clearing)
    assert all(by_change[f"x{i}=1"]["verdict"] == "no_effect" for i in range(INERT))

    with sqlite3.connect(result.store) as db:
        stored = db.execute("select count(*) from outcomes").fetchone()[0]
    assert data["trials_total"] == stored
    assert eager["own_trials"] >= eager["trials"]  # its claim's runs, and the search's before them
    members = [by_change[f"x{i}=1"] for i in range(INERT)]
    assert all(m["via_group"] and m["group_trials"] >= m["trials"] > 0 for m in members)  # the group's runs, shared
    assert sum(m["own_trials"] == 0 for m in members) >= INERT - 2  # only a split's sibling ran alone
    group_runs = sum(g["trials"] for g in data["groups"] if len(g["changes"]) > 1)
    assert sum(a["group_trials"] for a in data["arms"]) > group_runs  # a group's runs are shared by its members
    report = result.report.read_text()
    assert f"**Trials.** {stored} in all, each counted once" in report
