"""Ground-truth failure models for simulated targets and benchmarks (pure: an rng in, counts out).

A run fails with probability ``run_rate``; a failed run corrupts a correlated share of its
sessions (drawn from a Beta with mean ``severity``), as when timing goes bad for a whole
batch. ``severity`` = 1 and ``sessions`` = 1 give a plain pass/fail target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FailureModel:
    run_rate: float
    sessions: int = 60
    severity: float = 0.2
    concentration: float = 10.0  # Beta a + b: smaller means more spread between failed runs

    def draw(self, rng: np.random.Generator, runs: int = 1) -> np.ndarray:
        """Failures per run, for ``runs`` runs."""
        failed = rng.random(runs) < self.run_rate
        if self.severity >= 1.0:
            shares = np.ones(runs)
        else:
            a = self.severity * self.concentration
            shares = rng.beta(a, self.concentration - a, runs)
        counts = rng.binomial(self.sessions, shares)
        return np.where(failed, np.maximum(counts, 1), 0)
