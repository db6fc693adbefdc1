"""`bisect watch`'s two tests, pure: bound a head's run-failure rate, then test a new head
against the last known good.

**Recording** runs one commit at the looks of `sequential.Schedule` (first_look, 2x, ... the
cap) until its exact rate interval is at most ``margin`` wide (one-sided Clopper-Pearson bounds
at ``confidence`` each), or the cap: the rate a later head is held to.

**Comparing** interleaves runs at the new head and at the last known good (head, good, head, ...),
so a machine that got busier since shows on both sides. At each look (n head runs and the
first n fresh good runs, plus the good's recorded runs) one-sided Fisher's exact test asks
whether the head's runs fail more often; alpha is spent over the looks by `sequential.spend`
(weighted Bonferroni), so a head as good as the last known good is called worse with chance at
most ``1 - confidence`` however many looks were taken (checked by simulation in
tests/decide/test_watch.py). The head is *not worse* once its upper bound is within ``margin``
of the good's lower bound (a non-inferiority claim, which cannot raise a false regression);
at the cap with neither, it is *undecided* and does not replace the last known good.

The unit is the failed run, as in the commit bisection these results feed.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from heisenbisect.decide import stats
from heisenbisect.decide.sequential import Schedule, spend
from heisenbisect.records import Config, Outcome, TrialStatus

MAX_ERROR_FRACTION = 0.5  # more errored runs than this (of the cap) end a step without evidence


@dataclass(frozen=True)
class WatchSettings:
    """How sure a step must be, and how much it may run."""

    confidence: float = 0.95
    margin: float = 0.1  # the smallest rise in the run-failure rate worth a regression
    first_look: int = 10
    max_runs: int = 100  # runs of each side at most

    def __post_init__(self) -> None:
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must lie in (0.5, 1), got {self.confidence}")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must lie in (0, 1), got {self.margin}")
        if not 1 <= self.first_look <= self.max_runs:
            raise ValueError(
                f"need 1 <= first_look <= max_runs, got {self.first_look}, {self.max_runs}"
            )

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    def schedule(self) -> Schedule:
        return Schedule.geometric(self.first_look, self.max_runs)


class StepState(str, enum.Enum):
    RUNNING = "running"
    BOUNDED = "bounded"  # recording: the rate is bounded (or the cap reached)
    NOT_WORSE = "not_worse"  # comparing: the head is within margin of the last known good
    WORSE = "worse"  # comparing: significantly more failed runs than the last known good
    UNDECIDED = "undecided"  # comparing: the cap reached with neither
    NO_VALID_RUNS = "no_valid_runs"  # too many runs errored to say anything


@dataclass
class Tally:
    """The runs of one commit in one step: ok runs in arrival order (True: failed), and errors."""

    failed: list[bool]
    errors: int = 0

    @classmethod
    def empty(cls) -> Tally:
        return cls([])

    def add(self, outcome: Outcome) -> None:
        if outcome.status is TrialStatus.OK:
            self.failed.append(outcome.failures > 0)
        else:
            self.errors += 1

    @property
    def runs(self) -> int:
        return len(self.failed)

    def failures(self, first: int | None = None) -> int:
        return sum(self.failed[:first])


@dataclass(frozen=True)
class Rate:
    """A commit's run-failure rate as measured: runs, failed runs, and the exact bounds."""

    runs: int
    failed: int
    low: float
    high: float

    @classmethod
    def of(cls, failed: int, runs: int, confidence: float) -> Rate:
        low, high = one_sided_bounds(failed, runs, confidence)
        return cls(runs, failed, low, high)


def one_sided_bounds(failed: int, runs: int, confidence: float) -> tuple[float, float]:
    """The exact lower and upper bounds, each one-sided at ``confidence``."""
    low = stats.clopper_pearson_interval(failed, runs, 2 * confidence - 1)[0] if failed else 0.0
    return low, stats.clopper_pearson_upper(failed, runs, confidence)


def worse_pvalue(head_failed: int, head_runs: int, good_failed: int, good_runs: int) -> float:
    """One-sided Fisher's exact test: does the head fail more runs than the good commit?"""
    from scipy.stats import fisher_exact

    if head_runs == 0 or good_runs == 0 or head_failed == 0:
        return 1.0
    table = [[head_failed, head_runs - head_failed], [good_failed, good_runs - good_failed]]
    return float(fisher_exact(table, alternative="greater").pvalue)


