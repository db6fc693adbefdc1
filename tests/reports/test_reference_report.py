"""A real screening study with the reference check on: report.md and paste.md say which layer
broke, per config, and what the reference pass cost."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bisect_cli import bisect

FAKE = Path(__file__).resolve().parents[1] / "sglang_fake_server.py"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_report_names_the_layer_and_the_cost(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"""\
study: warm-cache
target:
  timeout: 120
  sglang:
    model: m
    launcher: [{sys.executable}, {FAKE}, --fake-warmcache-rate, "1", --fake-latency, "0.01",
               --fake-startup-seconds, "0.05"]
    server_args: [--tool-call-parser, deepseekv3]
    startup_timeout: 60
    workload:
      sessions: 4
      rounds: 1
      checks: {{reference: {{enabled: true}}}}
factors:
  - name: cache_fault
    kind: arg
    levels: [[], [--fake-warmcache-rate, "0"]]
statistics:
  max_trials: 3
""")
    done = bisect("run", str(spec), "--out", str(tmp_path / "out"))
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = (tmp_path / "out" / "warm-cache" / "report.md").read_text()
    paste = (tmp_path / "out" / "warm-cache" / "paste.md").read_text()
    for text in (report, paste):
        section = text.split("## Reference answers: which layer broke", 1)[1]
        baseline, arm = section.split("- `cache_fault=", 1)
        assert "scheduler or cache: 12 sessions diverged again" in baseline, section
        assert "nothing to attribute" in arm and "requests answered alone" in arm, section
