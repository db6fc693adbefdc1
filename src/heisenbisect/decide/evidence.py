"""What the stored trials are worth as evidence, before any verdict is read from them.

Four refusals are decided here: a study in which no trial produced a result says so (and gives
no verdict); so does one whose baseline failed only by crashing (every failed baseline run read
from its exit code ended in a Python traceback: the target died, it did not test); trials
without a result are counted per kind with the first one's detail and log; and when every run
ended the same way (the same non-zero exit, the same last line), the test is probably not
running at all. `Evidence.no_valid_runs` says when no verdict may rest on the trials; each study
kind's result turns that into its exit code (4) beside its other codes
(`studies.screening_result`, `studies.commits.result`); `reports.evidence` words it.

Pure: how a log ended comes in as a `LogEnding` from ``ending_of`` (the studies read the logs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from heisenbisect.records import EXTRA_RESULT_FIELDS, Config, Outcome, TrialStatus

SAME_ENDING_MIN_RUNS = 5  # fewer identical endings are not yet suspicious
# a check's own `assert` failing is how a script says "failed", not a crash
TEST_FAILURE_EXCEPTIONS = frozenset({"AssertionError"})
_EXIT = re.compile(r"^exit (\d+)$")


@dataclass(frozen=True)
class LogEnding:
    """How a trial's log ends: the last line its target printed, and the exception of the last
    Python traceback in it (its line and class name), if any."""

    last_line: str | None = None
    exception: str | None = None  # "ModuleNotFoundError: No module named 'flakymod'"
    exception_kind: str | None = None  # "ModuleNotFoundError"


EndingOf = Callable[[str | None], LogEnding]  # a log's path (None: no log) -> how it ends


@dataclass(frozen=True)
class Example:
    """The first trial of one kind: what happened and where its log is."""

    count: int
    detail: str
    log_path: str | None


@dataclass(frozen=True)
class Evidence:
    """How many trials produced a result, what became of the others, and suspicious sameness."""

    results: int = 0
    without_result: dict[TrialStatus, Example] = field(default_factory=dict)
    first_without_result: Outcome | None = None
    same_ending: str | None = None  # "exit 2, last line '...'" when every run ended so
    failing_log: str | None = None
    clean_log: str | None = None
    # every failed baseline run crashed: how many, the exception, a log
    crashed_baseline: Example | None = None
    # results with numbers beside the protocol's keys, kept as metrics: how many, the first
    extra_fields: Example | None = None

    @property
    def trials(self) -> int:
        return self.results + sum(e.count for e in self.without_result.values())

    @property
    def no_valid_runs(self) -> bool:
        """No verdict may rest on these trials: none produced a result, or the baseline's
        failures are all crashes."""
        return (self.trials > 0 and self.results == 0) or self.crashed_baseline is not None

    def count(self, status: TrialStatus) -> int:
        example = self.without_result.get(status)
        return example.count if example else 0


def evidence_of(outcomes: Iterable[tuple[Config, Outcome]], ending_of: EndingOf) -> Evidence:
    """Summarize stored outcomes (in arrival order); asks ``ending_of`` only to confirm sameness
    and the baseline's crashes."""
    outcomes = list(outcomes)
    results, failing, clean = [], None, None
    kinds: dict[TrialStatus, list[Outcome]] = {}
    first = None
    for _config, outcome in outcomes:
        if outcome.status is TrialStatus.OK:
            results.append(outcome)
            if outcome.failed and failing is None:
                failing = outcome.log_path
            elif not outcome.failed and clean is None:
                clean = outcome.log_path
        else:
            kinds.setdefault(outcome.status, []).append(outcome)
            first = first or outcome
    return Evidence(
        results=len(results),
        without_result={
            status: Example(len(found), found[0].detail, found[0].log_path)
            for status, found in kinds.items()
        },
        first_without_result=first,
        same_ending=same_ending(results, ending_of),
        failing_log=failing,
        clean_log=clean,
        crashed_baseline=crashed_baseline(outcomes, ending_of),
        extra_fields=extra_fields(results),
    )


def extra_fields(results: list[Outcome]) -> Example | None:
    """The results that carried extra top-level numbers (`targets.protocol` kept them as
    metrics): one warning for the study, not one per run."""
    found = [o for o in results if o.detail.startswith(EXTRA_RESULT_FIELDS)]
    if not found:
        return None
    first = found[0]
    names = first.detail[len(EXTRA_RESULT_FIELDS) :].split(";")[0]
    return Example(len(found), names, first.log_path)


def crashed_baseline(
    outcomes: Iterable[tuple[Config, Outcome]], ending_of: EndingOf
) -> Example | None:
    """When every failed baseline run was read from its exit code and its log ends in a
    Python traceback (not an AssertionError): how many, the latest exception line and log."""
    failed = [o for c, o in outcomes if c == Config() and o.failed]
    crashes = []
    for outcome in failed:
        ending = ending_of(outcome.log_path) if _EXIT.match(outcome.detail) else None
        if ending is None or ending.exception is None:
            return None
        if ending.exception_kind in TEST_FAILURE_EXCEPTIONS:
            return None
        crashes.append((ending.exception, outcome.log_path))
    if not crashes:
        return None
    return Example(len(crashes), crashes[-1][0], crashes[-1][1])


def same_ending(results: list[Outcome], ending_of: EndingOf) -> str | None:
    """The shared ending when every run exited with one non-zero code and one last line."""
    if len(results) < SAME_ENDING_MIN_RUNS:
        return None
    codes = {m.group(1) if (m := _EXIT.match(o.detail)) else None for o in results}
    if len(codes) != 1 or None in codes or codes == {"0"}:
        return None
    lines = set()
    for outcome in results:
        lines.add(ending_of(outcome.log_path).last_line)
        if len(lines) > 1:
            return None
    (line,) = lines
    if line is None:
        return None
    return f"exit {codes.pop()}, last line {line!r}"
