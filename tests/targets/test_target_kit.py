"""The target kit over every registered target kind, each built from a spec as `bisect run` builds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from heisenbisect.hypotheses.model import Spec
from heisenbisect.hypotheses.targets import SECTIONS
from heisenbisect.records import TrialStatus
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.protocol import NEVER_RAN, trial_outcome
from heisenbisect.targets.registry import TARGET_KINDS, make_target
from heisenbisect.testing import target_kit

FAKE_SGLANG = (sys.executable, str(Path(__file__).resolve().parents[1] / "sglang_fake_server.py"))


def command_spec(result: str):
    def make(argv, timeout_s):
        spec = Spec.model_validate({"study": "kit", "target": {"command": list(argv), "timeout": timeout_s, "result": result}})
        return make_target(spec, Path.cwd())

    return make


def sglang_spec(argv, timeout_s):
    """The kit's program as the launcher, handing on to the fake SGLang server where it would end cleanly."""
    spec = Spec.model_validate({"study": "kit", "target": {"timeout": timeout_s, "sglang": {
        "model": "deepseek-ai/DeepSeek-V3", "launcher": [*argv, "--", *FAKE_SGLANG], "startup_timeout": timeout_s,
        "server_args": ["--fake-latency", "0.002", "--fake-startup-seconds", "0.05"],
        "workload": {"sessions": 4, "rounds": 1, "request_timeout": 30},
    }}})
    return make_target(spec, Path.cwd())


def server_spec(argv, timeout_s):
    """The kit's program at the head of a described stack's launch, handing on to the fake vLLM-like server."""
    spec = Spec.model_validate({"study": "kit", "target": {"timeout": timeout_s, "server": {
        "launch": [*argv, "--", *FAKE_SGLANG, "serve", "{model}", "--host", "{host}", "--port", "{port}",
                   "--fake-latency", "0.002", "--fake-startup-seconds", "0.05"],
        "model": "Qwen/Qwen3-8B", "startup_timeout": timeout_s, "ready": {"path": "/health"},
        "workload": {"sessions": 4, "rounds": 1, "request_timeout": 30},
    }}})
    return make_target(spec, Path.cwd())


# every section a spec may give (``sglang`` is shorthand for a server), and how the kit runs its programs through it
MAKERS = {"command": command_spec("json"), "sglang": sglang_spec, "server": server_spec}
READS_OUTPUT = {"command": True, "sglang": False, "server": False}  # a server's result comes from its own client


def test_every_target_kind_has_its_section_its_builder_and_the_kit():
    assert set(TARGET_KINDS) == {s.kind for s in SECTIONS} and {s.key for s in SECTIONS} == set(MAKERS)
    assert all(issubclass(s, TARGET_KINDS[s.kind].section) for s in SECTIONS)


@pytest.mark.parametrize("result", ["json", "exit"])
@pytest.mark.parametrize("check", target_kit.PROCESS_CHECKS + target_kit.OUTPUT_CHECKS, ids=lambda c: c.__name__)
def test_the_command_target_passes_the_kit(tmp_path, check, result):
    check(command_spec(result), tmp_path)


def test_the_command_target_says_why_a_program_never_ran(tmp_path):
    missing, no_script = target_kit.check_never_ran(command_spec("json"), tmp_path)
    assert missing.detail.startswith("cannot start: ") and "no-such-command" in missing.detail
    assert no_script.detail.startswith(NEVER_RAN) and "can't open file" in no_script.detail


@pytest.mark.slow
@pytest.mark.parametrize("check", target_kit.PROCESS_CHECKS, ids=lambda c: c.__name__)
def test_the_sglang_target_passes_the_kit(tmp_path, check):
    check(sglang_spec, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("check", target_kit.PROCESS_CHECKS, ids=lambda c: c.__name__)
def test_the_server_target_passes_the_kit(tmp_path, check):
    check(server_spec, tmp_path)


@pytest.mark.slow
def test_check_target_runs_every_check_a_kind_needs(tmp_path):
    for kind, make in MAKERS.items():
        target_kit.check_target(make, tmp_path / kind, reads_output=READS_OUTPUT[kind])


class LeavesItsGrandchild(TrialTarget):
    """A target that kills only the process it started: what the kit is there to catch."""

    def __init__(self, argv, timeout_s):
        self.argv, self.timeout_s = tuple(argv), timeout_s

    def execute(self, trial, log_path, cancelled):
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(self.argv, env={**os.environ, **trial.env}, stdout=log, stderr=log)
            proc.wait(self.timeout_s)
        return trial_outcome(trial, TrialStatus.OK, failures=0, total=1, log_path=log_path)


def test_the_kit_catches_a_target_that_leaves_a_setsid_grandchild(tmp_path):
    try:
        with pytest.raises(target_kit.KitFailure, match="still running"):
            target_kit.check_setsid_grandchild(LeavesItsGrandchild, tmp_path)
    finally:
        for noted in tmp_path.glob("*/pids/escaped-*"):  # the grandchild the broken target left
            os.kill(int(noted.read_text()), signal.SIGKILL)
