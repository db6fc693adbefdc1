"""Contention as a condition (issue 23): a real target whose fix holds only while it runs alone,
screened at 4 trials at once and re-checked at one (``execution.recheck_parallel``). Each trial
registers itself in a shared folder for a moment and looks whether another is there: the GPU
race's eager decoding, which removed the race alone and only reduced it under sharing."""

from __future__ import annotations

import json
import textwrap

import pytest

import heisenbisect
from bisect_cli import bisect
from heisenbisect.decide import stats
from heisenbisect.decide.sequential import geometric_looks
from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.studies.contention import zero_anchored_first_look

APP = """\
import json, os, random, sys, time
from pathlib import Path
here = Path(sys.argv[1]) / str(os.getpid())
here.touch()
time.sleep(0.15)
shared = len(list(here.parent.iterdir())) > 1
time.sleep(0.05)
here.unlink()
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
if os.environ.get("APP_LOCK") == "1":
    rate = 0.0
elif os.environ.get("APP_EAGER") == "1":
    rate = 0.4 if shared else 0.0
else:
    rate = 0.9
print(json.dumps({"failures": int(rng.random() < rate), "total": 1}))
"""


@pytest.mark.slow  # about 120 runs of a real script, half of them one at a time
def test_a_fix_that_holds_only_alone_is_reported_as_depending_on_contention(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "running").mkdir()
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: contention
        target:
          command: [python, app.py, {tmp_path / "running"}]
          timeout: 30
        factors:
          - {{name: eager, var: APP_EAGER, levels: ["0", "1"]}}
          - {{name: lock, var: APP_LOCK, levels: ["0", "1"]}}
        statistics:
          zero_rate: 0.2
          max_trials: 20
          first_look: 10
        execution:
          parallel: 4
          recheck_parallel: 1
        """))
    result = heisenbisect.run(spec)
    data = json.loads(result.results.read_text())

    assert result.verdict("eager=1") == "reduces" and result.verdict("lock=1") == "eliminates"
    contention = data["contention"]
    assert contention["placement"] == "up to 4 trials in flight"
    assert contention["recheck_placement"] == "up to 1 trial in flight"
    by_change = {c["change"]: c for c in contention["changes"]}
    assert by_change["eager=1"]["recheck"]["verdict"] == "eliminates"
    assert by_change["eager=1"]["depends_on_contention"] is True
    assert by_change["lock=1"]["recheck"]["verdict"] == "eliminates"
    assert by_change["lock=1"]["depends_on_contention"] is False
    report = result.report.read_text()
    assert "**depends on contention**" in report and "1 of 2 verdicts depend on contention" in report
    again = result.report.parent.parent / "contention-recheck" / "report.md"
    assert again.exists()
    result.report.unlink()
    again.unlink()
    assert bisect("report", str(spec)).returncode == result.exit_code  # re-rendered from both stores, running nothing
    assert "1 of 2 verdicts depend on contention" in result.report.read_text()
    assert "**eliminates**" in again.read_text()  # the linked report is written again too


@pytest.mark.parametrize("zero_rate, confidence, first_look", [(0.05, 0.95, 10), (0.2, 0.95, 10), (0.01, 0.99, 10), (0.05, 0.9, 4), (0.3, 0.95, 10)])
def test_the_recheck_looks_where_zero_failures_first_bound_the_rate_below_zero_rate(zero_rate, confidence, first_look):
    """Brute force: the fewest runs whose 0 failures put the exact bound under zero_rate; the
    re-check's looks reach it within rounding, never start before the spec's first look."""
    spec = parse_spec(textwrap.dedent(f"""\
        target: {{command: [python, app.py]}}
        factors: [{{name: eager, var: APP_EAGER, levels: ["0", "1"]}}]
        statistics: {{zero_rate: {zero_rate}, confidence: {confidence}, first_look: {first_look}, max_trials: 2000}}
        """), "hypotheses.yaml")
    fewest = next(n for n in range(1, 5000) if stats.clopper_pearson_upper(0, n, confidence) < zero_rate)
    first = zero_anchored_first_look(spec)
    looks = geometric_looks(first, spec.statistics.max_trials)
    reaching = next(n for n in looks if n >= fewest)
    if fewest <= first_look:
        assert first == first_look
    else:  # k halvings rounded up, then k doublings: at most 2^k - 1 past the fewest
        assert first >= first_look and reaching <= fewest + 2 ** looks.index(reaching) - 1
