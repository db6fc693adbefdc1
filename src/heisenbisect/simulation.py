"""Ground-truth failure models for simulated targets and benchmarks (pure: an rng in, counts out).

A run fails with probability ``run_rate``; a failed run corrupts a correlated share of its
sessions (drawn from a Beta with mean ``severity``), as when timing goes bad for a whole
batch. ``severity`` = 1 and ``sessions`` = 1 give a plain pass/fail target. Standard
library only, so a simulated trial process starts in milliseconds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class FailureModel:
    run_rate: float
    sessions: int = 60
    severity: float = 0.2
    concentration: float = 10.0  # Beta a + b: smaller means more spread between failed runs

    def draw(self, rng: random.Random) -> int:
        """Failed sessions in one run."""
        if rng.random() >= self.run_rate:
            return 0
        if self.severity >= 1.0:
            return self.sessions
        a = self.severity * self.concentration
        share = rng.betavariate(a, self.concentration - a)
        return max(1, sum(rng.random() < share for _ in range(self.sessions)))

    def draw_runs(self, rng: random.Random, runs: int) -> list[int]:
        return [self.draw(rng) for _ in range(runs)]
