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

A probe's "stops" can be wrong, and ddmin cannot see it: every subset of a set that only seemed
to stop fails, which ddmin reads as "refine" to the end. So before refining past a whole failed
round of three or more complements, a set that a probe showed to stop is asked again on fresh
runs (``asking_again``); if it fails now, the reduction steps back to the set before it and
reads that probe as failing. A set holding one OR member (7.8%) once stopped on 108 clean runs
in a row (a 1.6e-4 chance), and ddmin ran 61 probes inside it: 46 409 trials.
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
        self.checked = True  # ``current`` was not shown to stop by a probe of this reduction, or was asked again
        self.asking_again = False  # the next probe is ``current`` itself, on fresh runs
        self._before: list[
            tuple[tuple[Change, ...], int, int, bool]
        ] = []  # the state before each stop

    def probe(self) -> tuple[Change, ...] | None:
        """The subset to test next (``current`` itself while asking again), or None once ``current`` is 1-minimal."""
        if self.done:
            return None
        if self.asking_again:
            return self.current
        removed = set(partition(self.current, self.granularity)[self.index])
        return tuple(c for c in self.current if c not in removed)

    def record(self, stops: bool, ran: bool = True) -> None:
        """The probe's answer: True if that subset also stops the failure. ``ran``: False for an
        answer known without running it (implied by earlier answers), which costs no budget."""
        probe = self.probe()
        if probe is None:
            return
        self.probes_run += ran
        if self.asking_again:
            self._answered_again(stops)
        else:
            self._step(stops, ran)
        if not self.done and self.budget is not None and self.probes_run >= self.budget:
            self.done = self.exhausted = True

    def _step(self, stops: bool, ran: bool) -> None:
        probe = self.probe()
        if stops and probe is not None:
            self._before.append((self.current, self.granularity, self.index, self.checked))
            self.current = probe
            self.checked = not ran  # an answer implied by earlier arms is as sure as they are
            self.granularity = max(self.granularity - 1, 2)
            self.index = 0
            self.done = len(self.current) <= 1
            return
        self.index += 1
        if self.index < self.granularity:
            return
        if 3 <= self.granularity < len(self.current) and not self.checked:
            # refining would trust one probe's stop with every probe to come; and at 3 chunks or more one
            # holds neither member of a pair, whose complement stops, so a whole round failing says either
            # the set holds three or more needed changes or the stop was wrong (at 2 a pair split is common)
            self.asking_again = True
            return
        self._refine()

    def _answered_again(self, stops: bool) -> None:
        """``current`` asked again on fresh runs: refine it if it still stops, else step back."""
        self.asking_again, self.checked = False, True
        if stops:
            self._refine()
            return
        self.current, self.granularity, self.index, self.checked = self._before.pop()
        self._step(
            False, ran=True
        )  # the probe that led to the set that only seemed to stop: it fails

    def _refine(self) -> None:
        if self.granularity >= len(self.current):
            self.done = True  # no single change can be removed: 1-minimal
        else:
            self.granularity = min(2 * self.granularity, len(self.current))
            self.index = 0
