"""`wrong_arguments` on realistic messages: the built-in prompts read back, values another session
asked for found, and the ways a faithful model writes a value (case, spacing, an equal
expression, a longer place name) let pass."""

from __future__ import annotations

import json
import random
import re

import pytest

from heisenbisect.checks.arguments import CHECK, ArgumentsSettings
from heisenbisect.checks.arguments_asked import BUILTIN_PROMPTS, asked_builtin
from heisenbisect.checks.arguments_compare import arithmetic, same_value
from heisenbisect.checks.base import Reply, State
from heisenbisect.targets.openai.tools import ToolSet

TOOLS = ToolSet().specs
WEATHER = "What is the weather in Paris right now, in celsius? Use the get_weather tool."
SEARCH = "Search the docs for 'KV cache eviction' and give me the top 3 results. Use search_docs."
READ = "Show me src/main.py starting at line 12. Use the read_file tool."
CALC = "Compute (12 + 30) * 4 exactly with the calculate tool."


def inspect(prompt: str, *calls: tuple[str, object], settings=None, tools=TOOLS):
    request = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": prompt}],
               "tools": tools}
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
        for i, (name, args) in enumerate(calls)]}
    state = State(settings or ArgumentsSettings())
    return CHECK.inspect(request, Reply(message, {"choices": [{"message": message}]}), state)


def test_every_builtin_prompt_the_workload_writes_is_read_back_whole():
    rng, tools = random.Random(7), ToolSet()
    for _ in range(200):
        name, text = tools.prompt(rng)
        asked = asked_builtin(text)
        assert asked is not None and asked.tool == name, text
        assert BUILTIN_PROMPTS[name].format(**asked.values) == text


FAITHFUL = {
    "exact": (WEATHER, ("get_weather", {"city": "Paris", "unit": "celsius"})),
    "case and a country": (WEATHER, ("get_weather", {"city": "paris, France", "unit": "Celsius"})),
    "optional unit left out": (WEATHER, ("get_weather", {"city": "Paris"})),
    "count as a string": (SEARCH, ("search_docs", {"query": "KV cache eviction", "max_results": "3"})),
    "count left out": (SEARCH, ("search_docs", {"query": "kv cache eviction"})),
    "path with ./": (READ, ("read_file", {"path": "./src/main.py", "start_line": 12})),
    "expression without spaces": (CALC, ("calculate", {"expression": "(12+30)*4"})),
    "expression worked out": (CALC, ("calculate", {"expression": "168"})),
    "another tool first, then the asked one": (
        WEATHER, ("read_file", {"path": "x"}), ("get_weather", {"city": "Paris"})),
    "a call to another tool only": (WEATHER, ("read_file", {"path": "README.md"})),
    "a prompt of nobody's": ("Tell me a joke. Use the get_weather tool.", ("get_weather", {"city": "Oslo"})),
    "arguments not JSON (malformed's)": (WEATHER, ("get_weather", '{"city": "Tok')),
}

EXCHANGED = {
    "another city": (WEATHER, ("get_weather", {"city": "Tokyo", "unit": "celsius"}), {"city": "Tokyo"}),
    "another unit": (WEATHER, ("get_weather", {"city": "Paris", "unit": "fahrenheit"}), {"unit": "fahrenheit"}),
    "another query": (SEARCH, ("search_docs", {"query": "speculative decoding", "max_results": 3}),
                      {"query": "speculative decoding"}),
    "another count": (SEARCH, ("search_docs", {"query": "KV cache eviction", "max_results": 5}),
                      {"max_results": 5}),
    "another file and line": (READ, ("read_file", {"path": "Makefile", "start_line": 30}),
                              {"path": "Makefile", "start_line": 30}),
    "another expression": (CALC, ("calculate", {"expression": "(512 + 77) * 9"}),
                           {"expression": "(512 + 77) * 9"}),
}


@pytest.mark.parametrize("name", sorted(FAITHFUL))
def test_a_faithful_call_passes(name):
    prompt, *calls = FAITHFUL[name]
    assert inspect(prompt, *calls) is None


