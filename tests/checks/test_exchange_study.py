"""The issue's "done means" end to end: a screening study whose target is a server that exchanges
argument values under concurrency (examples/sglang/fake-exchange.yaml) finds the setting that
stops it and leaves the decoy `no_effect` or undecided; every failure it counts is
`wrong_arguments`, which no format check would have seen; the report shows each arm's
known-answer accuracy beside its run-failure rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bisect_cli import bisect

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sglang" / "fake-exchange.yaml"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_screening_finds_the_setting_that_stops_the_exchange(tmp_path):
    run = bisect("run", str(EXAMPLE), "--out", str(tmp_path), "--plain", timeout=1100)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    results = json.loads((tmp_path / "fake-sglang-exchange" / "results.json").read_text())
    verdicts = {a["factor"]: a["verdict"] for a in results["arms"]}
    assert verdicts == {"prefix_cache": "eliminates",
                        "debug_memory_pool": verdicts["debug_memory_pool"]}, verdicts
    assert verdicts["debug_memory_pool"] in ("no_effect", "inconclusive"), verdicts
    baseline = results["baseline"]["metrics"]
    assert baseline["sessions_wrong_answer"] == 0 and baseline["sessions_wrong_arguments"] > 0
    assert all(baseline[f"sessions_{kind}"] == 0 for kind in ("leak", "garbage", "malformed", "no_tool"))
    # the known-answer questions each session asks first: right on every arm, shown beside the rates
    assert baseline["answers_asked"] == baseline["answers_right"] == 8
    report = (tmp_path / "fake-sglang-exchange" / "report.md").read_text()
    assert "known-answer accuracy 100.0% (8/8 per run)" in report
    header = next(line for line in report.splitlines() if line.startswith("| factor"))
    assert "run-failure rate" in header and "known-answer accuracy" in header
