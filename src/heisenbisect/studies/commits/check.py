"""The first phase of `bisect commits`: runs at the two ends, so that a range whose bad end
does not fail, or whose ends are swapped, is refused before any culprit is printed; and the
run timeout, when the spec leaves it out, derived from how long those runs took.

The rules, and the refusals they make, are `decide.range_check`'s; this module binds them to a
study: which configs are the ends (the strategy's order, so a fix's failing end is ``good``),
and what the derived timeout is. How a refusal names the ends is the study's
(`CommitStudy.words`).
"""

from __future__ import annotations

import sys
from typing import cast

from pydantic import BaseModel

from heisenbisect.decide.commits import CommitStrategy
from heisenbisect.decide.range_check import RangeCheckStrategy, RangeSettings
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.store import Store
from heisenbisect.studies.commits.marks import search_runs
from heisenbisect.studies.commits.prepare import CommitStudy

TIMEOUT_FACTOR = 10  # a run that takes 10x the slowest run at the ends is taken to hang
MIN_TIMEOUT_S = 60.0


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
