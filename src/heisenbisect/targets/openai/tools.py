"""The tools a stress session offers the model, the prompts that require them, and their results.

A session's rounds each ask for one specific tool in plain words, so a round without a
tool call is a `no_tool` failure, not a model's judgement call. Results are fake but
deterministic, so a rerun feeds the model the same conversation.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heisenbisect.checks.arguments_asked import BUILTIN_PROMPTS
from heisenbisect.errors import HeisenbisectError

try:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
except ImportError:  # an optional extra
    raise HeisenbisectError(
        "the server target and `bisect stress` need jsonschema: pip install 'heisenbisect[serve]'"
    ) from None

CITIES = ("Paris", "Tokyo", "Lagos", "Lima", "Oslo", "Hanoi", "Denver", "Cairo", "Perth", "Quito")
TOPICS = (
    "CUDA graph capture",
    "KV cache eviction",
    "tensor parallel all-reduce",
    "speculative decoding",
)
FILES = ("README.md", "src/main.py", "config/serving.yaml", "docs/deploy.md", "Makefile")

BUILTIN_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_docs",
            "description": "Search the engineering documentation and return the best matching passages.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file from the repository.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "start_line": {"type": "integer", "minimum": 1},
                },
                "required": ["path"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calculate",
            "description": "Evaluate an arithmetic expression exactly.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
                "additionalProperties": False,
            },
        },
    },
)

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant with tools. When the user asks you to use a tool, "
    "call it with correct JSON arguments instead of answering from memory."
)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    schema: Mapping[str, Any]
    spec: Mapping[str, Any]  # the OpenAI tool object sent to the server


class ToolSet:
    """A validated set of OpenAI function tools (the `malformed` check validates the arguments)."""

    def __init__(
        self,
        tools: Sequence[Mapping[str, Any]] | None = None,
        prompts: Sequence[tuple[str, str]] = (),
    ):
        """``prompts``: (tool, user turn) pairs asked for that tool instead of the built-in
        prompt (``checks.arguments.prompts``, which also say what each asks)."""
        self.specs = [dict(t) for t in (tools if tools is not None else BUILTIN_TOOLS)]
        if not self.specs:
            raise HeisenbisectError(
                "workload.tools: give at least one tool, or leave it out for the built-in set"
            )
        self.tools: dict[str, Tool] = {}
        for i, spec in enumerate(self.specs):
            tool = _parse_tool(spec, i)
            if tool.name in self.tools:
                raise HeisenbisectError(
                    f"workload.tools[{i}].function.name: {tool.name!r} is used twice"
                )
            self.tools[tool.name] = tool
        self.asked: dict[str, list[str]] = {}
        for i, (name, text) in enumerate(prompts):
            if name not in self.tools:
                raise HeisenbisectError(
                    f"workload.checks.arguments.prompts[{i}].tool: {name!r} is not one of the "
                    f"workload's tools ({', '.join(self.tools)})"
                )
            self.asked.setdefault(name, []).append(text)

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def prompt(self, rng: random.Random) -> tuple[str, str]:
        """A user turn that requires one tool; returns (tool name, text)."""
        name = rng.choice(self.names)
        if name in self.asked:
            return name, rng.choice(self.asked[name])
        return name, _prompt_for(self.tools[name], rng)

    def result(self, name: str, arguments: Mapping[str, Any], call_id: str) -> str:
        """The tool's (fake, deterministic) result as the JSON string fed back to the model."""
        seed = sum(ord(c) for c in f"{name}{json.dumps(arguments, sort_keys=True)}")
        rng = random.Random(seed)
        if name == "get_weather":
            body: dict[str, Any] = {
                "city": arguments.get("city"),
                "temperature": rng.randint(-5, 35),
                "unit": arguments.get("unit", "celsius"),
                "conditions": rng.choice(["clear", "cloudy", "rain", "snow", "windy"]),
            }
        elif name == "search_docs":
            body = {"results": [f"{arguments.get('query')}: passage {i + 1}" for i in range(2)]}
        elif name == "read_file":
            body = {"path": arguments.get("path"), "content": "line 1\nline 2\nline 3\n"}
        elif name == "calculate":
            body = {"expression": arguments.get("expression"), "value": rng.randint(1, 10_000)}
        else:
            body = {"ok": True, "tool": name, "call_id": call_id}
        return json.dumps(body)


def _parse_tool(spec: Mapping[str, Any], index: int) -> Tool:
    where = f"workload.tools[{index}]"
    function = spec.get("function") if isinstance(spec, Mapping) else None
    if (
        not isinstance(spec, Mapping)
        or spec.get("type") != "function"
        or not isinstance(function, Mapping)
    ):
        raise HeisenbisectError(
            f"{where}: expected {{type: function, function: {{name, parameters}}}}, got {spec!r}"
        )
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise HeisenbisectError(f"{where}.function.name: must be a non-empty string, got {name!r}")
    schema = function.get("parameters", {"type": "object", "properties": {}})
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise HeisenbisectError(
            f"{where}.function.parameters: not a JSON schema: {exc.message}"
        ) from None
    return Tool(name, str(function.get("description", "")), schema, spec)


def _prompt_for(tool: Tool, rng: random.Random) -> str:
    """A built-in prompt from its template (`checks.arguments_asked`, which reads it back)."""
    city, topic, path = rng.choice(CITIES), rng.choice(TOPICS), rng.choice(FILES)
    if tool.name == "get_weather":
        unit = rng.choice(["celsius", "fahrenheit"])
        return BUILTIN_PROMPTS["get_weather"].format(city=city, unit=unit)
    if tool.name == "search_docs":
        return BUILTIN_PROMPTS["search_docs"].format(query=topic, max_results=rng.randint(2, 5))
    if tool.name == "read_file":
        return BUILTIN_PROMPTS["read_file"].format(path=path, start_line=rng.randint(1, 40))
    if tool.name == "calculate":
        a, b, c = rng.randint(10, 999), rng.randint(10, 999), rng.randint(2, 9)
        return BUILTIN_PROMPTS["calculate"].format(expression=f"({a} + {b}) * {c}")
    return (
        f"Call the {tool.name} tool now ({tool.description or 'no description'}) "
        "with suitable arguments."
    )
