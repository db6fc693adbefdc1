"""Helpers shared by the runner tests."""

from __future__ import annotations

import time

from heisenbisect.records import Outcome


def drain(runner, expected: int, limit_s: float = 60) -> list[Outcome]:
    """Wait for ``expected`` outcomes from ``runner``, or until ``limit_s`` passes."""
    outcomes: list[Outcome] = []
    deadline = time.monotonic() + limit_s
    while len(outcomes) < expected and time.monotonic() < deadline:
        outcomes.extend(runner.wait(timeout=0.5))
    return outcomes
