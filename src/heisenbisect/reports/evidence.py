"""The evidence section of a report, and the lines a study with no valid run ends with.

What the stored trials are worth is decided in `decide.evidence` (the four refusals: no trial
produced a result, the baseline failed only by crashing, trials without a result, every run
ending the same way); this module only words it.
"""

from __future__ import annotations

import os
from pathlib import Path

from heisenbisect.decide.evidence import Evidence
from heisenbisect.records import TrialStatus

_KIND_WORDS = {
    TrialStatus.ERROR: "errors",
    TrialStatus.SKIP: "skipped",
    TrialStatus.TIMEOUT: "timeouts",
}


def counts_text(evidence: Evidence) -> str:
    return ", ".join(f"{evidence.count(status)} {word}" for status, word in _KIND_WORDS.items())


def no_result_line(evidence: Evidence) -> str:
    """The one line a study with no valid run ends with."""
    if (crash := evidence.crashed_baseline) is not None:
        return (
            f"no valid runs: every failed baseline run ({crash.count}) ended in a Python traceback, "
            f"{crash.detail} (log: {crash.log_path}): the target crashed instead of testing; fix it, or, "
            'if this exception is the failure under study, report it: print {"failures": 1, "total": 1} '
            "on stdout when it happens"
        )
    first = evidence.first_without_result
    where = (
        f" (log: {first.log_path})"
        if first and first.log_path and first.log_path not in first.detail
        else ""
    )
    detail = (first.detail or first.status.value) if first else "none"
    return f"no trial produced a result: {counts_text(evidence)}; first: {detail}{where}"


def same_ending_line(evidence: Evidence) -> str | None:
    if evidence.same_ending is None:
        return None
    return (
        f"warning: every one of {evidence.results} runs ended the same way ({evidence.same_ending}): "
        "the test itself may not be running; read a log before trusting any verdict"
    )


def markdown_lines(evidence: Evidence, folder: Path) -> list[str]:
    """Sections for a report: trials without a result, and the same-ending warning."""
    lines: list[str] = []
    if evidence.no_valid_runs:
        title = (
            "The baseline failed only by crashing"
            if evidence.crashed_baseline
            else "No trial produced a result"
        )
        lines += [
            f"## {title}",
            "",
            f"{no_result_line(evidence)}.",
            "",
            "No verdict can rest on these trials; fix the target (see the logs) and run again.",
            "",
        ]
    if evidence.without_result:
        lines += [
            "## Trials without a result",
            "",
            f"{evidence.results} trials produced a result; these did not and are not evidence:",
            "",
        ]
        lines += ["| kind | trials | first one | its log |", "|---|---|---|---|"]
        for status, example in evidence.without_result.items():
            detail = (example.detail or "-").replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"| {status.value} | {example.count} | {detail} | {log_link(example.log_path, folder)} |"
            )
        lines.append("")
    if warning := same_ending_line(evidence):
        lines += [
            "## Warning: every run ended the same way",
            "",
            warning[len("warning: ") :] + ".",
            "",
        ]
    if warning := extra_fields_line(evidence):
        lines += ["## Note: extra result fields", "", warning[len("warning: ") :] + ".", ""]
    return lines


def extra_fields_line(evidence: Evidence) -> str | None:
    """The one warning for results with numbers beside `failures` and `total`."""
    if (extra := evidence.extra_fields) is None:
        return None
    return (
        f"warning: {extra.count} of {evidence.results} results had top-level fields besides "
        f"'failures' and 'total' ({extra.detail}); kept as metrics: put them under 'metrics'"
    )


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
