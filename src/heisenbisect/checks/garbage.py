"""``garbage``: text no working model writes, in a reply's plain text.

A broken attention path or a kernel reading the wrong memory emits fluent-looking garbage: the
Unicode replacement character (bytes that do not decode, a token split inside a character),
control characters, or one token or n-gram repeated until ``max_tokens`` runs out. Looked for in
``content`` and ``reasoning_content``; tool-call arguments are the other checks'.

False-alarm guards: tab, newline and carriage return are not control characters here; only a
run of *consecutive* repeats counts, at least ``max_repeats`` of them spanning at least three
times as many characters, and only of a unit with a letter or digit in it, so a markdown rule
(``|---|---|``), an indented code block, a number such as 1000000000000 or a list of a few
equal items passes. The first 64 Ki characters of each field are scanned.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from heisenbisect.checks.base import Check, CheckSettings, Finding, Reply, State, text_of

TEXT_FIELDS = ("content", "reasoning_content")
ALLOWED_CONTROLS = frozenset("\t\n\r")
MAX_UNIT_CHARS = 40  # an n-gram of a few words; longer repeats are left alone
MAX_SCANNED_CHARS = 1 << 16  # a reply of 512 tokens is ~2 KB; the scan's time stays bounded


class GarbageSettings(CheckSettings):
    """``checks.garbage``: on by default; ``max_repeats`` is the repetition bound."""

    max_repeats: int = Field(12, ge=3)


class GarbageCheck(Check):
    name = "garbage"
    classes = {"garbage": True}
    settings_model = GarbageSettings

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        bound = getattr(state.settings, "max_repeats", GarbageSettings().max_repeats)
        for field in TEXT_FIELDS:
            problem = garbage_in(text_of(reply.message.get(field)), bound)
            if problem:
                return Finding("garbage", reply.said(f"{field}: {problem}"))
        return None


def garbage_in(text: str, max_repeats: int) -> str | None:
    """Why ``text`` is garbage (the first sign found), or None."""
    text = text[:MAX_SCANNED_CHARS]
    for position, char in enumerate(text):
        if char == "\ufffd":
            return f"replacement character U+FFFD at {position}: {_around(text, position)!r}"
        category = unicodedata.category(char)
        if (category == "Cc" and char not in ALLOWED_CONTROLS) or category == "Cs":
            return f"control character U+{ord(char):04X} at {position}: {_around(text, position)!r}"
    repeated = _repeat(text, max_repeats)
    if repeated:
        unit, times, position = repeated
        return f"{unit!r} repeated {times} times in a row at {position}"
    return None


def _repeat(text: str, max_repeats: int) -> tuple[str, int, int] | None:
    """The first unit (a character to a few words) repeated ``max_repeats`` times or more in a
    row over ``3 * max_repeats`` characters or more, holding a letter or digit: (unit, times,
    where)."""
    pattern = re.compile(rf"(.{{1,{MAX_UNIT_CHARS}}}?)\1{{{max_repeats - 1},}}", re.DOTALL)
    for match in pattern.finditer(text):
        unit = match.group(1)
        if any(c.isalnum() for c in unit) and len(match.group(0)) >= 3 * max_repeats:
            return unit, len(match.group(0)) // len(unit), match.start()
    return None


def _around(text: str, position: int) -> str:
    return text[max(0, position - 20) : position + 20]


CHECK = GarbageCheck()
