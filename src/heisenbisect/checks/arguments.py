"""``wrong_arguments``: a well-formed tool call that carries values the prompt did not ask for.

A batch or prefix-cache bug can hand one request another request's values: the call is valid
JSON, fits its schema and answers another session's question, so no format check sees it. Each
built-in prompt says what it wants (city and unit, query and count, path and line, the
expression; `arguments_asked`), and a user's own tool may list prompts with the values they ask
(``checks.arguments.prompts``). A round's call to the asked tool whose value for an asked
argument is another value (`arguments_compare`: read generously) is corrupted; the asked and the
received values go into the session's evidence.

Silent where it cannot know: a prompt it has no expectation for, an argument the call left out
(a missing required one is `malformed`'s), a call to a tool other than the one asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from heisenbisect.checks.arguments_asked import Asked, asked_builtin
from heisenbisect.checks.arguments_compare import same_value
from heisenbisect.checks.base import Check, CheckSettings, Finding, Reply, SpecSection, State
from heisenbisect.checks.base import tool_calls as calls_of


class AskedPrompt(SpecSection):
    """A user turn for one of the spec's tools and the argument values it asks for."""

    tool: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(min_length=1)


class ArgumentsSettings(CheckSettings):
    """``checks.arguments``: on by default (it reads what the workload already asks)."""

    prompts: list[AskedPrompt] = Field(default_factory=list)


class ArgumentsCheck(Check):
    name = "arguments"
    classes = {"wrong_arguments": True}
    settings_model = ArgumentsSettings

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        asked = asked_by(request, state.settings)
        calls = calls_of(reply.message)
        if asked is None or not isinstance(calls, list):
            return None
        received = [a for a in (_arguments_of(c, asked.tool) for c in calls) if a is not None]
        mismatches = [_mismatch(asked, arguments) for arguments in received]
        mismatch = mismatches[0] if mismatches else None
        if mismatch is None or None in mismatches:
            return None  # no call to the asked tool, or one of them says what was asked
        said = ", ".join(
            f"{key}: asked {asked.values[key]!r}, got {value!r}" for key, value in mismatch.items()
        )
        return Finding(
            "wrong_arguments",
            reply.said(f"{asked.tool} called with other values than asked ({said})"),
            evidence={
                "asked": {"tool": asked.tool, "arguments": dict(asked.values)},
                "received": received[0],
            },
        )


def asked_by(request: Mapping[str, Any], settings: CheckSettings) -> Asked | None:
    """What the request's latest user turn asks, if this check knows (a request without tools
    asks for none)."""
    if not request.get("tools"):
        return None
    text = _last_user_text(request.get("messages"))
    if text is None:
        return None
    for given in getattr(settings, "prompts", ()):
        if given.prompt.strip() == text.strip():
            return Asked(given.tool, given.arguments)
    return asked_builtin(text)


def _last_user_text(messages: Any) -> str | None:
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else None
    return None


def _arguments_of(call: Any, tool: str) -> dict[str, Any] | None:
    """A call's arguments as an object when it calls ``tool``; None for anything else (a call
    that is not well-formed is `malformed`'s)."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or function.get("name") != tool:
        return None
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    return arguments if isinstance(arguments, dict) else None


def _mismatch(asked: Asked, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
    """The asked arguments the call gave another value for; None when none."""
    wrong = {
        key: arguments[key]
        for key, value in asked.values.items()
        if key in arguments and not same_value(value, arguments[key])
    }
    return wrong or None


CHECK = ArgumentsCheck()
