"""Each check against the fake server's real replies: silent on correct ones, finding its own fault.

The fake injects each fault into every reply (rate 1), plain and streamed; a check turned off
lets the fault pass, which shows that the check, not the workload, classifies it.
"""

from __future__ import annotations

import pytest

from check_helpers import start_fake, stress
from heisenbisect.checks.base import CheckSettings
from heisenbisect.checks.logprobs import LogprobsSettings

ALL_ON = {"logprobs": LogprobsSettings(enabled=True)}
# fault the fake injects -> (the check that finds it, the class it gives)
FAULTS = {"leak": ("leak", "leak"), "truncate": ("malformed", "malformed"),
          "badargs": ("malformed", "malformed"), "drop": ("no_tool", "no_tool"),
          "nanlogprobs": ("logprobs", "bad_logprobs")}


@pytest.fixture(scope="module")
def clean_server():
    server = start_fake()
    yield server
    server.stop(grace_s=2)


@pytest.mark.parametrize("stream", ["false", "true"])
def test_every_check_is_silent_on_correct_replies(clean_server, stream):
    result = stress(clean_server, stream=stream, checks=ALL_ON)
    assert result.counts() == {"ok": 4}, [s.detail for s in result.kept]
    assert result.tally_line() == (
        "CORRUPTION sessions: 0/4 = 0.0% "
        "(leak=0 garbage=0 malformed=0 no_tool=0 wrong_arguments=0 error=0 ok=4)")


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("stream", ["false", "true"])
def test_each_check_finds_its_fault_and_only_it_does(fault, stream):
    check, kind = FAULTS[fault]
    server = start_fake(f"--fake-{fault}-rate", "1")
    try:
        found = stress(server, stream=stream, checks=ALL_ON)
        off = stress(server, stream=stream, checks={**ALL_ON, check: CheckSettings(enabled=False)})
    finally:
        server.stop(grace_s=2)
    assert found.counts() == {kind: 4}, [s.detail for s in found.kept]
    assert found.metrics()[f"sessions_{kind}"] == 4 and found.corrupted == 4
    assert off.counts()[kind] == 0, [s.detail for s in off.kept]


def test_logprobs_are_asked_for_only_when_the_check_is_on():
    server = start_fake("--fake-nanlogprobs-rate", "1")
    try:
        result = stress(server)
    finally:
        server.stop(grace_s=2)
    assert result.counts() == {"ok": 4}
    assert "bad_logprobs" not in result.tally_line()
    assert result.metrics()["sessions_bad_logprobs"] == 0
