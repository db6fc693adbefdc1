"""A launch argument SGLang overrides makes its config untestable, naming the flag and both values.

Against the fake server's real process tree: it serves ``/server_info`` as SGLang 0.5.6 does
(every server argument as a top-level key) and, as SGLang does, silently drops
``--enable-dp-attention`` when ``--dp-size`` is 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from test_sglang_lifecycle import FAKE, target, trial, watch  # noqa: F401  (watch: a fixture)

from heisenbisect.records import TrialStatus
from heisenbisect.stacks.read_back import overrides
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.stacks.sglang_server_info import FIELD_OF, read_server_args
from heisenbisect.targets.server.process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]


def test_the_fake_serves_its_effective_arguments_as_sglang_does():
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3", ["--enable-dp-attention", "--cuda-graph-max-bs", "16"], {})
    try:
        assert server.wait_ready(30, threading.Event(), 0.05).value == "ready"
        with urllib.request.urlopen(server.url + "/server_info", timeout=10) as response:
            info = json.loads(response.read())
        assert read_server_args(server.url) == info
    finally:
        server.stop(grace_s=2)
    # top-level keys named after the fields, then the scheduler's info and the version (sglang 0.5.6)
    assert info["model_path"] == "deepseek-ai/DeepSeek-V3" and info["cuda_graph_max_bs"] == 16
    assert info["enable_dp_attention"] is False  # dp_size 1: dropped after parsing
    assert info["tp_size"] == 1 and isinstance(info["internal_states"], list) and info["version"]


def test_an_overridden_flag_skips_its_config_naming_the_flag_and_both_values(watch, tmp_path):  # noqa: F811
    t = target()
    try:
        first = t.execute(trial(args=["--enable-dp-attention"], name="dp"), tmp_path / "t0.log", threading.Event())
        assert first.status is TrialStatus.SKIP, first.detail
        assert first.detail == ("SGLang overrode --enable-dp-attention: the config turns it on, "
                                "the server runs false: config untestable")
        assert "SGLang overrode --enable-dp-attention" in (tmp_path / "t0.log").read_text()
        assert not t.servers()  # the overridden server is not kept
        launched = len(watch.servers())
        second = t.execute(trial(1, args=["--enable-dp-attention"], name="dp"), tmp_path / "t1.log", threading.Event())
        assert (second.status, second.detail) == (TrialStatus.SKIP, first.detail)
        assert len(watch.servers()) == launched  # known overridden: no second launch

        honoured = t.execute(trial(args=["--enable-dp-attention", "--dp-size", "2"], name="dp2"),
                             tmp_path / "t2.log", threading.Event())
        assert honoured.status is TrialStatus.OK, honoured.detail
    finally:
        t.close()
    assert not watch.alive()


def test_values_are_compared_as_the_server_reports_them():
    effective = {"cuda_graph_max_bs": 8, "mem_fraction_static": 0.8, "kv_cache_dtype": "auto", "tp_size": 2,
                 "disable_cuda_graph": True, "enable_dp_attention": False, "api_key": "s3cret",
                 "cuda_graph_bs": [1, 2, 4], "json_model_override_args": {"a": 1}, "served_model_name": None}
    found = overrides(
        ["--cuda-graph-max-bs", "16", "--mem-fraction-static=0.80", "--kv-cache-dtype", "fp8_e4m3",
         "--tensor-parallel-size", "2", "--disable-cuda-graph", "--enable-dp-attention", "--api-key", "other",
         "--cuda-graph-bs", "1", "2", "4", "--json-model-override-args", '{"a": 2}', "--served-model-name", "m",
         "--not-a-field", "x"],
        effective, FIELD_OF,
    )
    assert [(o.flag, o.asked, o.runs) for o in found] == [
        ("--cuda-graph-max-bs", "16", 8), ("--kv-cache-dtype", "fp8_e4m3", "auto"),
        ("--enable-dp-attention", "", False), ("--served-model-name", "m", None),
    ]  # 0.80 is 0.8, --tensor-parallel-size sets tp_size, keys and dicts are never compared
    assert overrides(["--cuda-graph-max-bs", "8", "--cuda-graph-max-bs", "16"], {"cuda_graph_max_bs": 16}) == []


SPEC = f"""\
study: sglang-override
target:
  cwd: {ROOT}
  timeout: 60
  sglang:
    model: deepseek-ai/DeepSeek-V3
    launcher: [{sys.executable}, tests/sglang_fake_server.py, --fake-leak-rate, "0.3", --fake-latency, "0.002",
               --fake-startup-seconds, "0.05"]
    startup_timeout: 30
    trials_per_launch: 10
    workload: {{sessions: 4, rounds: 1}}
factors:
  - name: dp_attention
    kind: arg
    levels: [null, --enable-dp-attention]
statistics: {{max_trials: 10, first_look: 5}}
"""


@pytest.mark.slow
def test_a_study_reports_the_overridden_arm_as_untestable_with_the_flag(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    done = subprocess.run([sys.executable, "-m", "heisenbisect", "run", str(spec), "--out", str(tmp_path / "out"), "--plain"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]  # the arm is undecided, never a decoy
    results = json.loads((tmp_path / "out" / "sglang-override" / "results.json").read_text())
    [arm] = results["arms"]
    assert arm["verdict"] == "inconclusive" and arm["trials"] == 0 and arm["statuses"]["skip"] >= 1
    skipped = results["evidence"]["without_result"]["skip"]
    assert skipped["first"] == ("SGLang overrode --enable-dp-attention: the config turns it on, "
                                "the server runs false: config untestable")
    assert "SGLang overrode --enable-dp-attention" in (tmp_path / "out" / "sglang-override" / "report.md").read_text()
