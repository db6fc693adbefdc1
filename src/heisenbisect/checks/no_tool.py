"""``no_tool``: an answer without a tool call, where every tool round of the workload asks for one
(a plain question, sent without tools, asks for none)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heisenbisect.checks.base import Check, Finding, Reply, State, text_of, tool_calls


class NoToolCheck(Check):
    name = "no_tool"
    classes = {"no_tool": True}

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        if tool_calls(reply.message) or not request.get("tools"):
            return None  # a call, or a question that asked for none (`answers`)
        content = text_of(reply.message.get("content"))
        return Finding("no_tool", reply.said(f"answered without a tool call: {content!r:.80}"))


CHECK = NoToolCheck()
