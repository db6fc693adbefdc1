"""Streamed tool calls, API keys, URL forms, TLS and the evidence, against the fake server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from bisect_cli import bisect_here
from heisenbisect.checks.malformed import tool_call_changes
from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.openai.streaming import StreamedCompletion, accumulate_delta
from heisenbisect.targets.openai.workload import StressSettings, api_base
from heisenbisect.targets.process import kill_tree, start_process_group
from heisenbisect.targets.server.process import Readiness, ServerProcess
from heisenbisect.targets.server.spec import make_server_target
from heisenbisect.targets.server.target import ServerTarget, evidence_path

FAKE = (sys.executable, str(Path(__file__).resolve().parents[1] / "sglang_fake_server.py"))
KEY = "sk-test-3f9a1c77e2b04d58a1d6"


def start_fake(*args: str) -> ServerProcess:
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3", [*args, "--fake-latency", "0.001",
                                                                   "--fake-startup-seconds", "0.05"], dict(os.environ))
    assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
    return server


# ---------------------------------------------------------------- the client's accumulation rules


def test_deltas_accumulate_as_the_openai_client_does():
    snapshot: dict = {}
    for delta in (
        {"role": "assistant", "content": ""},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]},
        {"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "calculate", "arguments": "{}"}}]},
        {"tool_calls": [{"index": 0, "type": "function", "function": {"arguments": 'ty": "Oslo"}'}}]},
    ):
        accumulate_delta(snapshot, json.loads(json.dumps(delta)))
    calls = snapshot["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "calculate"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Oslo"}  # parses only once reassembled
    assert calls[0]["type"] == "function" and calls[0]["index"] == 0  # replaced, not concatenated
    # a name sent twice is concatenated by the client: the call it makes is not the model's
    again = accumulate_delta(snapshot, {"tool_calls": [{"index": 0, "function": {"name": "get_weather"}}]})
    assert again["tool_calls"][0]["function"]["name"] == "get_weatherget_weather"


def test_changes_between_deltas_are_found_in_the_raw_deltas():
    deltas = [{"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}]},
              {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
              {"tool_calls": [{"index": 0, "id": "b", "function": {"arguments": ""}}]}]
    assert tool_call_changes(deltas) == "tool call 0: id changed between deltas 1 and 3: 'a' then 'b'"
    assert tool_call_changes(deltas[:2]) is None
    stream = StreamedCompletion()
    for delta in deltas:
        stream.add({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    assert stream.message["tool_calls"][0]["id"] == "ab" and len(stream.deltas()) == 3


# ---------------------------------------------------------------- each streamed corruption


STREAMED_FAULTS = [
    # fault, parser, class, what the detail says
    ("splittoken", "kimi_k2", "leak", "'<|tool_calls_section_begin|>' (split across deltas)"),
    ("splittoken", "deepseekv3", "leak", "(split across deltas)"),
    ("renamecall", "deepseekv3", "malformed", "streamed tool call 0: name changed between deltas"),
    ("changeid", "deepseekv3", "malformed", "streamed tool call 0: id changed between deltas"),
    ("noindex", "deepseekv3", "malformed", "streamed list delta entry without an integer index"),
    ("truncate", "deepseekv3", "malformed", "arguments are not JSON"),
    ("leak", "deepseekv32", "leak", "streamed"),
]


@pytest.mark.parametrize(("fault", "parser", "kind", "detail"), STREAMED_FAULTS)
def test_each_streamed_corruption_is_classified(fault, parser, kind, detail, tmp_path, capsys):
    server = start_fake("--tool-call-parser", parser, f"--fake-{fault}-rate", "1")
    try:
        out = tmp_path / "result.json"
        code = bisect_here(["stress", "--url", server.url, "--sessions", "4", "--rounds", "2", "--stream", "--json", str(out)])
    finally:
        server.stop(grace_s=2)
    result = json.loads(out.read_text())
    assert code == 1 and result["counts"] == {kind: 4}, capsys.readouterr().out
    for session in result["sessions"]:
        assert session["stream"] is True and detail in session["detail"], session["detail"]
        chunks = session["evidence"]["response"]["chunks"]
        if fault == "noindex":  # the client stops at the chunk it cannot merge; so do we
            assert "index" not in chunks[-1]["choices"][0]["delta"]["tool_calls"][0]
            continue
        rebuilt = StreamedCompletion()
        for chunk in chunks:
            rebuilt.add(chunk)
        assert rebuilt.message == session["evidence"]["response"]["assembled"]  # the deltas, whole
        assert session["evidence"]["request"]["stream"] is True


def test_stream_only_faults_leave_plain_requests_alone_and_both_mixes_modes(tmp_path):
    server = start_fake("--tool-call-parser", "deepseekv3", "--fake-renamecall-rate", "1")
    try:
        out = tmp_path / "result.json"
        assert bisect_here(["stress", "--url", server.url, "--sessions", "6", "--rounds", "2",
                       "--stream", "both", "--json", str(out)]) == 1
    finally:
        server.stop(grace_s=2)
    evidence = json.loads(out.read_text())
    assert evidence["counts"] == {"ok": 3, "malformed": 3}  # every session counted, the bad ones kept
    assert [(s["index"], s["stream"], s["class"]) for s in evidence["sessions"]] == [
        (1, True, "malformed"), (3, True, "malformed"), (5, True, "malformed")]


def test_a_clean_stream_is_ok_though_no_single_delta_parses(tmp_path):
    server = start_fake("--tool-call-parser", "deepseekv3")
    try:
        out = tmp_path / "result.json"
        assert bisect_here(["stress", "--url", server.url, "--sessions", "5", "--rounds", "3", "--stream",
                       "--json", str(out)]) == 0
    finally:
        server.stop(grace_s=2)
    result = json.loads(out.read_text())
    assert result["counts"] == {"ok": 5} and result["metrics"]["tokens_per_s"] > 0  # usage came in the stream


# ---------------------------------------------------------------- auth, URLs, TLS


@pytest.fixture(scope="module")
def keyed_server():
    server = start_fake("--tool-call-parser", "deepseekv3", "--api-key", KEY, "--fake-leak-rate", "0.5")
    yield server
    server.stop(grace_s=2)


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_api_key_from_the_option_or_the_environment_and_never_in_the_output(keyed_server, suffix, tmp_path,
                                                                             capsys, monkeypatch):
    url = keyed_server.url + suffix
    with pytest.raises(HeisenbisectError, match="401 Unauthorized: give the server's key with --api-key"):
        bisect_here(["stress", "--url", url, "--sessions", "1"])
    out = tmp_path / "by-option.json"
    assert bisect_here(["stress", "--url", url, "--sessions", "8", "--rounds", "2", "--api-key", KEY,
                   "--json", str(out), "-v"]) == 1
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    env_out = tmp_path / "by-env.json"
    assert bisect_here(["stress", "--url", url, "--sessions", "8", "--rounds", "2", "--stream", "both",
                   "--json", str(env_out)]) == 1
    captured = capsys.readouterr()
    for text in (captured.out, captured.err, out.read_text(), env_out.read_text()):
        assert KEY not in text and KEY[3:] not in text
    result = json.loads(env_out.read_text())
    assert result["workload"]["api_key"] == "(set)" and result["server"]["url"] == keyed_server.url


def test_base_urls_normalize_with_or_without_v1():
    assert api_base("http://127.0.0.1:30000") == "http://127.0.0.1:30000"
    assert api_base("http://127.0.0.1:30000/v1/") == "http://127.0.0.1:30000"
    assert api_base(" https://gw.example/sglang/v1 ") == "https://gw.example/sglang"
    assert api_base("https://h/v1beta") == "https://h/v1beta"
    for bad in ("127.0.0.1:30000", "ftp://h/v1", "http://"):
        with pytest.raises(HeisenbisectError, match="--url: expected http://HOST:PORT"):
            api_base(bad)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl to make a certificate")
def test_https_with_a_self_signed_certificate(tmp_path, capsys):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    port = _free_port()
    # in a process group of its own, marked: its scheduler and worker children go with it
    proc = start_process_group([*FAKE, "--model-path", "m", "--port", str(port), "--fake-startup-seconds", "0",
                                "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"https://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"https://127.0.0.1:{port}/health", verify=False).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with pytest.raises(HeisenbisectError, match="CERTIFICATE_VERIFY_FAILED"):
            bisect_here(["stress", "--url", url, "--sessions", "1"])
        assert bisect_here(["stress", "--url", url, "--sessions", "3", "--rounds", "2", "--ca-cert", str(cert)]) == 0
        assert bisect_here(["stress", "--url", url, "--sessions", "3", "--rounds", "2", "--insecure", "--stream"]) == 0
    finally:
        kill_tree(proc, grace_s=5)
    assert "server https://127.0.0.1" in capsys.readouterr().out


def test_a_target_whose_server_demands_a_key_uses_it_and_never_logs_it(tmp_path):
    target = ServerTarget(
        "deepseek-ai/DeepSeek-V3", stack=SGLANG, launcher=FAKE,
        server_args=("--api-key", KEY, "--fake-latency", "0.001", "--fake-startup-seconds", "0.05",
                     "--fake-drop-rate", "0.3"),
        workload=StressSettings(sessions=6, rounds=2), startup_timeout_s=60, poll_s=0.1, stop_grace_s=2,
    )
    log = tmp_path / "baseline-0000.log"
    try:
        outcome = target.execute(Trial("baseline-0000", Config(), 0, 5), log, threading.Event())
    finally:
        target.close()
    assert outcome.status is TrialStatus.OK and outcome.total == 6, outcome.detail  # no 401s
    text = log.read_text()
    assert "api_key='<redacted:api-key>'" in text  # the server's own print of its arguments
    assert "--api-key <redacted:api-key>" in text  # the launch line
    for written in (text, evidence_path(log).read_text(), outcome.detail):
        assert KEY not in written


# ---------------------------------------------------------------- evidence


def test_json_evidence_names_the_server_and_holds_each_bad_request_and_response(tmp_path):
    server = start_fake("--tool-call-parser", "deepseekv3", "--fake-drop-rate", "0.3", "--fake-seed", "7")
    try:
        out = tmp_path / "result.json"
        assert bisect_here(["stress", "--url", server.url + "/v1", "--sessions", "10", "--rounds", "3", "--seed", "3",
                       "--max-tokens", "77", "--json", str(out)]) == 1
    finally:
        server.stop(grace_s=2)
    result = json.loads(out.read_text())
    assert result["server"] == {"url": server.url, "model": "deepseek-ai/DeepSeek-V3", "version": "0.5.23",
                                "version_source": "/server_info"}
    assert result["workload"]["max_tokens"] == 77 and result["workload"]["seed"] == 3
    assert result["workload"]["tools"] == ["get_weather", "search_docs", "read_file", "calculate"]
    bad = [s for s in result["sessions"] if s["class"] != "ok"]
    assert bad and all(s["class"] == "no_tool" for s in bad)
    for session in result["sessions"]:
        assert ("evidence" in session) == (session["class"] != "ok")
    for session in bad:
        request, response = session["evidence"]["request"], session["evidence"]["response"]
        assert request["max_tokens"] == 77 and request["messages"][0]["role"] == "system"
        assert len([m for m in request["messages"] if m["role"] == "user"]) == session["rounds_done"] + 1
        assert response["choices"][0]["finish_reason"] == "stop" and "tool_calls" not in response["choices"][0]["message"]


@pytest.mark.parametrize(("written", "mode"), [("true", "true"), ("false", "false"), ("both", "both"), (None, "false")])
def test_workload_stream_in_a_spec_reaches_the_target(written, mode):
    stream = "" if written is None else f"\n    workload: {{stream: {written}}}"
    spec = parse_spec("study: s\ntarget:\n  sglang:\n    model: m" + stream
                      + "\nfactors:\n  - {name: g, kind: arg, levels: [[], [--disable-cuda-graph]]}\n", "s.yaml")
    assert make_server_target(spec).workload.stream == mode


def test_a_trials_log_points_at_its_evidence_file(tmp_path):
    target = ServerTarget(
        "deepseek-ai/DeepSeek-V3", stack=SGLANG, launcher=FAKE,
        server_args=("--tool-call-parser", "deepseekv3", "--fake-latency", "0.001", "--fake-startup-seconds", "0.05",
                     "--fake-splittoken-rate", "0.5"),
        workload=StressSettings(sessions=6, rounds=2, stream="true"), startup_timeout_s=60, poll_s=0.1,
        stop_grace_s=2,
    )
    log = tmp_path / "baseline-0000.log"
    try:
        outcome = target.execute(Trial("baseline-0000", Config(), 0, 11), log, threading.Event())
    finally:
        target.close()
    assert outcome.status is TrialStatus.OK and outcome.failures > 0
    text = log.read_text()
    evidence = evidence_path(log)
    assert evidence.name == "baseline-0000.evidence.json"
    assert f"evidence (the first bad sessions' requests and responses): {evidence}" in text
    assert "version 0.5.23 (from /server_info)" in text and '"stream": "true"' in text
    assert "(streamed): leak: round" in text
    saved = json.loads(evidence.read_text())
    leaks = [s for s in saved["sessions"] if s["class"] == "leak"]
    assert len(leaks) == outcome.failures and all(s["evidence"]["response"]["chunks"] for s in leaks)
    # the log holds the same evidence line by line (a Ray worker ships the log, not the file beside it)
    logged = [json.loads(line.strip()[len("evidence "):]) for line in text.splitlines()
              if line.startswith("    evidence {")]
    assert logged == [s["evidence"] for s in leaks]
