"""The fake OpenAI-compatible server, started for the checks' tests, and a short stress run."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.openai.stress import run_stress
from heisenbisect.targets.openai.workload import StressResult, StressSettings
from heisenbisect.targets.server.process import Readiness, ServerProcess

FAKE = (sys.executable, str(Path(__file__).resolve().parent / "sglang_fake_server.py"))


def start_fake(*args: str, latency: str = "0.001") -> ServerProcess:
    args = ["--tool-call-parser", "deepseekv3", *args, "--fake-latency", latency,
            "--fake-startup-seconds", "0.05"]
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3", args, dict(os.environ))
    ready = server.wait_ready(60, threading.Event(), poll_s=0.1)
    assert ready is Readiness.READY, server.log_tail()
    return server


def stress(server: ServerProcess, **settings) -> StressResult:
    """Four sessions of two rounds, over real HTTP."""
    settings = StressSettings(sessions=4, rounds=2, request_timeout=10.0, **settings)
    return run_stress(server.url, settings)
