"""A smallest set of changes that stops the failure: ddmin (Zeller & Hildebrandt) under noise.

The set being reduced stops the failure; a probe asks whether a subset of it still does.
Under the monotonicity that group testing already assumes (adding a change never brings the
failure back), a subset of a set that keeps failing keeps failing, so only complements are
informative: ddmin's "reduce to complement" steps, with the granularity doubling when no
complement stops the failure. Each probe's answer comes from the search's sequential test
(`sequential.ZeroTest`: "stops" is a rate shown below zero_rate, "fails" one shown above it;
no single failed run decides), so an answer is wrong with chance ``miss_rate``, not never.
A reduction has a budget of probes run: once spent, ``current`` (the smallest set shown to
stop so far) is what it reports, with ``exhausted`` set, its members not separated. The
result is a candidate only, which a sequential arm then confirms or not on fresh runs.
"""

from __future__ import annotations

Change = tuple[str, str]


def partition(changes: tuple[Change, ...], parts: int) -> list[tuple[Change, ...]]:
    """``changes`` in ``parts`` contiguous chunks of near-equal size (the first ones larger)."""
    size, extra = divmod(len(changes), parts)
    chunks, start = [], 0
    for i in range(parts):
        end = start + size + (i < extra)
        chunks.append(changes[start:end])
        start = end
    return chunks


class Reduction:
    """ddmin over complements: ``probe()`` names the next subset to test, ``record`` its answer."""

    def __init__(self, changes: tuple[Change, ...], budget: int | None = None):
        self.current = tuple(changes)
        self.granularity = 2
        self.index = 0
        self.done = len(self.current) <= 1
        self.budget = budget
        self.probes_run = 0
        self.exhausted = False  # the budget ran out before ``current`` was 1-minimal

    def probe(self) -> tuple[Change, ...] | None:
        """The subset to test next, or None once ``current`` is 1-minimal."""
        if self.done:
            return None
        removed = set(partition(self.current, self.granularity)[self.index])
        return tuple(c for c in self.current if c not in removed)

    def record(self, stops: bool, ran: bool = True) -> None:
        """The probe's answer: True if that subset also stops the failure. ``ran``: False for an
        answer known without running it (implied by earlier answers), which costs no budget."""
        probe = self.probe()
        if probe is None:
            return
        self.probes_run += ran
        self._step(stops)
        if not self.done and self.budget is not None and self.probes_run >= self.budget:
            self.done = self.exhausted = True

    def _step(self, stops: bool) -> None:
        probe = self.probe()
        if stops:
            self.current = probe
            self.granularity = max(self.granularity - 1, 2)
            self.index = 0
            self.done = len(self.current) <= 1
            return
        self.index += 1
        if self.index < self.granularity:
            return
        if self.granularity >= len(self.current):
            self.done = True  # no single change can be removed: 1-minimal
        else:
            self.granularity = min(2 * self.granularity, len(self.current))
            self.index = 0
