"""`garbage` on realistic text: replacement and control characters and runaway repetition found,
ordinary prose, markdown, code and numbers let pass."""

from __future__ import annotations

import pytest

from heisenbisect.checks.base import Reply, State
from heisenbisect.checks.garbage import CHECK, GarbageSettings, garbage_in

CLEAN = {
    "prose": "I'll check the current weather in Tokyo for you.",
    "markdown table": "| city | temp |\n|----------|----------|\n| Lima | 19 |\n" + "|---" * 30,
    "code block": "```python\ndef f(x):\n        return x\n```\n" + " " * 80 + "\t\r\n",
    "a big number": "The total is 1000000000000 and 0.0000000000001 is small.",
    "a short list of equals": "yes, yes, yes, yes, and yes.",
    "unicode": "Quito: 東京 ≠ Tōkyō, emoji 👍🏽 with a joiner 👩‍💻.",
    "a laugh": "ha ha ha ha!",
    "dots": "Loading" + "." * 60,
}

GARBAGE = {
    "replacement characters": ("Let me check that for you\ufffd\ufffd the resul\ufffd", "U+FFFD"),
    "a NUL byte": ("Checking now.\x00 one moment", "U+0000"),
    "an escape sequence": ("done \x1b[0m", "U+001B"),
    "a word forever": ("I will call the tool " + "the tool " * 40, "repeated 41 times"),
    "one token": ("Answer: " + "Paris" * 20, "'Paris' repeated"),
    "a character run": ("x" * 60, "'x' repeated"),
    "CJK loop": ("答案是" + "的的" * 30, "repeated"),
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_ordinary_text_passes(name):
    assert garbage_in(CLEAN[name], 12) is None


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_garbage_is_found_and_said(name):
    text, said = GARBAGE[name]
    problem = garbage_in(text, 12)
    assert problem is not None and said in problem


def test_the_bound_is_a_setting_and_reasoning_is_read_too():
    text = "ok " + "go " * 8
    assert garbage_in(text, 12) is None and garbage_in(text, 5) is not None
    message = {"role": "assistant", "content": None, "reasoning_content": "think\ufffd"}
    finding = CHECK.inspect({}, Reply(message, {}), State(GarbageSettings()))
    assert finding is not None and finding.kind == "garbage" and finding.detail.startswith("reasoning_content")


def test_a_huge_reply_is_scanned_only_at_its_start():
    """Past 64 Ki characters nothing is read (the scan's time stays bounded)."""
    assert garbage_in("abcdefghij " * 2_000_000, 12) is not None
    assert garbage_in("".join(chr(0x4E00 + i % 2000) for i in range(1 << 20)) + "\ufffd", 12) is None
