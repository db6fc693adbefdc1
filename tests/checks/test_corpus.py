"""The default checks on realistic chat-completion messages, clean and corrupted, per class."""

from __future__ import annotations

import json

import pytest

from heisenbisect.checks import registry
from heisenbisect.checks.base import Finding, Reply, State
from heisenbisect.checks.leak import find_leak
from heisenbisect.targets.openai.tools import ToolSet

REQUEST = {"tools": ToolSet().specs}


def classify(message: dict) -> Finding | None:
    """The first finding of the checks on by default, as a session's round gets it."""
    reply = Reply(message, {"choices": [{"message": message}]})
    for check, settings in registry.active({}):
        finding = check.inspect(REQUEST, reply, State(settings))
        if finding is not None:
            return finding
    return None


def call(name: str, arguments, call_id: str = "call_0a1b2c3d4e5f") -> dict:
    return {"id": call_id, "index": 0, "type": "function", "function": {"name": name, "arguments": arguments}}


def message(content=None, calls=None, reasoning=None) -> dict:
    out = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls is not None:
        out["tool_calls"] = calls
    return out


CLEAN = {
    "bare tool call": message(None, [call("get_weather", '{"city": "Paris", "unit": "celsius"}')]),
    "text before the call": message("I'll check the current weather in Tokyo.", [call("get_weather", '{"city": "Tokyo"}')]),
    "arguments as an object": message("", [call("search_docs", {"query": "CUDA graph capture", "max_results": 3})]),
    "unicode arguments": message(None, [call("get_weather", '{"city": "東京"}')]),
    "two parallel calls": message(None, [
        call("get_weather", '{"city": "Oslo"}', "call_1"),
        call("read_file", '{"path": "docs/deploy.md", "start_line": 12}', "call_2"),
    ]),
    "reasoning then a call": message(None, [call("calculate", '{"expression": "(12 + 30) * 4"}')],
                                     reasoning="The user wants an exact product; I should use the calculator."),
    "markdown table and code in text": message(
        "| city | temp |\n|---|---|\n| Lima | 19 |\n```python\nx = a | b\n```", [call("get_weather", '{"city": "Lima"}')]),
    "calculator call": message(None, [call("calculate", '{"expression": "1+1"}')]),
}

LEAK = {
    # the parser gave up: DeepSeek V3 markup ends up in content, no tool_calls
    "v3 markup in content": message(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
        '{"city": "Paris"}\n```<｜tool▁call▁end｜>'),
    "v3.1 markup in content": message(
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Lagos"}<｜tool▁call▁end｜>'),
    "v3.2 DSML in content": message(
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Quito</｜DSML｜parameter>\n'),
    "v4 DSML in content": message(
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="read_file">\n{"path": "Makefile"}\n</｜DSML｜invoke>'),
    "end of sentence after a good call": message("Done.<｜end▁of▁sentence｜>", [call("get_weather", '{"city": "Cairo"}')]),
    "special token inside the arguments": message(
        None, [call("get_weather", '{"city": "Perth<｜tool▁call▁end｜><｜tool▁calls▁end｜>"}')]),
    "token in the function name": message(None, [call("get_weather<｜tool▁sep｜>", '{"city": "Oslo"}')]),
    "a split token's fragment": message('I will call it now: tool▁sep get_weather {"city": "Hanoi"}'),
    "chatml special token": message("Here you go<|im_end|>\n<|im_start|>assistant", [call("get_weather", '{"city": "Lima"}')]),
    "leak in reasoning": message(None, [call("get_weather", '{"city": "Oslo"}')],
                                 reasoning="Let me call<｜tool▁calls▁begin｜>"),
}

MALFORMED = {
    "truncated json": message(None, [call("get_weather", '{"city": "Par')]),
    "json cut after a key": message(None, [call("search_docs", '{"query": "kv cache", "max_res')]),
    "arguments a json string": message(None, [call("get_weather", '"Paris"')]),
    "double-encoded arguments": message(None, [call("get_weather", json.dumps(json.dumps({"city": "Paris"})))]),
    "unknown function": message(None, [call("get_weathe", '{"city": "Paris"}')]),
    "wrong type": message(None, [call("get_weather", '{"city": 12345}')]),
    "enum violated": message(None, [call("get_weather", '{"city": "Oslo", "unit": "kelvin"}')]),
    "required missing": message(None, [call("read_file", '{"start_line": 3}')]),
    "extra property": message(None, [call("calculate", '{"expression": "2*3", "precision": 4}')]),
    "second call bad": message(None, [call("get_weather", '{"city": "Oslo"}'), call("read_file", "{}")]),
}

NO_TOOL = {
    "answered from memory": message("The weather in Paris is sunny and 21 °C."),
    "empty content": message(""),
    "null everything": message(None),
    "empty tool list": message("Let me look into that.", []),
}


@pytest.mark.parametrize("expected, corpus", [
    ("ok", CLEAN),
    ("leak", LEAK),
    ("malformed", MALFORMED),
    ("no_tool", NO_TOOL),
], ids=["ok", "leak", "malformed", "no_tool"])
def test_corpus(expected, corpus):
    found = {name: classify(msg) for name, msg in corpus.items()}
    wrong = {name: f.kind if f else "ok" for name, f in found.items() if (f.kind if f else "ok") != expected}
    assert not wrong, f"expected {expected}, got {wrong}"


def test_a_leak_outranks_the_missing_tool_call_it_caused():
    finding = classify(LEAK["v3 markup in content"])
    assert finding is not None and finding.kind == "leak"
    assert "tool▁calls▁begin" in finding.detail


def test_find_leak_ignores_ordinary_text():
    for text in ("a | b", "x <= y and y >= z", "<div>|</div>", "use `a|b` in regex", "▁ alone", "≤｜≥"):
        assert find_leak(text) is None, text
