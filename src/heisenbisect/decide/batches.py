"""A strategy driven one batch at a time, so parallel results cannot change what it asks next.

With several trials in flight, a strategy that observes each outcome as it lands decides its
next probe from whichever results came back first: the same study with the same seeds then
makes different probes from run to run (arrival order depends on load). `Batched` asks the
strategy for a whole batch (one probe per free slot), holds the batch's outcomes until the
last of them lands, and then hands them over in a fixed order (config, then trial index). Each
batch is then a function of the earlier batches' outcomes alone, and the trial seeds are fixed
by study, config and index, so the whole search replays exactly. The price: a slot that frees
early waits for the rest of its batch (`docs/bisection.md`, "Parallel probes").

Outcomes that belong to no batch of this driver (a replay of the store) pass straight through.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from heisenbisect.decide.strategy import Strategy
from heisenbisect.records import Config, Outcome


class Batched:
    """``inner`` proposed to and observed one whole batch at a time."""

    def __init__(self, inner: Strategy):
        self.inner = inner
        self._outstanding: Counter[Config] = Counter()
        self._held: list[tuple[Config, Outcome]] = []

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self._outstanding:
            return []  # the batch is still running: its outcomes are not all known
        batch = self.inner.propose(in_flight, slots)
        self._outstanding = Counter(batch)
        return batch

    def observe(self, config: Config, outcome: Outcome) -> None:
        if self._outstanding[config] <= 0:
            self._outstanding.pop(config, None)
            self.inner.observe(config, outcome)
            return
        self._outstanding[config] -= 1
        if not self._outstanding[config]:
            del self._outstanding[config]
        self._held.append((config, outcome))
        if not self._outstanding:
            held, self._held = self._held, []
            for held_config, held_outcome in sorted(
                held, key=lambda pair: (pair[0].key, pair[1].index)
            ):
                self.inner.observe(held_config, held_outcome)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return self.inner.obsolete(in_flight)

    def finished(self) -> bool:
        return self.inner.finished()
