"""The report's warning on failed runs that crashed, and its line for the terminal.

Which failed runs logged a Python traceback is found in `decide.crashes` (why it matters is
said there); this module only words it.
"""

from __future__ import annotations

from collections.abc import Callable

from heisenbisect.decide.crashes import CrashedRuns
from heisenbisect.records import Config


def warning_lines(found: list[CrashedRuns], describe: Callable[[Config], str]) -> list[str]:
    """A markdown section for a report; empty when no failed run logged a traceback."""
    if not found:
        return []
    lines = [
        "## Warning: failed runs that crashed",
        "",
        "These failed runs logged a Python traceback. If that exception is not the failure under",
        'study, the check itself is broken there, and its exit status 1 was read as "failed";',
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
