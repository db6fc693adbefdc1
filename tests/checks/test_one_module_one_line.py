"""Adding a check is one module and one registry line: a throwaway check, written to a temporary
module and registered by monkeypatch, shows in the tally line, the metrics and the evidence."""

from __future__ import annotations

import importlib
import json
import textwrap

import pytest

from check_helpers import start_fake, stress
from heisenbisect.checks import registry
from heisenbisect.targets.openai.workload import StressSettings

THROWAWAY = '''
"""``second_round``: flags every session's second reply; counts replies over the run."""

from heisenbisect.checks.base import Check, Finding


class SecondRound(Check):
    name = "second_round"
    classes = {"second_round": True}

    def inspect(self, request, reply, state):
        state.session["replies"] = state.session.get("replies", 0) + 1
        state.trial["replies"] = state.trial.get("replies", 0) + 1
        if state.session["replies"] == 2:
            return Finding("second_round", f"reply {state.trial['replies']} of the run")
        return None


CHECK = SecondRound()
'''


@pytest.fixture
def registered(tmp_path, monkeypatch):
    (tmp_path / "second_round.py").write_text(textwrap.dedent(THROWAWAY))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("second_round")
    monkeypatch.setattr(registry, "CHECKS", (*registry.CHECKS, module.CHECK))  # the registry line
    return module.CHECK


def test_a_registered_check_shows_in_the_tally_the_metrics_and_the_evidence(registered):
    server = start_fake()
    try:
        result = stress(server)
    finally:
        server.stop(grace_s=2)
    assert result.tally_line() == ("CORRUPTION sessions: 4/4 = 100.0% "
                                   "(leak=0 garbage=0 malformed=0 no_tool=0 wrong_arguments=0 second_round=4 "
                                   "error=0 ok=0)")
    metrics = result.metrics()
    assert metrics["sessions_second_round"] == 4.0 and metrics["sessions_ok"] == 0.0
    evidence = json.loads(json.dumps(result.evidence(StressSettings())))
    assert evidence["counts"] == {"second_round": 4} and evidence["corrupted"] == 4
    assert "second_round" in evidence["workload"]["checks"]
    assert {s["class"] for s in evidence["sessions"]} == {"second_round"}
    # per-session state restarts with each session; per-trial state runs across them
    assert max(int(s.detail.split()[3]) for s in result.kept) > 2


def test_session_classes_and_corruption_come_from_the_registry(registered):
    checks = ("leak", "garbage", "malformed", "no_tool", "wrong_arguments", "wrong_answer", "bad_logprobs",
              "diverged", "near_tie", "second_round")
    assert registry.session_classes() == ("ok", *checks, "error")
    assert registry.corrupted_classes() == set(checks) - {"near_tie"}  # a near-tie is no failure
