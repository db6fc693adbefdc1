"""The reference book keeps per request only what the comparison and the replay read (issue 37):
the same answers come back out, and an entry's size does not follow the conversation's length
nor the logprobs' per-token dicts, so `--reference` memory grows by under a kilobyte a request."""

from __future__ import annotations

import json
import math
import sys
from array import array

import pytest

from check_helpers import start_fake
from heisenbisect.checks.base import Reply
from heisenbisect.checks.reference import ReferenceSettings
from heisenbisect.checks.reference_answer import answer_of, key_of
from heisenbisect.checks.reference_book import Book
from heisenbisect.targets.openai.stress import run_stress
from heisenbisect.targets.openai.workload import StressSettings


def deep_size(node, seen=None) -> int:
    """Bytes held by ``node`` and everything it refers to (each object once): deterministic."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return 0
    seen.add(id(node))
    size = sys.getsizeof(node)
    if isinstance(node, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in node.items())
    elif isinstance(node, (list, tuple, set, frozenset)):
        size += sum(deep_size(item, seen) for item in node)
    elif not isinstance(node, (str, bytes, array, int, float)) and node is not None:
        slots = getattr(type(node), "__slots__", ())
        fields = [getattr(node, s) for s in slots] if slots else [vars(node)]
        size += sum(deep_size(f, seen) for f in fields)
    return size


def completion(text: str, gaps: list[float | None]) -> dict:
    """A completion as a server sends it with ``top_logprobs: 2``: a token every 4 characters."""
    pieces = [text[i:i + 4] for i in range(0, len(text), 4)]
    content = [{"token": piece, "logprob": -0.05, "bytes": list(piece.encode()), "top_logprobs": [
        {"token": piece, "logprob": -0.05, "bytes": list(piece.encode())},
        *([] if gap is None else [{"token": "~", "logprob": -0.05 - gap, "bytes": [126]}])]}
        for piece, gap in zip(pieces, gaps)]
    message = {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_1", "type": "function", "function": {"name": "f", "arguments": text[1:]}}]}
    return {"id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls",
                         "logprobs": {"content": content}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": len(pieces), "total_tokens": 999}}


def request(turns: int) -> dict:
    messages = [{"role": "user", "content": f"question {i} " + "x" * 400} for i in range(turns)]
    return {"model": "m", "messages": messages, "temperature": 0.0, "seed": 0, "logprobs": True,
            "top_logprobs": 2}


def test_what_goes_in_comes_back_out_as_compared_and_replayed():
    text = 'f{"expression": "(998 + 533) * 9", "x": "ünïcode"}'
    gaps = [6.0, None, 0.01, math.nan, *([6.0] * 20)][: math.ceil(len(text) / 4)]
    response = completion(text, gaps)
    reply = Reply(response["choices"][0]["message"], response)
    book = Book()
    assert book.record(key_of(request(1)), reply) and not book.record(key_of(request(1)), reply)
    kept, given = book.answer(key_of(request(1))), answer_of(response)
    assert (kept.content, kept.calls, kept.tokens) == (given.content, given.calls, given.tokens)
    assert [repr(g) for g in kept.gaps] == [repr(g) for g in given.gaps]  # None and nan kept apart
    replayed = book.replay(request(1))
    assert replayed["choices"][0]["message"] == response["choices"][0]["message"]
    assert replayed["usage"]["completion_tokens"] == len(gaps)
    assert book.answer(key_of(request(2))) is None and book.replay(request(2)) is None
    assert book.logprobs and len(book) == 1


def test_an_entry_does_not_follow_the_conversation_and_is_a_tenth_of_the_completion():
    response = completion('f{"expression": "(998 + 533) * 9"}', [6.0] * 9)
    reply = Reply(response["choices"][0]["message"], response)
    sizes = []
    for turns in (1, 30):
        book = Book()
        book.record(key_of(request(turns)), reply)
        sizes.append(deep_size(book))
    before = len(json.dumps(request(30))) + deep_size(response)  # the request's key, the completion
    assert sizes[0] == sizes[1] < before / 10, (sizes, before)


@pytest.mark.slow
def test_a_real_reference_pass_keeps_under_a_kilobyte_a_request():
    """Against the fake server (tool calls, top-2 logprobs, two rounds): the whole completions
    and request keys took 16 650 bytes a request; the book takes under 1 024, at 8 or 64 sessions."""
    server = start_fake()
    try:
        per_request = []
        for sessions in (8, 64):
            book = Book()
            settings = StressSettings(sessions=sessions, rounds=2, request_timeout=20.0,
                                      checks={"reference": ReferenceSettings(enabled=True)})
            result = run_stress(server.url, settings, reference_book=book)
            metrics = result.metrics()
            assert len(book) == metrics["reference_requests"] and metrics["reference_logprobs"]
            per_request.append(deep_size(book) / len(book))
    finally:
        server.stop()
    assert max(per_request) < 1024, per_request
