"""Failed runs whose log ends in a Python traceback: perhaps a broken target, not the bug.

A traceback of the could-not-run kind (an ImportError at an old commit, a SyntaxError) makes
its run untestable already (`targets.tracebacks`). Any other exception that ends a run read
by its exit code (an AttributeError from a typo in the stress script) exits 1, which reads
as "failed", and nothing tells such a crash from the bug for certain; so the reports point
at it: per config, how many failed runs logged a traceback, and the exception line of one
of them. A check that cannot test a commit should exit 125 (untestable) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from heisenbisect.records import Config, Outcome
from heisenbisect.targets.log_tail import read_tail
from heisenbisect.targets.tracebacks import Traceback, last_traceback

TAIL_BYTES = 16 * 1024  # the exception that ended a run is at the end of its log


@dataclass(frozen=True)
class CrashedRuns:
    """The failed runs of one config whose logs hold a traceback."""

    config: Config
    crashed: int
    failed: int
    exception: str  # the exception line of the latest such log, e.g. "ModuleNotFoundError: ..."
    log_path: str


def crashed_runs(outcomes: Iterable[tuple[Config, Outcome]]) -> list[CrashedRuns]:
    """Per config with at least one such run, in first-seen order."""
    failed: dict[Config, int] = {}
    crashed: dict[Config, list[tuple[str, str]]] = {}
    for config, outcome in outcomes:
        if not outcome.failed:
            continue
        failed[config] = failed.get(config, 0) + 1
        crash = log_traceback(outcome.log_path)
        if crash is not None:
            crashed.setdefault(config, []).append((crash.exception, outcome.log_path or ""))
    return [
        CrashedRuns(config, len(found), failed[config], found[-1][0], found[-1][1])
        for config, found in crashed.items()
    ]


def log_traceback(log_path: str | None) -> Traceback | None:
    """The last traceback in the log's tail, if any (its exception line ends the run)."""
    tail = read_tail(log_path, TAIL_BYTES) if log_path else None
    return None if tail is None else last_traceback(tail)


def warning_lines(found: list[CrashedRuns], describe: Callable[[Config], str]) -> list[str]:
    """A markdown section for a report; empty when no failed run logged a traceback."""
    if not found:
        return []
    lines = [
        "## Warning: failed runs that crashed",
        "",
        "These failed runs logged a Python traceback. If that exception is not the failure under",
        "study, the check itself is broken there, and its exit status 1 was read as \"failed\";",
        "make it exit 125 (untestable) where it cannot run.",
        "",
    ]
    lines += [
        f"- {describe(c.config)}: {c.crashed} of {c.failed} failed runs, e.g. `{c.exception}` ({c.log_path})"
        for c in found
    ]
    return lines + [""]


def summary(found: list[CrashedRuns]) -> str | None:
    """One line for the terminal, or None."""
    if not found:
        return None
    total = sum(c.crashed for c in found)
    return (
        f"warning: {total} failed runs logged a Python traceback (e.g. {found[-1].exception}); "
        "see the report's warning section"
    )
