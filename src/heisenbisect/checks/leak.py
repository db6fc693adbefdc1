"""``leak``: tool-call markup or special tokens in the text of a reply.

DeepSeek V3/V3.1 tokens such as ``<｜tool▁calls▁begin｜>``, V3.2/V4 DSML tags such as
``<｜DSML｜invoke``, any ``<|...|>``: this usually means the server's tool-call parser gave up and
returned the raw output. Looked for in ``content`` and ``reasoning_content``, then in each tool
call's name and arguments (when every call is well-formed enough to have them: the rest is
`malformed`'s). A streamed reply is read as the client adds it up, so a token split across
deltas is found, and said to be split.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from heisenbisect.checks.base import Check, Finding, Reply, State, text_of, tool_calls

LEAK_PATTERNS = (
    re.compile(r"<｜[^｜<>\n]{1,48}｜>"),  # DeepSeek specials: <｜tool▁sep｜>, <｜User｜>
    re.compile(r"</?｜DSML｜"),  # DeepSeek V3.2 / V4 DSML tags
    re.compile(r"<\|[^|<>\n]{1,48}\|>"),  # ASCII specials: <|im_start|>, <|tool_calls_begin|>
    # a special token cut apart by detokenization still carries SentencePiece's "▁"
    re.compile(r"(?:tool|calls?|end|begin|of)▁(?:calls?|sep|begin|end|of|sentence|outputs?)"),
)
TEXT_FIELDS = ("content", "reasoning_content")


def find_leak(text: str | None) -> str | None:
    """The first leaked special token or markup fragment in ``text``, if any."""
    if not text:
        return None
    for pattern in LEAK_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


class LeakCheck(Check):
    name = "leak"
    classes = {"leak": True}

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        message = reply.message
        for field in TEXT_FIELDS:
            leaked = find_leak(text_of(message.get(field)))
            if leaked:
                split = _split(reply, field, leaked)
                return Finding("leak", reply.said(f"{field} contains {leaked!r}{split}"))
        calls = tool_calls(message)
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                return None  # a call without its parts is malformed, and that check says so
            for part in ("name", "arguments"):
                leaked = find_leak(text_of(function.get(part)))
                if leaked:
                    return Finding("leak", reply.said(f"tool call {part} contains {leaked!r}"))
        return None


def _split(reply: Reply, field: str, leaked: str) -> str:
    """`` (split across deltas)`` when no single streamed delta holds the whole token."""
    if reply.deltas is None or any(leaked in text_of(d.get(field)) for d in reply.deltas):
        return ""
    return " (split across deltas)"


CHECK = LeakCheck()
