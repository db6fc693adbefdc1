"""The fake server's vLLM mode behaves as vLLM does where heisenbisect can tell, and the vLLM
preset of the server target launches, probes and stresses it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import psutil
from test_server_target import fake_processes

from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.stacks.vllm import STACK as VLLM
from heisenbisect.targets.openai.workload import StressSettings
from heisenbisect.targets.server.launch_flags import parse_help_flags
from heisenbisect.targets.server.process import Readiness, ServerProcess
from heisenbisect.targets.server.target import ServerTarget

FAKE_VLLM = (sys.executable, str(Path(__file__).resolve().parents[1] / "sglang_fake_server.py"), "serve")
MODEL = "Qwen/Qwen3-8B"


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_the_fake_speaks_vllms_cli_endpoints_and_errors():
    plain = subprocess.run([*FAKE_VLLM, "--help"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and "--help=all" in plain.stdout
    assert "--enforce-eager" not in parse_help_flags(plain.stdout), "plain --help lists only the groups, as vLLM's"
    full = subprocess.run([*FAKE_VLLM, "--help=all"], capture_output=True, text=True, timeout=60)
    assert {"--enforce-eager", "--no-async-scheduling", "--max-num-seqs"} <= parse_help_flags(full.stdout)
    unknown = subprocess.run([*FAKE_VLLM, MODEL, "--disable-cuda-graph"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "unrecognized arguments: --disable-cuda-graph" in unknown.stderr

    server = ServerProcess.start(VLLM, FAKE_VLLM, MODEL, ["--api-key", "k"], {})
    try:
        assert server.argv[len(FAKE_VLLM):len(FAKE_VLLM) + 3] == [MODEL, "--host", "127.0.0.1"]
        assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
        assert get(server.url + "/health") == (200, {})
        assert get(server.url + "/version") == (200, {"version": "0.33.0"})
        assert get(server.url + "/health_generate")[0] == 404
        assert get(server.url + "/v1/models") == (401, {"error": "Unauthorized"})
        request = urllib.request.Request(server.url + "/v1/chat/completions", data=b"{}", method="POST",
                                         headers={"Authorization": "Bearer k", "Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=5)
        except urllib.error.HTTPError as exc:
            assert exc.code == 400 and json.loads(exc.read())["error"]["type"] == "BadRequestError"
        assert "Application startup complete." in server.log_tail()
        assert any(p.name() for p in psutil.Process(server.proc.pid).children()), "an engine-core child"
    finally:
        server.stop(grace_s=3)
    assert not fake_processes()


def test_the_vllm_preset_probes_flags_with_help_all_and_skips_what_vllm_lacks(tmp_path):
    target = ServerTarget(MODEL, stack=VLLM, launcher=FAKE_VLLM, server_args=("--fake-latency", "0.002"),
                          workload=StressSettings(sessions=4, rounds=2, request_timeout=10.0), poll_s=0.05,
                          stop_grace_s=3.0, startup_timeout_s=60)
    try:
        skipped = target.execute(Trial("t-0", Config((("cuda_graph", "off"),)), 0, 1, args=("--disable-cuda-graph",)),
                                 tmp_path / "skip.log", threading.Event())
        assert skipped.status is TrialStatus.SKIP
        assert skipped.detail == "this vLLM does not know --disable-cuda-graph: config untestable"
        ran = target.execute(Trial("t-1", Config((("cuda_graph", "off"),)), 1, 2, args=("--enforce-eager",)),
                             tmp_path / "ok.log", threading.Event())
        assert ran.status is TrialStatus.OK and (ran.failures, ran.total) == (0, 4), ran.detail
        assert "version 0.33.0 (from /version)" in (tmp_path / "ok.log").read_text()
    finally:
        target.close()
    assert not fake_processes()