@pytest.mark.parametrize("name", sorted(EXCHANGED))
def test_another_sessions_values_are_wrong_arguments_with_both_in_the_evidence(name):
    prompt, call, wrong = EXCHANGED[name]
    finding = inspect(prompt, call)
    assert finding is not None and finding.kind == "wrong_arguments"
    asked = asked_builtin(prompt)
    assert finding.evidence == {"asked": {"tool": call[0], "arguments": dict(asked.values)},
                                "received": call[1]}
    for key, value in wrong.items():
        assert f"{key}: asked {asked.values[key]!r}, got {value!r}" in finding.detail


def test_a_users_tool_is_checked_against_the_values_its_prompt_gives():
    tools = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
    settings = ArgumentsSettings(prompts=[{"tool": "lookup_order", "prompt": "Where is order A-1?",
                                           "arguments": {"order_id": "A-1"}}])
    right = inspect("Where is order A-1?", ("lookup_order", {"order_id": "a-1"}), settings=settings, tools=tools)
    wrong = inspect("Where is order A-1?", ("lookup_order", {"order_id": "B-7"}), settings=settings, tools=tools)
    unknown = inspect("Where is order B-7?", ("lookup_order", {"order_id": "A-1"}), settings=settings, tools=tools)
    assert right is None and unknown is None
    assert wrong is not None and wrong.evidence["asked"] == {"tool": "lookup_order", "arguments": {"order_id": "A-1"}}


def test_a_users_prompt_for_a_tool_the_workload_lacks_is_refused_by_name():
    from heisenbisect.errors import HeisenbisectError
    with pytest.raises(HeisenbisectError, match=r"checks.arguments.prompts\[0\].tool: 'lookup' is not one"):
        ToolSet(None, [("lookup", "find it")])


def test_the_workload_asks_a_users_prompts_for_its_tool():
    tools = ToolSet([{"type": "function", "function": {"name": "lookup_order"}}], [("lookup_order", "Where is A-1?")])
    assert {tools.prompt(random.Random(i)) for i in range(5)} == {("lookup_order", "Where is A-1?")}


@pytest.mark.parametrize("asked, received, same", [
    ("3", 3, True), ("3", 3.0, True), ("3", 4, False), ("12", "12", True),
    ("Paris", "PARIS", True), ("Paris", "Paris, France", True), ("Paris", "Parisville", False),
    ("(12 + 30) * 4", "4*(30+12)", True), ("(12 + 30) * 4", "169", False),
    ("README.md", "docs/README.md", True), ("README.md", "src/main.py", False),
    ("celsius", "fahrenheit", False), ("x", True, False),
])
def test_same_value_reads_generously_but_not_across_values(asked, received, same):
    assert same_value(asked, received) is same


def test_arithmetic_evaluates_only_plain_arithmetic():
    assert arithmetic("(12 + 30) * 4") == 168.0 and arithmetic("7 / 2") == 3.5
    for text in ("2 ** 100000", "__import__('os')", "src/main.py", "1/0", "", "9" * 300):
        assert arithmetic(text) is None, text


def test_the_builtin_templates_cover_exactly_the_builtin_tools():
    """The spec's check of ``prompts[].tool`` reads the built-in tools' names from the templates."""
    assert set(BUILTIN_PROMPTS) == set(ToolSet().names)


@pytest.mark.parametrize("tools, tool", [("", "lookup"), ("      tools: [{type: function, function: {name: f}}]\n",
                                                          "get_weather")])
def test_a_prompt_for_a_tool_the_workload_lacks_is_one_line_naming_the_place(tmp_path, tools, tool):
    from bisect_cli import bisect
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "study: s\ntarget:\n  server:\n    preset: sglang\n    model: m\n    workload:\n" + tools +
        f"      checks: {{arguments: {{prompts: [{{tool: {tool}, prompt: p, arguments: {{a: 1}}}}]}}}}\n"
        "factors: [{name: x, kind: env, var: X, levels: ['0', '1']}]\n")
    run = bisect("validate", str(spec))
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert re.search(rf"spec.yaml:\d+:\d+: target.server.workload: checks.arguments.prompts\[0\].tool: "
                     rf"'{tool}' is not one of the workload's tools", run.stderr), run.stderr
