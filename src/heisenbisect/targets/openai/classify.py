"""Classify a chat completion, and so a session, as ok or as one kind of corruption.

The kinds, in the order a response is checked:
- ``error``: the request failed (HTTP error, timeout, a body that is not a completion);
- ``leak``: tool-call markup or special tokens in the text (DeepSeek V3/V3.1 tokens such as
  ``<｜tool▁calls▁begin｜>``, V3.2/V4 DSML tags such as ``<｜DSML｜invoke``, any ``<|...|>``);
  this usually means the server's tool-call parser gave up and returned the raw output;
- ``malformed``: a tool call whose arguments are not a JSON object, name an unknown function,
  or do not fit the tool's schema;
- ``no_tool``: no tool call where the round asked for one;
- ``bad_logprobs``: (when the workload asks for logprobs) a NaN or infinite logprob (`side_signals`).
A session takes the kind of its first bad response and stops there.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from heisenbisect.targets.openai.streaming import StreamedCompletion, tool_call_changes
from heisenbisect.targets.openai.tools import ToolSet


class SessionClass(str, enum.Enum):
    OK = "ok"
    LEAK = "leak"
    MALFORMED = "malformed"
    NO_TOOL = "no_tool"
    BAD_LOGPROBS = "bad_logprobs"
    ERROR = "error"


CORRUPTED = frozenset({SessionClass.LEAK, SessionClass.MALFORMED, SessionClass.NO_TOOL, SessionClass.BAD_LOGPROBS})

LEAK_PATTERNS = (
    re.compile(r"<｜[^｜<>\n]{1,48}｜>"),  # DeepSeek specials: <｜tool▁sep｜>, <｜end▁of▁sentence｜>, <｜User｜>
    re.compile(r"</?｜DSML｜"),  # DeepSeek V3.2 / V4 DSML tags
    re.compile(r"<\|[^|<>\n]{1,48}\|>"),  # ASCII specials: <|im_start|>, <|tool_calls_section_begin|>
    # a special token cut apart by detokenization still carries SentencePiece's "▁"
    re.compile(r"(?:tool|calls?|end|begin|of)▁(?:calls?|sep|begin|end|of|sentence|outputs?)"),
)


@dataclass(frozen=True)
class Finding:
    """What one response (or a whole session) amounts to; ``detail`` says why, briefly."""

    kind: SessionClass
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.kind is SessionClass.OK


OK = Finding(SessionClass.OK)


def find_leak(text: str | None) -> str | None:
    """The first leaked special token or markup fragment in ``text``, if any."""
    if not text:
        return None
    for pattern in LEAK_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def classify_message(message: Mapping[str, Any], tools: ToolSet, tool_required: bool) -> Finding:
    """Classify one assistant message (``choices[0].message`` of a chat completion)."""
    calls = message.get("tool_calls") or []
    for field in ("content", "reasoning_content"):
        leaked = find_leak(_text(message.get(field)))
        if leaked:
            return Finding(SessionClass.LEAK, f"{field} contains {leaked!r}")
    if not isinstance(calls, list):
        return Finding(SessionClass.MALFORMED, f"tool_calls is not a list: {calls!r:.80}")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            return Finding(SessionClass.MALFORMED, f"tool call without a function: {call!r:.80}")
        for part in ("name", "arguments"):
            leaked = find_leak(_text(function.get(part)))
            if leaked:
                return Finding(SessionClass.LEAK, f"tool call {part} contains {leaked!r}")
    for call in calls:
        problem = tool_call_problem(call["function"], tools)
        if problem:
            return Finding(SessionClass.MALFORMED, problem)
    if tool_required and not calls:
        return Finding(SessionClass.NO_TOOL, f"answered without a tool call: {_text(message.get('content'))!r:.80}")
    return OK


def classify_stream(stream: StreamedCompletion, tools: ToolSet, tool_required: bool) -> Finding:
    """Classify a streamed response from its raw deltas and from the message they add up to.

    The assembled message catches a special token split across deltas and arguments that
    never parse; the raw deltas catch a call whose id or name is sent again (the client
    concatenates them, so it would call a function the model never named).
    """
    deltas = stream.deltas()
    message = stream.message
    for field in ("content", "reasoning_content"):
        leaked = find_leak(_text(message.get(field)))
        if leaked:
            whole = any(leaked in _text(d.get(field)) for d in deltas)
            where = "" if whole else " (split across deltas)"
            return Finding(SessionClass.LEAK, f"streamed {field} contains {leaked!r}{where}")
    changed = tool_call_changes(deltas)
    if changed:
        return Finding(SessionClass.MALFORMED, f"streamed {changed}")
    finding = classify_message(message, tools, tool_required)
    if finding.ok:
        return finding
    return Finding(finding.kind, f"streamed {finding.detail}")


def tool_call_problem(function: Mapping[str, Any], tools: ToolSet) -> str | None:
    """Why one tool call's function part is malformed, or None when it is well-formed."""
    name = function.get("name")
    if name not in tools.tools:
        return f"unknown function {name!r}"
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"{name}: arguments are not JSON ({exc.msg}): {function.get('arguments')!r:.80}"
    if not isinstance(arguments, dict):
        return f"{name}: arguments are not a JSON object: {arguments!r:.80}"
    errors = tools.schema_errors(name, arguments)
    if errors:
        return f"{name}: arguments do not fit the schema: {errors[0]}"
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
