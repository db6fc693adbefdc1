"""Well-formed wrongness against the fake server's real replies, over HTTP, under concurrency 8:
exchanged argument values, garbage text and wrong answers each found by their check, and each
check silent against the same server with the fault off (the negative control)."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from bisect_cli import bisect_here
from heisenbisect.checks.answers import AnswersSettings
from heisenbisect.checks.base import CheckSettings
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.openai.stress import run_stress
from heisenbisect.targets.openai.workload import StressSettings
from heisenbisect.targets.server.process import Readiness, ServerProcess

FAKE = (sys.executable, str(Path(__file__).resolve().parents[1] / "sglang_fake_server.py"))
# latency long enough that 8 sessions in flight share the fake's batches
LATENCY = ("--fake-latency", "0.1", "--fake-startup-seconds", "0.05")
ANSWERS_ON = {"answers": AnswersSettings(enabled=True)}


def start(*args: str) -> ServerProcess:
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3",
                                 ["--tool-call-parser", "deepseekv3", *LATENCY, *args], dict(os.environ))
    assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
    return server


def stress(server: ServerProcess, sessions: int = 16, **settings):
    return run_stress(server.url, StressSettings(sessions=sessions, rounds=4, concurrency=8,
                                                 request_timeout=20.0, **settings))


def test_bisect_stress_with_the_defaults_counts_exchanged_values_and_none_without(tmp_path, capsys):
    """The issue's reproduction: ~10% of batched same-tool requests get another session's values."""
    out = tmp_path / "evidence.json"
    exchanging = start("--fake-exchange-rate", "0.1")
    try:
        code = bisect_here(["stress", "--url", exchanging.url, "--sessions", "40", "--concurrency", "8",
                            "--json", str(out)])
    finally:
        exchanging.stop(grace_s=2)
    tally = capsys.readouterr().out.strip().splitlines()[-1]
    evidence = json.loads(out.read_text())
    wrong = evidence["counts"].get("wrong_arguments", 0)
    assert code == 1 and wrong >= 3, tally  # expected ~13 of 40 (1 - 0.9^4 of batched sessions)
    assert evidence["counts"] == {"wrong_arguments": wrong, "ok": 40 - wrong}, tally
    bad = [s for s in evidence["sessions"] if s["class"] == "wrong_arguments"]
    for session in bad:
        asked, received = session["evidence"]["asked"], session["evidence"]["received"]
        assert asked["arguments"] and any(received.get(k) != v for k, v in asked["arguments"].items())
        assert "called with other values than asked" in session["detail"]

    control = start("--fake-exchange-rate", "0.1", "--disable-radix-cache")
    try:
        code = bisect_here(["stress", "--url", control.url, "--sessions", "40", "--concurrency", "8"])
    finally:
        control.stop(grace_s=2)
    assert code == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "CORRUPTION sessions: 0/40 = 0.0% "
        "(leak=0 garbage=0 malformed=0 no_tool=0 wrong_arguments=0 error=0 ok=40)")


@pytest.mark.parametrize("stream", ["false", "true"])
def test_garbage_is_found_and_the_check_turned_off_lets_it_pass(stream):
    server = start("--fake-garbage-rate", "1")
    try:
        found = stress(server, sessions=6, stream=stream)
        off = stress(server, sessions=6, stream=stream, checks={"garbage": CheckSettings(enabled=False)})
    finally:
        server.stop(grace_s=2)
    assert found.counts() == {"garbage": 6}, [s.detail for s in found.kept]
    assert {s.detail.split(": ")[1] for s in found.kept} == {"content" if stream == "false"
                                                                 else "streamed content"}
    assert off.counts() == {"ok": 6}, [s.detail for s in off.kept]


def test_wrong_answers_are_counted_and_accuracy_is_a_metric():
    wrong = start("--fake-wronganswer-rate", "0.5")
    try:
        result = stress(wrong, sessions=24, checks=ANSWERS_ON)
    finally:
        wrong.stop(grace_s=2)
    metrics = result.metrics()
    assert metrics["answers_asked"] == 24 and metrics["sessions_wrong_answer"] == result.counts()["wrong_answer"]
    assert 24 - metrics["answers_right"] == result.counts()["wrong_answer"] >= 4
    assert set(result.counts()) == {"wrong_answer", "ok"}
    assert all(s.detail.startswith("question: ") for s in result.kept if s.kind == "wrong_answer")


@pytest.mark.parametrize("stream", ["false", "both"])
def test_negative_control_every_new_check_stays_silent_on_a_correct_server_under_load(stream):
    server = start()
    try:
        result = stress(server, sessions=24, stream=stream, checks=ANSWERS_ON)
    finally:
        server.stop(grace_s=2)
    assert result.counts() == {"ok": 24}, [s.detail for s in result.kept]
    assert result.metrics()["answers_asked"] == result.metrics()["answers_right"] == 24
