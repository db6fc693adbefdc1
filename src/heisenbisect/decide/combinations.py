"""A smallest set of changes that stops the failure: ddmin (Zeller & Hildebrandt) under noise.

The set being reduced stops the failure; a probe asks whether a subset of it still does.
Under the monotonicity that group testing already assumes (adding a change never brings the
failure back), a subset of a set that keeps failing keeps failing, so only complements are
informative: ddmin's "reduce to complement" steps, with the granularity doubling when no
complement stops the failure. Each probe's answer comes from the noisy search test of
`decide.group` (a failed run proves "keeps failing"; a run of clean runs says "stops"); the
result is a candidate only, which a sequential arm then confirms or not.
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

    def __init__(self, changes: tuple[Change, ...]):
        self.current = tuple(changes)
        self.granularity = 2
        self.index = 0
        self.done = len(self.current) <= 1

    def probe(self) -> tuple[Change, ...] | None:
        """The subset to test next, or None once ``current`` is 1-minimal."""
        if self.done:
            return None
        removed = set(partition(self.current, self.granularity)[self.index])
        return tuple(c for c in self.current if c not in removed)

    def record(self, stops: bool) -> None:
        """The probe's answer: True if that subset also stops the failure."""
        probe = self.probe()
        if probe is None:
            return
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
