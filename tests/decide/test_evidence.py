"""The evidence rules are pure: how each log ended comes in as a value, so the refusals (no
trial produced a result, a baseline that failed only by crashing, every run ending the same way)
and the crashed runs are decided here without a file."""

from __future__ import annotations

from heisenbisect.decide.crashes import crashed_runs
from heisenbisect.decide.evidence import SAME_ENDING_MIN_RUNS, LogEnding, evidence_of
from heisenbisect.records import Config, Outcome, TrialStatus

ARM = Config(changes=(("graph", "0"),))
CRASH = LogEnding("KeyError: 'x'", "KeyError: 'x'", "KeyError")
ASSERT = LogEnding("AssertionError", "AssertionError", "AssertionError")


def run(name: str, failed: bool, detail: str = "exit 1", status=TrialStatus.OK) -> Outcome:
    return Outcome(name, "k", 0, status, int(failed), 1, log_path=name, detail=detail)


def endings(by_log: dict[str, LogEnding]):
    return lambda log_path: by_log.get(log_path or "", LogEnding())


def test_a_baseline_that_failed_only_by_crashing_leaves_no_valid_run():
    outcomes = [(Config(), run("a", True)), (Config(), run("b", True)), (ARM, run("c", False))]
    evidence = evidence_of(outcomes, endings({"a": CRASH, "b": CRASH}))
    crash = evidence.crashed_baseline
    assert evidence.no_valid_runs
    assert (crash.count, crash.detail, crash.log_path) == (2, "KeyError: 'x'", "b")
    one_real_failure = evidence_of(outcomes, endings({"a": CRASH}))
    assert not one_real_failure.no_valid_runs and one_real_failure.crashed_baseline is None
    asserted = evidence_of(outcomes, endings({"a": ASSERT, "b": CRASH}))
    assert asserted.crashed_baseline is None  # a failing assert is how a check says "failed"


def test_no_trial_with_a_result_leaves_no_valid_run():
    timed_out = run("a", False, "timed out", TrialStatus.TIMEOUT)
    evidence = evidence_of([(Config(), timed_out)], endings({}))
    assert evidence.no_valid_runs and evidence.results == 0
    assert evidence.count(TrialStatus.TIMEOUT) == 1


def test_every_run_ending_the_same_way_is_named():
    outcomes = [(Config(), run(str(i), True, "exit 2")) for i in range(SAME_ENDING_MIN_RUNS)]
    same = LogEnding("usage: check.py [-h]")
    named = evidence_of(outcomes, lambda _: same).same_ending
    assert named == "exit 2, last line 'usage: check.py [-h]'"
    assert evidence_of(outcomes[:-1], lambda _: same).same_ending is None  # too few to suspect
    varied = endings({"0": LogEnding("reply 3 was wrong")})
    assert evidence_of(outcomes, varied).same_ending is None


def test_crashed_runs_counts_failed_runs_with_a_traceback_per_config():
    outcomes = [(ARM, run("a", True)), (ARM, run("b", True)), (ARM, run("c", False))]
    outcomes.append((Config(), run("d", True)))
    found = crashed_runs(outcomes, endings({"a": CRASH, "c": CRASH}))
    assert [(c.config, c.crashed, c.failed, c.log_path) for c in found] == [(ARM, 1, 2, "a")]
