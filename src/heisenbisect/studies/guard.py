"""Stop a study whose target evidently cannot run, instead of filling the store with errors.

Wraps the live strategy (never the one replayed for a report): the first outcome that says
the target never ran (command not found, script missing) ends the study at once while no
trial has produced a result; so do ``give_up_after`` trials in a row without a result.
"""

from __future__ import annotations

from collections.abc import Mapping

from heisenbisect.decide.strategy import Strategy
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.targets.protocol import is_never_ran


class NothingRunsGuard:
    """A `Strategy` that delegates to ``inner`` until the target is shown unable to run."""

    def __init__(self, inner: Strategy, results_so_far: int, give_up_after: int | None = None):
        self.inner = inner
        self.results = results_so_far
        self.without_result = 0
        self.give_up_after = give_up_after
        self.never_ran: Outcome | None = None
        self.gave_up = False

    @property
    def stopped(self) -> bool:
        return self.never_ran is not None or self.gave_up

    def observe(self, config: Config, outcome: Outcome) -> None:
        self.inner.observe(config, outcome)
        if outcome.status is TrialStatus.OK:
            self.results += 1
            return
        if self.results:
            return
        self.without_result += 1
        if is_never_ran(outcome) and self.never_ran is None:
            self.never_ran = outcome
        if self.give_up_after is not None and self.without_result >= self.give_up_after:
            self.gave_up = True

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        return [] if self.stopped else self.inner.propose(in_flight, slots)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        if self.stopped:
            return [config for config, count in in_flight.items() if count]
        return self.inner.obsolete(in_flight)

    def finished(self) -> bool:
        return self.stopped or self.inner.finished()
