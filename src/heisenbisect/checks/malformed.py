"""``malformed``: tool calls an agent could not run.

Arguments that are not a JSON object or do not fit the tool's schema, a function the request did
not offer, ``tool_calls`` that is not a list of calls; streamed, also deltas the OpenAI client
cannot add up and a call whose ``id`` or ``name`` a later delta sends again (the client
concatenates them, so it would call a function the model never named). The schemas are the
request's own ``tools``; their validators are built once per run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from heisenbisect.checks.base import Check, Finding, Reply, State, tool_calls


class MalformedCheck(Check):
    name = "malformed"
    classes = {"malformed": True}

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        if reply.unmerged:
            return Finding("malformed", reply.said(reply.unmerged), excerpt=reply.unmerged)
        problem = tool_call_changes(reply.deltas or ()) or self._call_problem(request, reply, state)
        return Finding("malformed", reply.said(problem)) if problem else None

    def _call_problem(self, request: Mapping[str, Any], reply: Reply, state: State) -> str | None:
        calls = tool_calls(reply.message)
        if not isinstance(calls, list):
            return f"tool_calls is not a list: {calls!r:.80}"
        for call in calls:
            if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
                return f"tool call without a function: {call!r:.80}"
        validators = _validators(request, state)
        for call in calls:
            problem = function_problem(call["function"], validators)
            if problem:
                return problem
        return None


def function_problem(function: Mapping[str, Any], validators: Mapping[str, Any]) -> str | None:
    """Why one tool call's function part is malformed, or None when it is well-formed."""
    name = function.get("name")
    if name not in validators:
        return f"unknown function {name!r}"
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"{name}: arguments are not JSON ({exc.msg}): {function.get('arguments')!r:.80}"
    if not isinstance(arguments, dict):
        return f"{name}: arguments are not a JSON object: {arguments!r:.80}"
    errors = [e.message for e in validators[str(name)].iter_errors(arguments)]
    if errors:
        return f"{name}: arguments do not fit the schema: {errors[0]}"
    return None


def tool_call_changes(deltas: Sequence[Mapping[str, Any]]) -> str | None:
    """A tool call whose ``id`` or ``name`` is sent again, changed or not, in a later delta."""
    first: dict[tuple[Any, str], tuple[int, str]] = {}
    for number, delta in enumerate(deltas, start=1):
        for call in delta.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            index = call.get("index")
            function = call["function"] if isinstance(call.get("function"), dict) else {}
            for part, value in (("id", call.get("id")), ("name", function.get("name"))):
                if not value:
                    continue
                if (index, part) not in first:
                    first[(index, part)] = (number, value)
                    continue
                was_at, was = first[(index, part)]
                verb = "changed" if value != was else "sent again"
                return (
                    f"tool call {index}: {part} {verb} between deltas {was_at} and {number}: "
                    f"{was!r} then {value!r}"
                )
    return None


def _validators(request: Mapping[str, Any], state: State) -> Mapping[str, Any]:
    """A JSON-schema validator per tool the request offers, kept for the rest of the run."""
    from jsonschema import Draft202012Validator  # the stress client's extra; only it runs checks

    tools = request.get("tools") or []
    key = json.dumps(tools, sort_keys=True)
    if state.trial.get("tools") != key:
        state.trial["tools"] = key
        state.trial["validators"] = {
            t["function"]["name"]: Draft202012Validator(
                t["function"].get("parameters", {"type": "object", "properties": {}})
            )
            for t in tools
        }
    return state.trial["validators"]


CHECK = MalformedCheck()
