"""The contract between deciding logic and the engine that runs trials for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from heisenbisect.records import Config, Outcome


class Strategy(Protocol):
    """Picks the next trials from the evidence so far and says when it is done.

    Pure: no I/O, no clocks, no randomness beyond what it is constructed with, so that
    replaying the stored outcomes in arrival order rebuilds exactly the same state.
    """

    def observe(self, config: Config, outcome: Outcome) -> None:
        """Take one finished trial into account (live, or replayed from the store)."""

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        """Up to ``slots`` configs to run next, given how many trials of each are running."""

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        """Configs whose running trials are no longer needed (already decided): cancel them."""

    def finished(self) -> bool:
        """True once every question is decided or its budget is spent."""


class DecidingStrategy(Strategy, Protocol):
    """A strategy whose decisions so far can be read at any moment (screening, group screening)."""

    def result(self) -> Any:
        """The verdicts as they stand: interim while running, final once finished."""


def fill_slots(
    next_config: Callable[[Mapping[Config, int]], Config | None],
    in_flight: Mapping[Config, int],
    slots: int,
) -> list[Config]:
    """Up to ``slots`` configs, each chosen by ``next_config`` as if the ones before were already running."""
    chosen: list[Config] = []
    planned = dict(in_flight)
    for _ in range(max(0, slots)):
        config = next_config(planned)
        if config is None:
            break
        chosen.append(config)
        planned[config] = planned.get(config, 0) + 1
    return chosen


def fewest_runs_first(
    configs: Sequence[Config],
    done: Mapping[Config, int],
    in_flight: Mapping[Config, int],
    slots: int,
    cap: int,
) -> list[Config]:
    """Up to ``slots`` of ``configs``, each the one with the fewest runs done and planned (the
    first on a tie), none past ``cap`` runs: interleaved runs that keep the sides level."""

    def next_config(planned: Mapping[Config, int]) -> Config | None:
        config = min(configs, key=lambda c: done[c] + planned.get(c, 0))
        return config if done[config] + planned.get(config, 0) < cap else None

    return fill_slots(next_config, in_flight, slots)
