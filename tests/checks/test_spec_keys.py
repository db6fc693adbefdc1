"""The checks' spec keys: ``workload.checks`` is assembled from the registered checks, the older
``signals.logprobs`` spelling keeps working, and a spec that says nothing keeps its identity."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from heisenbisect.checks import registry
from heisenbisect.hypotheses.targets import StressWorkload
from heisenbisect.targets.server.spec import stress_settings


def active(workload: StressWorkload, logprobs: bool = False) -> list[str]:
    return [check.name for check, _ in registry.active(stress_settings(workload, logprobs).checks)]


def test_the_section_has_a_key_per_check_with_settings():
    assert set(type(StressWorkload().checks).model_fields) == {
        "leak", "garbage", "malformed", "no_tool", "arguments", "answers", "logprobs", "reference"}


def test_logprobs_turn_on_either_way_and_a_check_turns_off():
    assert active(StressWorkload()) == ["leak", "garbage", "malformed", "no_tool", "arguments"]
    assert "logprobs" in active(StressWorkload(checks={"logprobs": {"enabled": True}}))
    assert "logprobs" in active(StressWorkload(), logprobs=True)  # target.server.signals.logprobs
    assert "no_tool" not in active(StressWorkload(checks={"no_tool": {"enabled": False}}))


def test_a_workload_at_its_defaults_dumps_as_before_the_section_existed():
    assert "checks" not in StressWorkload().model_dump()
    off = StressWorkload(checks={"leak": {"enabled": False}})
    assert off.model_dump()["checks"]["leak"] == {"enabled": False}


def test_an_unknown_check_or_key_is_refused():
    with pytest.raises(ValidationError):
        StressWorkload(checks={"lek": {}})
    with pytest.raises(ValidationError):
        StressWorkload(checks={"leak": {"enable": True}})
