"""Known-answer accuracy as the report shows it beside an arm's run-failure rate.

The `answers` check adds ``answers_asked`` and ``answers_right`` to each run's metrics; an arm's
metrics are their means over its runs, so their ratio is the arm's pooled accuracy. A baseline
below 100% says the model gets the questions wrong regardless of the change under test.
"""

from __future__ import annotations

from collections.abc import Mapping

from heisenbisect.reports.text import percent

ASKED, RIGHT = "answers_asked", "answers_right"


def shown(metrics: Mapping[str, float]) -> bool:
    """Whether the runs asked known-answer questions (the `answers` check was on)."""
    return bool(metrics.get(ASKED))


def accuracy_cell(metrics: Mapping[str, float]) -> str:
    """``97.5% (39/40 per run)``, or ``-`` for an arm whose runs asked none."""
    asked = metrics.get(ASKED) or 0.0
    if not asked:
        return "-"
    right = metrics.get(RIGHT, 0.0)
    return f"{percent(right / asked)} ({right:.3g}/{asked:.3g} per run)"
