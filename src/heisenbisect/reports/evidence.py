"""What the stored trials are worth as evidence, before any verdict is read from them.

Four refusals live here: a study in which no trial produced a result says so (and no
verdict); so does one whose baseline failed only by crashing (every failed baseline run read
from its exit code ended in a Python traceback: the target died, it did not test);
trials without a result are counted per kind with the first one's detail and log; and when
every run ended the same way (the same non-zero exit, the same last line), the test is
probably not running at all, and the report says so, naming the line. `Evidence.no_valid_runs`
says when no verdict may rest on the trials; each study kind's result turns that into its exit
code (4) beside its other codes (`studies.screening_result`, `studies.commits_result`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.reports.tracebacks import log_traceback
from heisenbisect.targets.log_tail import read_tail

SAME_ENDING_MIN_RUNS = 5  # fewer identical endings are not yet suspicious
TAIL_BYTES = 8192
_EXIT = re.compile(r"^exit (\d+)$")
_LOG_MARKER = re.compile(r"^(--- (stdout|stderr) \(\d+ bytes\) ---|\[heisenbisect: \d+ bytes of \w+ cut here\])$")
# a check's own `assert` failing is how a script says "failed", not a crash
TEST_FAILURE_EXCEPTIONS = frozenset({"AssertionError"})
_KIND_WORDS = {TrialStatus.ERROR: "errors", TrialStatus.SKIP: "skipped", TrialStatus.TIMEOUT: "timeouts"}


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
    crashed_baseline: Example | None = None  # every failed baseline run crashed: how many, the exception, a log

    @property
    def trials(self) -> int:
        return self.results + sum(e.count for e in self.without_result.values())

    @property
    def no_valid_runs(self) -> bool:
        """No verdict may rest on these trials: none produced a result, or the baseline's
        failures are all crashes."""
        return (self.trials > 0 and self.results == 0) or self.crashed_baseline is not None

    def counts_text(self) -> str:
        return ", ".join(f"{self.count(status)} {word}" for status, word in _KIND_WORDS.items())

    def count(self, status: TrialStatus) -> int:
        example = self.without_result.get(status)
        return example.count if example else 0

    def no_result_line(self) -> str:
        """The one line a study with no valid run ends with."""
        if (crash := self.crashed_baseline) is not None:
            return (
                f"no valid runs: every failed baseline run ({crash.count}) ended in a Python traceback, "
                f"{crash.detail} (log: {crash.log_path}): the target crashed instead of testing; fix it, or, "
                'if this exception is the failure under study, report it: print {"failures": 1, "total": 1} '
                "on stdout when it happens"
            )
        first = self.first_without_result
        where = f" (log: {first.log_path})" if first and first.log_path and first.log_path not in first.detail else ""
        detail = (first.detail or first.status.value) if first else "none"
        return f"no trial produced a result: {self.counts_text()}; first: {detail}{where}"

    def same_ending_line(self) -> str | None:
        if self.same_ending is None:
            return None
        return (
            f"warning: every one of {self.results} runs ended the same way ({self.same_ending}): "
            "the test itself may not be running; read a log before trusting any verdict"
        )


def evidence_of(outcomes: Iterable[tuple[Config, Outcome]]) -> Evidence:
    """Summarize stored outcomes (in arrival order); reads logs only to confirm sameness and
    the baseline's crashes."""
    outcomes = list(outcomes)
    results, failing, clean = [], None, None
    kinds: dict[TrialStatus, list[Outcome]] = {}
    first = None
    for config, outcome in outcomes:
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
            status: Example(len(found), found[0].detail, found[0].log_path) for status, found in kinds.items()
        },
        first_without_result=first,
        same_ending=_same_ending(results),
        failing_log=failing,
        clean_log=clean,
        crashed_baseline=crashed_baseline(outcomes),
    )


def crashed_baseline(outcomes: Iterable[tuple[Config, Outcome]]) -> Example | None:
    """When every failed baseline run was read from its exit code and its log ends in a
    Python traceback (not an AssertionError): how many, the latest exception line and log."""
    failed = [o for c, o in outcomes if c == Config() and o.failed]
    crashes = []
    for outcome in failed:
        crash = log_traceback(outcome.log_path) if _EXIT.match(outcome.detail) else None
        if crash is None or crash.kind in TEST_FAILURE_EXCEPTIONS:
            return None
        crashes.append((crash.exception, outcome.log_path))
    if not crashes:
        return None
    return Example(len(crashes), crashes[-1][0], crashes[-1][1])


def _same_ending(results: list[Outcome]) -> str | None:
    """The shared ending when every run exited with one non-zero code and one last line."""
    if len(results) < SAME_ENDING_MIN_RUNS:
        return None
    codes = {_EXIT.match(o.detail).group(1) if _EXIT.match(o.detail) else None for o in results}
    if len(codes) != 1 or None in codes or codes == {"0"}:
        return None
    lines = set()
    for outcome in results:
        lines.add(last_output_line(outcome.log_path))
        if len(lines) > 1:
            return None
    (line,) = lines
    if line is None:
        return None
    return f"exit {codes.pop()}, last line {line!r}"


def last_output_line(log_path: str | None) -> str | None:
    """The last line the target printed (stderr's, else stdout's), ignoring the log's labels."""
    text = read_tail(log_path, TAIL_BYTES) if log_path else None
    if text is None:
        return None
    for line in reversed(text.splitlines()):
        if line.strip() and not _LOG_MARKER.match(line):
            return line.strip()[:200]
    return None


def markdown_lines(evidence: Evidence, folder: Path) -> list[str]:
    """Sections for a report: trials without a result, and the same-ending warning."""
    lines: list[str] = []
    if evidence.no_valid_runs:
        title = "The baseline failed only by crashing" if evidence.crashed_baseline else "No trial produced a result"
        lines += [f"## {title}", "", f"{evidence.no_result_line()}.", "",
                  "No verdict can rest on these trials; fix the target (see the logs) and run again.", ""]
    if evidence.without_result:
        lines += ["## Trials without a result", "",
                  f"{evidence.results} trials produced a result; these did not and are not evidence:", ""]
        lines += ["| kind | trials | first one | its log |", "|---|---|---|---|"]
        for status, example in evidence.without_result.items():
            detail = (example.detail or "-").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {status.value} | {example.count} | {detail} | {log_link(example.log_path, folder)} |")
        lines.append("")
    if warning := evidence.same_ending_line():
        lines += ["## Warning: every run ended the same way", "", warning[len("warning: "):] + ".", ""]
    return lines


def log_link(log_path: str | None, folder: Path) -> str:
    """A markdown link to a log, relative to the report's folder when it lies below it."""
    if not log_path:
        return "-"
    try:
        shown = os.path.relpath(log_path, folder)
    except ValueError:
        shown = log_path
    if shown.startswith(".."):
        shown = log_path
    return f"[{Path(log_path).name}]({shown})"
