"""How each trial's log ends, read once for the studies' evidence (`decide.evidence`,
`decide.crashes`): the last line the target printed and the last Python traceback.

The logs are the targets' own (`targets.command` writes each stream under a label, and cuts a
long one), so the labels are skipped here, where they are known.
"""

from __future__ import annotations

import re

from heisenbisect.decide.evidence import LogEnding
from heisenbisect.targets.log_tail import read_tail
from heisenbisect.targets.tracebacks import last_traceback

TAIL_BYTES = 16 * 1024  # what ended a run, its exception included, is at the end of its log
_LOG_LABEL = re.compile(
    r"^(--- (stdout|stderr) \(\d+ bytes\) ---|\[heisenbisect: \d+ bytes of \w+ cut here\])$"
)


class LogEndings:
    """``ending_of`` for the deciding rules: each log read at most once per study's report."""

    def __init__(self) -> None:
        self._read: dict[str, LogEnding] = {}

    def __call__(self, log_path: str | None) -> LogEnding:
        if not log_path:
            return LogEnding()
        if log_path not in self._read:
            self._read[log_path] = log_ending(log_path)
        return self._read[log_path]


def log_ending(log_path: str) -> LogEnding:
    """The log's ending; all None when it cannot be read (a study folder moved or tidied away)."""
    tail = read_tail(log_path, TAIL_BYTES)
    if tail is None:
        return LogEnding()
    crash = last_traceback(tail)
    if crash is None:
        return LogEnding(last_output_line(tail))
    return LogEnding(last_output_line(tail), crash.exception, crash.kind)


def last_output_line(tail: str) -> str | None:
    """The last line the target printed (stderr's, else stdout's), ignoring the log's labels."""
    for line in reversed(tail.splitlines()):
        if line.strip() and not _LOG_LABEL.match(line):
            return line.strip()[:200]
    return None
