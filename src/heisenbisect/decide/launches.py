"""Are the runs one server launch serves independent? The check behind ``trials_per_launch`` > 1.

With several trials per launch the design is mixed: launches are nested in configs, and a race
decided per launch (sgl-project/sglang PR 37768) or a server left in a bad state until restart
makes a launch's runs alike. The screening statistics count runs as independent; that is right
when launches do not differ, and overconfident when they do. So the runs are tested for launch
heterogeneity: within each config, Pearson's statistic of the launches x (failed, clean) table,
summed over configs; its null distribution by shuffling run outcomes among the launches of
their own config (exact in distribution, conditional on each launch's size and each config's
failures). A small p says launches differ. A large one is no proof of independence: with few
launches the test sees only strong per-launch effects (benchmarks/launch_independence.py gives
its power).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heisenbisect.records import Config, Outcome, TrialStatus

PERMUTATIONS = 4000
ALPHA = 0.05
LAUNCH = "launch"  # the metric the server target records when a launch serves several trials


@dataclass(frozen=True)
class LaunchCheck:
    launches: int  # launches that served runs
    runs: int
    most_per_launch: int
    p_value: float | None  # None: no config had two launches and both outcomes, nothing to test

    @property
    def dependent(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA


Runs = Mapping[Any, Mapping[Any, Sequence[bool]]]  # config -> launch -> failed? per run


def statistic(runs: Runs) -> float:
    """Pearson's chi-square of launch x outcome, summed over configs (0 for a config without variation)."""
    return sum(
        _config_statistic([np.asarray(v, dtype=float) for v in launches.values()])
        for launches in runs.values()
    )


def check_launches(runs: Runs, permutations: int = PERMUTATIONS, seed: int = 0) -> LaunchCheck:
    """The heterogeneity test of ``runs``, reproducible for a given ``seed``."""
    launches = [v for config in runs.values() for v in config.values() if len(v)]
    total = sum(len(v) for v in launches)
    most = max((len(v) for v in launches), default=0)
    testable = {
        c: ls
        for c, ls in runs.items()
        if len(ls) > 1 and 0 < sum(map(sum, ls.values())) < sum(map(len, ls.values()))
    }
    if not testable:
        return LaunchCheck(len(launches), total, most, None)
    rng = np.random.default_rng(seed)
    observed = statistic(testable)
    null = np.zeros(permutations)
    for config in testable.values():
        sizes = [len(v) for v in config.values()]
        outcomes = np.concatenate([np.asarray(v, dtype=float) for v in config.values()])
        shuffled = rng.permuted(np.tile(outcomes, (permutations, 1)), axis=1)
        null += _batch_statistic(shuffled, sizes)
    exceed = int(np.sum(null >= observed - 1e-9))
    return LaunchCheck(len(launches), total, most, (1 + exceed) / (1 + permutations))


def launches_of(outcomes: Iterable[tuple[Config, Outcome]]) -> LaunchCheck | None:
    """The heterogeneity test of a study's runs; None when no run named its launch (one launch
    per trial)."""
    runs: dict[str, dict[float, list[bool]]] = {}
    for config, outcome in outcomes:
        if outcome.status is TrialStatus.OK and LAUNCH in outcome.metrics:
            runs.setdefault(config.key, {}).setdefault(outcome.metrics[LAUNCH], []).append(
                outcome.failed
            )
    return check_launches(runs) if runs else None


def _config_statistic(launches: list[np.ndarray]) -> float:
    sizes = [len(v) for v in launches]
    row = np.concatenate(launches)[None, :]
    return float(_batch_statistic(row, sizes)[0])


def _batch_statistic(outcomes: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Pearson's statistic of each row of ``outcomes`` (runs in launch order, launches of ``sizes``)."""
    n = outcomes.shape[1]
    p = outcomes.mean(axis=1)
    variance = p * (1 - p)
    edges = np.cumsum([0, *sizes])
    spread = sum(
        size * (outcomes[:, a:b].mean(axis=1) - p) ** 2
        for size, a, b in zip(sizes, edges, edges[1:])
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(variance > 0, spread / np.where(variance > 0, variance, 1.0), 0.0) * (n > 0)
