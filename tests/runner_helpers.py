"""Helpers shared by the runner tests."""

from __future__ import annotations

import time
from pathlib import Path

from heisenbisect.records import Outcome


def drain(runner, expected: int, limit_s: float = 60) -> list[Outcome]:
    """Wait for ``expected`` outcomes from ``runner``, or until ``limit_s`` passes."""
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + limit_s
    while len(outcomes) < expected and time.monotonic() < deadline:
        outcomes.extend(runner.wait(timeout=0.5))
    return outcomes


def stdout_of(log_path: str | Path) -> str:
    """What a trial printed on stdout, from its labelled log (``--- stdout (N bytes) ---``)."""
    text = Path(log_path).read_text()
    if not text.startswith("--- stdout"):
        return text  # a log the runner wrote itself (a lost worker): no sections
    body = text.split("\n", 1)[1]
    return body.split("--- stderr (", 1)[0]
