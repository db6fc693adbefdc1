"""The reference check against the fake server's real replies: each fault mode found and put in
its layer, and silence on a correct server under load (the negative control of each)."""

from __future__ import annotations

import os
import threading

import pytest

from bisect_cli import bisect, bisect_here
from check_helpers import FAKE
from heisenbisect.checks.reference import ReferenceSettings
from heisenbisect.checks.reference_answer import Answer, compare, request_key
from heisenbisect.checks.reference_book import Book
from heisenbisect.checks.reference_layers import SessionEvidence, findings, layer_of
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.openai.stress import run_stress
from heisenbisect.targets.openai.workload import StressSettings
from heisenbisect.targets.server.process import Readiness, ServerProcess


def start(*args: str) -> ServerProcess:
    """The fake, slow enough (50 ms a request) that eight sessions share its batches."""
    argv = ["--tool-call-parser", "deepseekv3", "--fake-latency", "0.05",
            "--fake-startup-seconds", "0.05", *args]
    server = ServerProcess.start(SGLANG, FAKE, "deepseek-ai/DeepSeek-V3", argv, dict(os.environ))
    assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
    return server


def stress(server: ServerProcess, logprobs: bool = True, stream: str = "both", book=None, **kw):
    checks = {"reference": ReferenceSettings(enabled=True, logprobs=logprobs)}
    settings = StressSettings(sessions=8, rounds=2, request_timeout=20.0, stream=stream,
                              checks=checks, **kw)
    return run_stress(server.url, settings, reference_book=book)


@pytest.fixture(scope="module")
def clean_server():
    server = start()
    yield server
    server.stop(grace_s=2)


# ------------------------------------------------------------------ pure parts


def test_a_divergence_at_a_near_tie_is_told_from_one_that_is_not():
    alone = Answer("", (("f", '{"a": 1}'),), ("f", "(", "1", ")"), (5.0, 5.0, 0.01, 5.0))
    loaded = Answer("", (("f", '{"a": 2}'),), ("f", "(", "2", ")"), None)
    divergence = compare(alone, loaded)
    assert (divergence.position, divergence.gap, divergence.same_tokens) == (2, 0.01, False)
    assert divergence.near_tie(0.5) and not divergence.near_tie(0.001)
    parsed = compare(alone, Answer("", (("f", '{"a": 3}'),), alone.tokens, None))
    assert parsed.same_tokens, "the same tokens, another parsed answer: the parser"
    plain = compare(Answer("abc", ()), Answer("abd", ()))
    assert (plain.position, plain.logprobs, plain.near_tie(10.0)) == (2, False, False)


def test_the_request_key_ignores_only_how_the_answer_is_delivered():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    assert request_key(body) == request_key(streamed)
    assert request_key(body) != request_key({**body, "seed": 1})


@pytest.mark.parametrize(("evidence", "layer"), [
    (SessionEvidence(True, True, False, None), "parser"),
    (SessionEvidence(False, False, True, True), "cache"),
    (SessionEvidence(False, False, False, True), "numerics"),
    (SessionEvidence(False, False, False, None), "unknown"),   # no logprobs: cannot tell
    (SessionEvidence(False, False, None, True), "unknown"),    # not asked again: cannot tell
])
def test_each_layer_needs_its_own_evidence(evidence, layer):
    assert layer_of(evidence) == layer


# ------------------------------------------------------------------ over HTTP


@pytest.mark.parametrize("logprobs", [True, False])
def test_silent_on_a_correct_server_under_load(clean_server, logprobs):
    result = stress(clean_server, logprobs=logprobs)
    assert result.counts() == {"ok": 8}, [s.detail for s in result.kept]
    metrics = result.metrics()
    assert metrics["reference_compared"] == 16, "every round of every session was compared"
    assert metrics["reference_near_ties"] == 0 and metrics["reference_logprobs"] == logprobs
    assert "nothing to attribute" in " ".join(findings(metrics))


