"""`bisect stress` against servers that trickle, send endless or huge answers, echo the key,
or describe themselves wrongly: each ends as an error session or one line, exit 2, never a hang,
a traceback or the key in the output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bisect_cli import bisect
from heisenbisect.cli import main
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.process import kill_tree, start_process_group
from heisenbisect.targets.server.process import Readiness, ServerProcess

TESTS = Path(__file__).resolve().parents[1]
ROGUE = (sys.executable, str(TESTS / "rogue_openai_server.py"))
FAKE = (sys.executable, str(TESTS / "sglang_fake_server.py"))
KEY = "sk-echoed-9c1d44f0a7be4e21"


def start_rogue(*args: str) -> tuple[subprocess.Popen, str]:
    proc = start_process_group([*ROGUE, *args], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    return proc, f"http://127.0.0.1:{line.split()[1]}"


def stress(url: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """A run as a user makes it: a fresh process."""
    return bisect("stress", "--url", url, "--sessions", "1", "--rounds", "1", *args, timeout=120, **kwargs)


def stress_here(capsys, url: str, *args: str) -> subprocess.CompletedProcess:
    """The same through `cli.main` in this process (a fresh interpreter costs seconds on a loaded machine)."""
    code = main(["stress", "--url", url, "--sessions", "1", "--rounds", "1", *args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess([], code, out, err)


@pytest.mark.timeout(60)
def test_request_timeout_bounds_a_trickling_answer(capsys):
    proc, url = start_rogue("--chat", "trickle", "--interval", "0.2")
    try:
        done = stress_here(capsys, url, "--request-timeout", "1")
    finally:
        kill_tree(proc)
    assert done.returncode == 2, done.stderr  # every session an error
    assert "error: round 1: no whole answer within --request-timeout 1s" in done.stdout
    assert "CORRUPTION sessions: 0/1" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.parametrize("chat, stream", [("hugeline", "--stream"), ("endless", "--stream"), ("bigbody", None)])
@pytest.mark.timeout(60)
def test_a_response_past_the_size_cap_is_an_error_session(chat, stream, tmp_path, capsys):
    proc, url = start_rogue("--chat", chat, "--megabytes", "8")
    out = tmp_path / "evidence.json"
    try:
        done = stress_here(capsys, url, "--max-response-bytes", str(1 << 20), "--json", str(out), *([stream] if stream else []))
    finally:
        kill_tree(proc)
    assert done.returncode == 2, done.stderr
    assert f"error: round 1: the response ran past {1 << 20} bytes (--max-response-bytes" in done.stdout
    assert json.loads(out.read_text())["counts"] == {"error": 1}


@pytest.mark.parametrize("models", ['{"data": "x"}', '[1, 2]', '{"data": [{"id": 7}]}', '{"data": []}', "not json", "[" * 100_000])
def test_malformed_model_metadata_is_one_line_exit_2(models, capsys):
    proc, url = start_rogue("--models", models)
    try:
        done = stress_here(capsys, url)
    finally:
        kill_tree(proc)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "/v1/models" in done.stderr, done.stderr


@pytest.mark.slow
def test_a_key_the_server_echoes_back_is_in_no_output_and_no_file(tmp_path):
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3",
                                 ["--api-key", KEY, "--fake-echo-auth", "--fake-error-rate", "0.5",
                                  "--fake-latency", "0.001", "--fake-startup-seconds", "0.05"], dict(os.environ))
    try:
        assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
        by_option = stress(server.url, "--sessions", "6", "--stream", "both", "-v", "--api-key", KEY,
                           "--json", str(tmp_path / "option.json"))
        by_env = stress(server.url, "--sessions", "6", "-v", "--json", str(tmp_path / "env.json"),
                        env={**os.environ, "OPENAI_API_KEY": KEY})
        wrong = stress(server.url, "-v", "--api-key", KEY[:-1], "--json", str(tmp_path / "wrong.json"))
    finally:
        server.stop(grace_s=2)
    assert "error" in json.loads((tmp_path / "option.json").read_text())["counts"]  # the echoing bodies came
    assert "(Authorization: Bearer ***)" in by_option.stdout
    assert wrong.returncode == 2 and "401 Unauthorized" in wrong.stderr
    texts = [d.stdout + d.stderr for d in (by_option, by_env, wrong)]
    texts += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    for text in texts:
        assert KEY not in text and KEY[:-1] not in text
