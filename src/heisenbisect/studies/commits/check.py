"""The first phase of `bisect commits`: runs at the two ends, so that a range whose bad end
does not fail, or whose ends are swapped, is refused before any culprit is printed; and the
run timeout, when the spec leaves it out, derived from how long those runs took.

The rules are `decide.range_check`'s; this module binds them to a study: which configs are
the ends (the strategy's order, so a fix's failing end is ``good``), what the refusal says, and
what the derived timeout is.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel

from heisenbisect.decide.commits import CommitStrategy, State
from heisenbisect.decide.range_check import (
    RangeCheck,
    RangeCheckStrategy,
    RangeSettings,
    RangeState,
    Wording,
    reversed_rates,
)
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.store import Store
from heisenbisect.studies.commits.marks import search_runs
from heisenbisect.studies.commits.prepare import CommitStudy

TIMEOUT_FACTOR = 10  # a run that takes 10x the slowest run at the ends is taken to hang
MIN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Refusal:
    """Why no culprit is named: the range check's state, its counts, and the sentence."""

    state: RangeState
    message: str
    check: RangeCheck


def range_check(study: CommitStudy, strategy: CommitStrategy) -> RangeCheckStrategy:
    """The check over the strategy's ends: its last candidate fails, its good end does not."""
    c = study.commits
    return ends_check(strategy, RangeSettings(c.p_bad, c.p_good, c.confidence, c.end_runs))


def ends_check(strategy: CommitStrategy, settings: RangeSettings) -> RangeCheckStrategy:
    """The check over a strategy's ends (commits or versions), in the strategy's order."""
    failing = strategy.config_for(strategy.candidates[-1])
    return RangeCheckStrategy(failing, strategy.config_for(strategy.good), settings)


def replayed_check(
    study: CommitStudy, strategy: CommitStrategy, store: Store
) -> RangeCheckStrategy:
    return replay_check(range_check(study, strategy), store)


def replay_check(check: RangeCheckStrategy, store: Store) -> RangeCheckStrategy:
    """``check`` as the search's stored runs leave it (the verification's are not read)."""
    for config, outcome in search_runs(store):
        check.observe(config, outcome)
    return check


def failing_end_name(study: CommitStudy) -> str:
    return "good (failing) end" if study.fix else "bad end"


def wording(study: CommitStudy) -> Wording:
    again = "rerun without --fix" if study.fix else "rerun with --fix"
    return Wording(failing_end_name(study), reversed_advice=again)


def refusal_of(study: CommitStudy, check: RangeCheck) -> Refusal | None:
    words = wording(study)
    return refusal(check, words)


def refusal(check: RangeCheck, words: Wording) -> Refusal | None:
    """The check's refusal, if it refused."""
    if not check.state.refused:
        return None
    return Refusal(check.state, check.message(words), check)


def reversed_refusal(study: CommitStudy, strategy: CommitStrategy, check: RangeCheck):
    words = wording(study)
    return reversed_rates_refusal(strategy, check, words)


def reversed_rates_refusal(
    strategy: CommitStrategy, check: RangeCheck, words: Wording
) -> Refusal | None:
    """A finished search whose learned rates put a bad candidate's below a good one's names a
    change in the other direction: refused, whatever its posterior says (`reversed_rates`)."""
    result = strategy.result()
    s = strategy.settings
    if result.state is State.RUNNING:
        return None
    if not reversed_rates(s.p_bad, s.p_good, result.mean_p_bad, result.mean_p_good):
        return None
    message = (
        f"the range looks reversed: {words.reversed_advice} (learned: a bad {words.unit} fails "
        f"in {result.mean_p_bad:.3f} of runs, a good one in {result.mean_p_good:.3f})"
    )
    return Refusal(RangeState.REVERSED, message, check)


def run_timeout(spec: Spec, ends: list[tuple[Config, Outcome]], check: RangeCheckStrategy):
    """The spec with the timeout the search runs under, and the line that says so (None when
    the spec sets ``target.timeout``, or no run at the ends has finished cleanly yet)."""
    section = cast(BaseModel, spec.target)  # a union mypy cannot spell (hypotheses.targets)
    if "timeout" in section.model_fields_set:
        return spec, None
    durations = [
        o.duration_s
        for c, o in ends
        if c in (check.failing, check.passing) and o.status is TrialStatus.OK
    ]
    if not durations:
        return spec, None
    slowest = max(durations)
    timeout = max(MIN_TIMEOUT_S, TIMEOUT_FACTOR * slowest)
    line = (
        f"target.timeout not set: a run still going after {timeout:.0f} s is stopped and its "
        f"commit untestable ({TIMEOUT_FACTOR}x the slowest run at the ends, {slowest:.1f} s; at "
        f"least {MIN_TIMEOUT_S:.0f} s)"
    )
    target = section.model_copy(update={"timeout": timeout})
    return spec.model_copy(update={"target": target}), line


def say(line: str | None) -> None:
    if line:
        print(line, file=sys.stderr)
