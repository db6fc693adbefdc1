"""Side signals in the server's log: lines that precede visible corruption, counted as failures.

Real corruption threads show signals before the garbage: xgrammar's ``Failed to advance FSM``,
speculative decoding's acceptance collapsing to 0%. A `LogSignal` names a regex; with ``below``,
the regex's first group is a number and only lines where it is below the floor count (vLLM:
``Avg Draft acceptance rate: 0.0%``; SGLang: ``accept len: 1.00``). Each counted line is one
failure of the signal's own class, so a study can hunt the signal instead of the corruption.

A per-trial check: it reads no reply, only the server's log after the trial (the server target
calls `count_signals`), so it gives no session class and has no section under ``checks:``; its
spec keys are the server section's ``signals.log`` (only a launched server has a log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from heisenbisect.checks.base import Check


@dataclass(frozen=True)
class LogSignal:
    name: str
    pattern: str
    below: float | None = None  # count a line only when the pattern's first group is below this

    def counts(self, line: str) -> bool:
        match = re.search(self.pattern, line)
        if match is None:
            return False
        if self.below is None:
            return True
        try:
            return float(match.group(1)) < self.below
        except (IndexError, TypeError, ValueError):
            return False


def count_signals(signals: tuple[LogSignal, ...], text: str) -> dict[str, int]:
    """Each signal's counted lines in ``text``; signals that counted none are left out."""
    counts = {s.name: sum(1 for line in text.splitlines() if s.counts(line)) for s in signals}
    return {name: n for name, n in counts.items() if n}


def signal_line(counts: dict[str, int]) -> str:
    """``signals: fsm=3 spec_accept=1`` for the tally; empty when none counted."""
    return ("signals: " + " ".join(f"{k}={v}" for k, v in sorted(counts.items()))) if counts else ""


class LogSignalsCheck(Check):
    name = "log_signals"
    settings_model = None


CHECK = LogSignalsCheck()
