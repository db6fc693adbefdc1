"""The stack registry: presets are its names; a new stack is one module plus one registry line."""

from __future__ import annotations

import importlib
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from heisenbisect.hypotheses.loader import SpecError, parse_spec
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.stacks import registry
from heisenbisect.stacks.registry import STACKS, VERSION_PATHS
from heisenbisect.targets.registry import make_target

FAKE = Path(__file__).resolve().parents[1] / "sglang_fake_server.py"

# a whole stack module, as a new one (TGI, llama.cpp, TensorRT-LLM) would be written
TOY_MODULE = f'''
"""A toy stack: the fake server's vLLM-like mode under another name."""

from heisenbisect.stacks.base import Stack

STACK = Stack(
    name="toy",
    title="Toy",
    launcher=({sys.executable!r}, {str(FAKE)!r}, "serve"),
    launch=("{{model}}", "--host", "{{host}}", "--port", "{{port}}"),
    ready_path="/health",
    reserved=("--host", "--port"),
    help_args=("--help=all",),
    version_paths=("/version",),
)
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy module on the path, and its one line in the registry."""
    (tmp_path / "toy_stack.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("toy_stack")
    monkeypatch.setitem(STACKS, module.STACK.name, module.STACK)
    yield module.STACK
    sys.modules.pop("toy_stack", None)


def spec_text(preset: str) -> str:
    return ("study: toy\ntarget:\n  server:\n    preset: " + preset + "\n    model: Qwen/Qwen3-8B\n"
            "    server_args: [--fake-latency, '0.002']\n"
            "    workload: {sessions: 3, rounds: 1, request_timeout: 10}\n"
            "factors:\n  - {name: eager, kind: arg, levels: [[], [--enforce-eager]]}\n")


def test_every_stack_is_registered_under_its_own_name_with_what_the_cli_reads():
    assert list(STACKS) == ["sglang", "vllm"]
    assert all(name == stack.name and stack.launcher and stack.version_paths
               for name, stack in STACKS.items())
    assert registry.with_flag_readers() == ["sglang", "vllm"]
    assert VERSION_PATHS == ("/server_info", "/get_server_info", "/version")


def test_an_unknown_preset_names_file_line_and_the_known_stacks(tmp_path):
    with pytest.raises(SpecError) as caught:
        parse_spec(spec_text("toy"), "s.yaml")
    message = str(caught.value)
    assert "s.yaml:4:" in message and "unknown stack 'toy': known stacks are sglang, vllm" in message


def test_a_new_stack_is_one_module_and_one_registry_line(toy, tmp_path):
    spec = parse_spec(spec_text("toy"), "s.yaml")
    target = make_target(spec, tmp_path)
    assert target.stack is toy and target.launcher == toy.launcher
    try:
        log = tmp_path / "t.log"
        outcome = target.execute(Trial("t-0", Config(), 0, 1), log, threading.Event())
    finally:
        target.close()
    assert outcome.status is TrialStatus.OK, outcome.detail
    assert (outcome.failures, outcome.total) == (0, 3) and "(from /version)" in log.read_text()


def test_the_sglang_shorthand_loads_as_the_sglang_preset_and_dumps_as_written():
    text = "study: s\ntarget:\n  sglang: {model: m, python: /venv/bin/python}\n"
    spec = parse_spec(text, "s.yaml")
    assert spec.target.kind == "server" and spec.target.server.preset == "sglang"
    assert spec.target.server.launch == ["/venv/bin/python", "-m", "sglang.launch_server"]
    dumped = spec.target.model_dump(mode="json")
    assert "server" not in dumped and dumped["sglang"]["python"] == "/venv/bin/python"