class RecordStrategy:
    """Runs ``commit`` until its rate is bounded within ``margin`` (at a look) or the cap."""

    def __init__(self, commit: str, settings: WatchSettings, base: Config = Config()):
        self.config = Config(changes=base.changes, commit=commit)
        self.settings = settings
        self.schedule = settings.schedule()
        self.tally = Tally.empty()
        self.state = StepState.RUNNING

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config != self.config or self.state is not StepState.RUNNING:
            return
        self.tally.add(outcome)
        runs, s = self.tally.runs, self.settings
        if self.tally.errors > MAX_ERROR_FRACTION * s.max_runs:
            self.state = StepState.NO_VALID_RUNS
        elif runs in self.schedule.sizes:
            rate = self.rate()
            if rate.high - rate.low <= s.margin or runs >= s.max_runs:
                self.state = StepState.BOUNDED

    def rate(self) -> Rate:
        return Rate.of(self.tally.failures(), self.tally.runs, self.settings.confidence)

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        target = next(n for n in self.schedule.sizes if n > self.tally.runs)
        wanted = target - self.tally.runs - in_flight.get(self.config, 0)
        return [self.config] * max(0, min(slots, wanted))

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return list(in_flight) if self.finished() else []

    def finished(self) -> bool:
        return self.state is not StepState.RUNNING


@dataclass(frozen=True)
class Comparison:
    """Where a comparison stands: both sides' rates, the spent p-value, the look reached."""

    state: StepState
    head: Rate
    good: Rate  # the recorded runs and the fresh ones together
    sequential_p: float
    looks: int


class CompareStrategy:
    """Interleaved runs at ``head`` and ``good``; stops at the first look that decides.

    ``recorded`` is (runs, failed runs) of the good commit from the step that made it good.
    """

    def __init__(
        self,
        head: str,
        good: str,
        recorded: tuple[int, int],
        settings: WatchSettings,
        base: Config = Config(),
    ):
        self.head = Config(changes=base.changes, commit=head)
        self.good = Config(changes=base.changes, commit=good)
        self.recorded = recorded
        self.settings = settings
        self.schedule = settings.schedule()
        self.tallies = {self.head: Tally.empty(), self.good: Tally.empty()}
        self.looks = 0
        self.sequential_p = 1.0
        self.state = StepState.RUNNING

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config not in self.tallies or self.state is not StepState.RUNNING:
            return
        self.tallies[config].add(outcome)
        if (
            sum(t.errors for t in self.tallies.values())
            > 2 * MAX_ERROR_FRACTION * self.settings.max_runs
        ):
            self.state = StepState.NO_VALID_RUNS
            return
        while self.state is StepState.RUNNING and (look := self.schedule.next(self.looks)):
            if min(t.runs for t in self.tallies.values()) < look.size:
                return
            self._look(look.size, look.weight)

    def _look(self, n: int, weight: float) -> None:
        self.looks += 1
        head, good = self._rates(n)
        p = worse_pvalue(head.failed, head.runs, good.failed, good.runs)
        self.sequential_p = spend(self.sequential_p, p, weight)
        if self.sequential_p <= self.settings.alpha:
            self.state = StepState.WORSE
        elif head.high - good.low <= self.settings.margin:
            self.state = StepState.NOT_WORSE
        elif self.looks >= len(self.schedule):
            self.state = StepState.UNDECIDED

    def _rates(self, n: int | None) -> tuple[Rate, Rate]:
        """The head's first ``n`` runs; the good's recorded runs and its first ``n`` fresh ones."""
        c = self.settings.confidence
        h, g = self.tallies[self.head], self.tallies[self.good]
        runs, failed = self.recorded
        head = Rate.of(h.failures(n), min(h.runs, n or h.runs), c)
        good = Rate.of(failed + g.failures(n), runs + min(g.runs, n or g.runs), c)
        return head, good

    def comparison(self) -> Comparison:
        """The decision and the rates it read (all runs so far while running)."""
        decided = self.schedule.sizes[self.looks - 1] if self.looks and self.finished() else None
        head, good = self._rates(decided if self.state is not StepState.NO_VALID_RUNS else None)
        return Comparison(self.state, head, good, self.sequential_p, self.looks)

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        """Alternate the two sides, the one with fewer runs (done and under way) first."""
        if self.finished():
            return []
        target = self.schedule.target(self.looks)
        planned = {c: t.runs + in_flight.get(c, 0) for c, t in self.tallies.items()}
        chosen: list[Config] = []
        for _ in range(max(0, slots)):
            side = min((self.head, self.good), key=lambda c: (planned[c], c != self.head))
            if planned[side] >= target:
                break
            chosen.append(side)
            planned[side] += 1
        return chosen

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return list(in_flight) if self.finished() else []

    def finished(self) -> bool:
        return self.state is not StepState.RUNNING
