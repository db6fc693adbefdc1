"""Group screening over a spec made by `bisect factors sglang`, against the fake SGLang server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bisect_cli import bisect
from heisenbisect.stacks.sources import default_cache_dir, find_archive

ROOT = Path(__file__).resolve().parents[2]
VERSION = "0.5.23"
# 8 real flags of 0.5.23: the story's two, two ROCm-only kernels (the fake dies at start-up
# with them, as a real server on this machine would), and inert ones; small, as every config
# launches a server. Sized for CI: a fast fake (20 ms a request, ready 50 ms after its children
# start) and 6 sessions a trial still fail about 70% of baseline runs; a trial costs about
# one server launch.
MATCH = "^SGLANG_OPT_(USE_AITER|USE_TOPK_V2|USE_MULTI_STREAM_OVERLAP|DG_|MASK_)"

HEADER = f"""\
study: sglang-flags
target:
  cwd: {ROOT}
  timeout: 60
  sglang:
    model: deepseek-ai/DeepSeek-V4-Flash
    launcher: [{sys.executable}, tests/sglang_fake_server.py, --fake-story, --fake-latency, "0.02",
               --fake-startup-seconds, "0.05"]
    server_args: [--tool-call-parser, deepseekv4]
    startup_timeout: 30
    trials_per_launch: 5
    workload: {{sessions: 6, rounds: 4}}
statistics: {{strategy: group, zero_rate: 0.25, max_trials: 20, first_look: 8}}
execution: {{parallel: 2}}
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_group_run_over_generated_sglang_flags_finds_the_fix_and_the_breakers(tmp_path):
    if not find_archive("sglang", VERSION, default_cache_dir("sglang")):
        pytest.skip(f"no sglang {VERSION} wheel cached (tests/stacks/test_sglang_factors.py fetches it)")
    listed = bisect("factors", "sglang", "--version", VERSION, "--match", MATCH)
    assert listed.returncode == 0, listed.stderr
    spec = tmp_path / "flags.yaml"
    spec.write_text(HEADER + listed.stdout)  # the listing pastes under the spec as it is
    factors = [line.split(": ", 1)[1] for line in listed.stdout.splitlines() if line.startswith("  - name: ")]
    assert "SGLANG_OPT_USE_MULTI_STREAM_OVERLAP" in factors and len(factors) >= 6
    run = bisect("run", str(spec), "--out", str(tmp_path / "out"), "--plain", timeout=1500)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "sglang-flags" / "results.json").read_text())
    verdicts = {a["factor"]: a["verdict"] for a in results["arms"]}
    assert run.returncode == (1 if "inconclusive" in verdicts.values() else 0)  # 0 only when all is decided
    assert verdicts["SGLANG_OPT_USE_MULTI_STREAM_OVERLAP"] == "eliminates"
    breakers = {name for name in factors if "AITER" in name}
    assert breakers and {u["factor"] for u in results["untestable"]} == breakers
    assert all(Path(u["log"]).exists() for u in results["untestable"])
    others = {n: v for n, v in verdicts.items() if n not in breakers | {"SGLANG_OPT_USE_MULTI_STREAM_OVERLAP", "SGLANG_OPT_USE_TOPK_V2"}}
    assert set(others.values()) <= {"no_effect", "inconclusive"}