def test_load_only_divergence_is_numerics_with_logprobs():
    server = start("--fake-diverge-rate", "1")
    try:
        result = stress(server)
    finally:
        server.stop(grace_s=2)
    metrics = result.metrics()
    assert result.counts()["diverged"] >= 4, [s.detail for s in result.kept]
    assert metrics["reference_layer_numerics"] == metrics["reference_warm_asked"] >= 4
    assert metrics["reference_layer_cache"] == metrics["reference_layer_parser"] == 0
    assert "top-2 gap 6.000 >= margin 0.5" in next(
        s.detail for s in result.kept if s.kind == "diverged")
    assert any(line.startswith("numerics: ") for line in findings(metrics))


def test_load_only_divergence_at_near_ties_is_set_aside():
    server = start("--fake-diverge-rate", "1", "--fake-tie-gap", "0.01")
    try:
        result = stress(server)
    finally:
        server.stop(grace_s=2)
    assert result.corrupted == 0, [s.detail for s in result.kept]
    assert result.counts()["near_tie"] >= 4
    assert "near_tie=" in result.tally_line() and "diverged=" not in result.tally_line()
    text = " ".join(findings(result.metrics()))
    assert f"{result.counts()['near_tie']} divergences where the reference's top-1" in text


def test_load_only_divergence_without_logprobs_cannot_be_attributed():
    server = start("--fake-diverge-rate", "1")
    try:
        result = stress(server, logprobs=False)
    finally:
        server.stop(grace_s=2)
    diverged = [s for s in result.kept if s.kind == "diverged"]
    assert len(diverged) >= 4 and "a near-tie cannot be told apart" in diverged[0].detail
    text = " ".join(findings(result.metrics()))
    assert "cannot tell" in text and "they cannot be told apart" in text
    assert result.metrics()["reference_layer_numerics"] == 0


@pytest.mark.parametrize("logprobs", [True, False])
def test_streamed_only_corruption_is_the_parser(logprobs):
    server = start("--fake-streamparse-rate", "1")
    try:
        result = stress(server, logprobs=logprobs)
    finally:
        server.stop(grace_s=2)
    diverged = [s for s in result.kept if s.kind == "diverged"]
    assert diverged and all(s.stream for s in diverged), [s.detail for s in result.kept]
    assert result.counts()["diverged"] == 4, "every streamed session, no other"
    text = " ".join(findings(result.metrics()))
    if logprobs:
        assert result.metrics()["reference_layer_parser"] == 4
        assert "the same tokens as the answer alone, parsed differently" in diverged[0].detail
    else:
        assert "parser, likely: every diverged session streamed (4), none of 4" in text


def test_warm_prefix_only_divergence_is_the_cache():
    server = start("--fake-warmcache-rate", "1")
    try:
        result = stress(server, stream="false")
    finally:
        server.stop(grace_s=2)
    metrics = result.metrics()
    assert result.counts()["diverged"] == 8, [s.detail for s in result.kept]
    assert metrics["reference_layer_cache"] == metrics["reference_warm_asked"] == 8
    assert any(line.startswith("scheduler or cache: 8 sessions") for line in findings(metrics))


def test_the_reference_pass_is_cached_per_launch(clean_server):
    book = Book()
    first = stress(clean_server, book=book).metrics()
    again = stress(clean_server, book=book).metrics()
    assert first["reference_requests"] == 16 and first["reference_cached"] == 0
    assert again["reference_requests"] == 0 and again["reference_cached"] == 16
    assert again["reference_compared"] == 16


def test_bisect_stress_reference_prints_the_layers(capsys):
    server = start("--fake-warmcache-rate", "1")
    try:
        code = bisect_here(["stress", "--url", server.url, "--sessions", "4", "--rounds", "1",
                            "--reference"])
    finally:
        server.stop(grace_s=2)
    out = capsys.readouterr().out
    assert code == 1, out
    assert "reference pass: 4 requests answered alone" in out
    assert "scheduler or cache: 4 sessions diverged again" in out
    assert "diverged=4" in out.splitlines()[-1]


def test_a_negative_margin_in_a_spec_is_one_line_naming_the_field(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("""\
study: s
target:
  server:
    launch: [serve, "{model}", --port, "{port}"]
    model: m
    workload:
      checks:
        reference: {enabled: true, margin: -1}
factors: [{name: f, kind: env, var: F, levels: ["0", "1"]}]
""")
    done = bisect("validate", str(spec))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{spec}:8:" in done.stderr and "checks.reference.margin" in done.stderr, done.stderr
