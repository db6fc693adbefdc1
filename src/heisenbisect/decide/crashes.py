"""Failed runs whose log ends in a Python traceback: perhaps a broken target, not the bug.

A traceback of the could-not-run kind (an ImportError at an old commit, a SyntaxError) makes
its run untestable already (`targets.tracebacks`). Any other exception that ends a run read
by its exit code (an AttributeError from a typo in the stress script) exits 1, which reads
as "failed", and nothing tells such a crash from the bug for certain; so the studies point
at it: per config, how many failed runs logged a traceback, and the exception line of one
of them (`reports.tracebacks` words it). A check that cannot test a commit should exit 125
(untestable) instead. Pure: how a log ended comes from ``ending_of``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from heisenbisect.decide.evidence import EndingOf
from heisenbisect.records import Config, Outcome


@dataclass(frozen=True)
class CrashedRuns:
    """The failed runs of one config whose logs hold a traceback."""

    config: Config
    crashed: int
    failed: int
    exception: str  # the exception line of the latest such log, e.g. "ModuleNotFoundError: ..."
    log_path: str


def crashed_runs(
    outcomes: Iterable[tuple[Config, Outcome]], ending_of: EndingOf
) -> list[CrashedRuns]:
    """Per config with at least one such run, in first-seen order."""
    failed: dict[Config, int] = {}
    crashed: dict[Config, list[tuple[str, str]]] = {}
    for config, outcome in outcomes:
        if not outcome.failed:
            continue
        failed[config] = failed.get(config, 0) + 1
        exception = ending_of(outcome.log_path).exception
        if exception is not None:
            crashed.setdefault(config, []).append((exception, outcome.log_path or ""))
    return [
        CrashedRuns(config, len(found), failed[config], found[-1][0], found[-1][1])
        for config, found in crashed.items()
    ]
