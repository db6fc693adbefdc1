"""Ground truth for many flags, for tests and benchmarks of group screening (pure: an rng in, an outcome out).

The failure needs every *necessary condition* (a change that eliminates removes one) and at
least one *cause* firing in the run; a cause fires with its own probability and one change
removes it (two causes removed by two changes are an OR pair: each change alone only reduces
the failure). A *reducer* scales every cause down. A *breaker* makes the target untestable
(exit 125). Failed runs corrupt a correlated share of their sessions, as `FailureModel` does.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.simulation import FailureModel

Change = tuple[str, str]


@dataclass(frozen=True)
class FlagTruth:
    changes: tuple[Change, ...]
    causes: tuple[
        tuple[Change | None, float], ...
    ]  # (the change that removes it, firing rate); None: none does
    eliminators: frozenset[Change] = frozenset()
    reducers: tuple[tuple[Change, float], ...] = ()  # (change, factor on every cause's rate)
    breakers: frozenset[Change] = frozenset()
    sessions: int = 60
    severity: float = 0.2
    expected: dict[Change, str] = field(default_factory=dict)  # each change's true verdict

    def run_rate(self, config: Config) -> float:
        on = set(config.changes)
        if on & self.eliminators:
            return 0.0
        scale = 1.0
        for change, factor in self.reducers:
            if change in on:
                scale *= factor
        clean = 1.0
        for remover, rate in self.causes:
            if remover is None or remover not in on:
                clean *= 1.0 - rate * scale
        return 1.0 - clean

    def outcome(self, config: Config, index: int, rng: random.Random) -> Outcome:
        if set(config.changes) & self.breakers:
            return Outcome(
                f"t{index}",
                config.key,
                index,
                TrialStatus.SKIP,
                detail="exit 125",
                log_path=f"logs/t{index}.log",
            )
        model = FailureModel(self.run_rate(config), self.sessions, self.severity)
        return Outcome(
            f"t{index}", config.key, index, TrialStatus.OK, model.draw(rng), self.sessions
        )


def scenario(
    factors: int,
    rate: float,
    eliminators: int = 1,
    or_pair: bool = False,
    reducer: float | None = None,
    breakers: int = 1,
    seed: int = 0,
) -> FlagTruth:
    """``factors`` boolean flags ``f000=1``..., the effects placed at random positions."""
    rng = random.Random(seed)
    changes = tuple((f"f{i:03d}", "1") for i in range(factors))
    picked = rng.sample(changes, eliminators + 2 * or_pair + (reducer is not None) + breakers)
    elim, rest = picked[:eliminators], picked[eliminators:]
    pair, rest = (rest[:2], rest[2:]) if or_pair else ([], rest)
    red, rest = (rest[:1], rest[1:]) if reducer is not None else ([], rest)
    expected = {c: "no_effect" for c in changes}
    expected |= {c: "eliminates" for c in elim} | {c: "untestable" for c in rest}
    if or_pair:
        each = 1 - (1 - rate) ** 0.5  # two equal causes that together fail ``rate`` of runs
        causes = ((pair[0], each), (pair[1], each))
        expected |= {c: "reduces" for c in pair}
    else:
        causes = ((None, rate),)  # type: ignore[assignment]
    if red:
        expected[red[0]] = "reduces"
    return FlagTruth(
        changes=changes,
        causes=causes,
        eliminators=frozenset(elim),
        reducers=tuple((c, reducer) for c in red) if reducer is not None else (),
        breakers=frozenset(rest),
        expected=expected,
    )
