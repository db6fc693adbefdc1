"""`bisect stress` against the fake SGLang server reproduces the corruption rates it injects."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest
from scipy.stats import binomtest

from bisect_cli import bisect_here
from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.server.process import Readiness, ServerProcess

FAKE = (sys.executable, str(Path(__file__).resolve().parents[1] / "sglang_fake_server.py"))
RATES = {"error": 0.03, "hang": 0.01, "leak": 0.04, "truncate": 0.02, "badname": 0.01, "badargs": 0.01, "drop": 0.03}
CLASS_OF = {"error": "error", "hang": "error", "leak": "leak", "truncate": "malformed",
            "badname": "malformed", "badargs": "malformed", "drop": "no_tool"}
SESSIONS, ROUNDS = 300, 3


def start_fake(*args: str) -> ServerProcess:
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3", [*args, "--fake-latency", "0.002", "--fake-startup-seconds", "0.05"],
                                 dict(os.environ))
    assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
    return server


def expected_session_rates(rates: dict[str, float], rounds: int) -> dict[str, float]:
    """A session ends at its first faulty request: P(class) = rate(class) * sum_k q^k, k < rounds."""
    q = 1 - sum(rates.values())
    reach = (1 - q**rounds) / (1 - q)
    out = {"ok": q**rounds}
    for fault, rate in rates.items():
        out[CLASS_OF[fault]] = out.get(CLASS_OF[fault], 0.0) + rate * reach
    return out


@pytest.fixture(scope="module")
def faulty_server():
    args = [a for fault, rate in RATES.items() for a in (f"--fake-{fault}-rate", str(rate))]
    server = start_fake("--tool-call-parser", "deepseekv3",
                        "--fake-hang-seconds", "30", *args)
    yield server
    server.stop(grace_s=2)


def test_stress_reproduces_injected_rates(faulty_server, tmp_path, capsys):
    out = tmp_path / "result.json"
    code = bisect_here(["stress", "--url", faulty_server.url, "--sessions", str(SESSIONS), "--rounds", str(ROUNDS),
                   "--concurrency", "60", "--request-timeout", "3", "--json", str(out)])
    lines = capsys.readouterr().out.strip().splitlines()
    result = json.loads(out.read_text())
    counts = {k: result["counts"].get(k, 0) for k in ("leak", "malformed", "no_tool", "error", "ok")}
    assert code == 1
    corrupted = counts["leak"] + counts["malformed"] + counts["no_tool"]
    assert lines[-1] == (
        f"CORRUPTION sessions: {corrupted}/{SESSIONS} = {100 * corrupted / SESSIONS:.1f}% "
        f"(leak={counts['leak']} garbage=0 malformed={counts['malformed']} no_tool={counts['no_tool']} "
        f"wrong_arguments=0 "
        f"error={counts['error']} ok={counts['ok']})"
    )
    for kind, p in expected_session_rates(RATES, ROUNDS).items():
        ci = binomtest(counts[kind], SESSIONS).proportion_ci(confidence_level=0.999, method="exact")
        assert ci.low <= p <= ci.high, f"{kind}: {counts[kind]}/{SESSIONS}, expected p={p:.3f}, CI {ci}"


def test_clean_server_gives_zero_and_exit_0(tmp_path, capsys):
    server = start_fake("--tool-call-parser", "deepseekv32")
    try:
        tools = tmp_path / "tools.json"
        tools.write_text(json.dumps([{"type": "function", "function": {
            "name": "lookup_order", "description": "Find an order by id.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        }}]))
        code = bisect_here(["-v", "stress", "--url", server.url, "--sessions", "20", "--rounds", "3", "--tools", str(tools)])
    finally:
        server.stop(grace_s=2)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip().splitlines()[-1] == (  # once seen with error=1 under load: -v says why
        "CORRUPTION sessions: 0/20 = 0.0% "
        "(leak=0 garbage=0 malformed=0 no_tool=0 wrong_arguments=0 error=0 ok=20)"), captured.out[-3000:] + captured.err[-3000:]


def test_every_session_failing_is_exit_2_after_the_tally(capsys):
    assert bisect_here(["stress", "--url", "http://127.0.0.1:9", "--model", "m", "--sessions", "3"]) == 2
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1] == (
        "CORRUPTION sessions: 0/3 = 0.0% "
        "(leak=0 garbage=0 malformed=0 no_tool=0 wrong_arguments=0 error=3 ok=0)")
    assert "every session failed, e.g. round 1: ConnectError" in captured.err


def test_no_server_and_bad_tools_are_user_errors(tmp_path):
    with pytest.raises(HeisenbisectError, match="cannot list models"):
        bisect_here(["stress", "--url", "http://127.0.0.1:9", "--sessions", "1"])
    bad = tmp_path / "tools.json"
    bad.write_text('[{"type": "function", "function": {"name": "x", "parameters": {"type": "objec"}}}]')
    with pytest.raises(HeisenbisectError, match=r"tools\[0\].function.parameters: not a JSON schema"):
        bisect_here(["stress", "--url", "http://127.0.0.1:9", "--tools", str(bad)])
    bad.write_text("[{")
    with pytest.raises(HeisenbisectError, match=r"tools.json:1:3: --tools: not JSON"):
        bisect_here(["stress", "--url", "http://127.0.0.1:9", "--tools", str(bad)])
