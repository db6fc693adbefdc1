"""Load is evidence: the report records the CPUs and the load a study ran under, and says in
one line beside the verdicts when they may depend on it (the load moved more than 2x, or a
verdict changed since an earlier report). Real studies of real processes, real sqlite stores."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.decide.cautions import LOAD_MOVED, background_loads, cautions_of, load_moved
from heisenbisect.reports.cautions import markdown
from heisenbisect.store import Store
from heisenbisect.studies.run_record import remember

FLAKY = """\
import json, os, random
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
rate = 0.0 if os.environ.get("FIXED") == "1" else 0.5
print(json.dumps({"failures": int(rng.random() < rate), "total": 1}))
"""


def write_study(folder: Path, max_trials: int = 5) -> Path:
    (folder / "flaky.py").write_text(FLAKY)
    spec = folder / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: load
        target:
          command: [python, flaky.py]
          timeout: 60
        factors:
          - {{name: fixed, var: FIXED, levels: ["0", "1"]}}
        statistics:
          max_trials: {max_trials}
          first_look: 5
        execution:
          parallel: 2
        """))
    return spec


def row(report: str, name: str) -> str:
    return next(line for line in report.splitlines() if line.startswith(f"| {name} |"))


def test_the_environment_records_cpus_and_the_load_of_every_run(tmp_path):
    spec = write_study(tmp_path)
    ran = main(["run", str(spec), "--plain"])
    assert ran in (0, 1)
    folder = tmp_path / "reports" / "load"
    environment = json.loads((folder / "results.json").read_text())["environment"]
    assert environment["cpus"] == os.cpu_count() and environment["cpu_model"]
    (first,) = environment["sessions"]
    assert first["in_flight"] == 2 and first["load_start"] >= 0 and first["load_end"] >= 0
    report = (folder / "report.md").read_text()
    assert row(report, "CPUs").startswith(f"| CPUs | {os.cpu_count()} ({environment['cpu_model']})")
    assert row(report, "load average (1 min)") == (
        f"| load average (1 min) | {first['load_start']:.2f} at the start, {first['load_end']:.2f} at the end |"
    )

    # a larger budget resumes the study: the start stays the first run's, the resume adds its own
    write_study(tmp_path, max_trials=10)
    assert main(["run", str(spec), "--plain"]) in (0, 1)
    first_again, resume = json.loads((folder / "results.json").read_text())["environment"]["sessions"]
    assert first_again == first and resume["started_at"] > first["finished_at"]
    loads = row((folder / "report.md").read_text(), "load average (1 min)")
    assert loads.startswith(f"| load average (1 min) | {first['load_start']:.2f} at the start, {resume['load_end']:.2f} at the end")
    assert loads.endswith(
        f"; by run: first {first['load_start']:.2f} -> {first['load_end']:.2f} (2 trials in parallel); "
        f"resume 1 {resume['load_start']:.2f} -> {resume['load_end']:.2f} (2 trials in parallel) |"
    )


def test_the_load_moved_rule_on_recorded_values():
    """The load besides the study: each start, and each end less the study's trials in flight;
    loads below one busy CPU count as one."""
    idle_run = [{"load_start": 0.2, "load_end": 2.4, "in_flight": 2}]  # its own two trials: not a move
    assert background_loads(idle_run) == pytest.approx([0.2, 0.4]) and load_moved(background_loads(idle_run)) is None
    busy_end = [{"load_start": 0.3, "load_end": 6.5, "in_flight": 2}]  # 4.5 besides the study
    assert load_moved(background_loads(busy_end)) == (0.3, 4.5)
    steady = [{"load_start": 3.0, "load_end": 7.5, "in_flight": 2}]  # 3.0 -> 5.5: below 2x
    assert load_moved(background_loads(steady)) is None
    resumed_busy = [{"load_start": 0.5, "load_end": 2.5, "in_flight": 2}, {"load_start": 5.0, "in_flight": 2}]
    assert load_moved(background_loads(resumed_busy)) == (0.5, 5.0)
    assert load_moved([1.0, LOAD_MOVED * 1.0]) is None and load_moved([1.0, LOAD_MOVED + 0.01])
    assert load_moved(background_loads([{"load_start": 0.1}])) is None  # a run still going: one value
    line = markdown(cautions_of({"cpus": 2, "sessions": busy_end}, []))
    assert line == (
        "**Load.** The verdicts of reducers and decoys may depend on load: the load besides this study's trials "
        "moved from 0.30 to 4.50 during it (1-minute load average, 2 CPUs)."
    )
    assert cautions_of({"cpus": 2, "sessions": idle_run}, []) is None and cautions_of(None, []) is None


def test_a_verdict_that_changed_since_an_earlier_report_is_remembered(tmp_path):
    with Store(tmp_path / "study.sqlite") as store:
        assert remember(store, {"cache=1": "inconclusive", "graph=0": "reduces"}) == []
        assert remember(store, {"cache=1": "reduces", "graph=0": "reduces"}) == []  # undecided -> decided: no change
        assert remember(store, {"cache=1": "no_effect", "graph=0": "reduces"}) == [("cache=1", "reduces", "no_effect")]
    with Store(tmp_path / "study.sqlite") as store:  # the memory is the store's, across commands
        assert remember(store, {"cache=1": "no_effect", "graph=0": "reduces"}) == [("cache=1", "reduces", "no_effect")]


def test_the_report_says_when_a_verdict_changed_since_an_interim_report(tmp_path, capsys):
    spec = write_study(tmp_path)
    ran = main(["run", str(spec), "--plain"])
    assert ran in (0, 1)
    folder = tmp_path / "reports" / "load"
    verdict = json.loads((folder / "results.json").read_text())["arms"][0]["verdict"]
    earlier = "reduces" if verdict != "reduces" else "no_effect"
    with Store(folder / "study.sqlite") as store:  # what an interim report of this study had said
        store.set_meta("reported_verdicts", json.dumps({"fixed=1": [earlier]}))
    assert main(["report", str(spec)]) == ran  # the study's own exit code
    line = (
        f"**Load.** The verdicts of reducers and decoys may depend on load: `fixed=1` was `{earlier}` in an "
        f"earlier report and is `{verdict}` now"
    )
    report = (folder / "report.md").read_text()
    assert line in report and report.index(line) < report.index("## Environment") < report.index("## Reproduce")
    assert report.index("## Arms") < report.index(line)
    assert json.loads((folder / "results.json").read_text())["load_caution"].startswith("Load. The verdicts")
