"""Drive a pure `Strategy` with a `Runner`, recording every outcome in the `Store` as it lands."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from heisenbisect.decide.strategy import Strategy
from heisenbisect.records import Config, Outcome, Trial, trial_seed
from heisenbisect.runners.base import Runner
from heisenbisect.store import Store

WAIT_S = 0.5


class Progress(Protocol):
    def update(self, in_flight: Counter[Config], last: Outcome | None) -> None: ...


TrialFactory = Callable[[Config, int, int], Trial]  # (config, index, seed) -> Trial


def replay(strategy: Strategy, store: Store) -> int:
    """Feed every stored outcome to ``strategy`` in arrival order; return how many."""
    stored = store.outcomes()
    for config, outcome in stored:
        strategy.observe(config, outcome)
    return len(stored)


@dataclass
class Engine:
    """The loop: propose, submit, wait, record, observe, cancel what became obsolete.

    A trial id is ``config + index``; an index already in the store is never reused, so a
    resumed study neither repeats a finished trial nor stores one twice. Trials that were
    running when a previous driver died left no outcome and simply run again.
    """

    strategy: Strategy
    runner: Runner
    store: Store
    study: str
    make_trial: TrialFactory
    progress: Progress | None = None
    # called once, after the first trials are submitted and before any outcome is recorded: what a
    # study must do before its trials' results but not before they start (probing the machine)
    dispatched: Callable[[], None] | None = None

    def run(self) -> None:
        in_flight: dict[str, Config] = {}
        cancelled: dict[str, Config] = {}
        next_index: dict[str, int] = {}
        dispatched = self.dispatched
        try:
            while not self.strategy.finished():
                counts = Counter(in_flight.values())
                slots = self.runner.capacity - len(in_flight)
                for config in self.strategy.propose(counts, slots) if slots > 0 else []:
                    trial = self._new_trial(config, next_index)
                    in_flight[trial.trial_id] = config
                    counts[config] += 1
                    self.runner.submit(trial)
                if (
                    dispatched is not None and in_flight
                ):  # a run that submits nothing records nothing
                    dispatched()
                    dispatched = None
                if not in_flight:
                    break  # nothing running and nothing proposed: the strategy has no more to ask
                if self.progress:
                    self.progress.update(Counter(in_flight.values()), None)
                self._land(self.runner.wait(timeout=WAIT_S), in_flight, cancelled)
                self._cancel_obsolete(in_flight, cancelled)
            # trials cancelled just after they finished still land: they are real evidence
            self._land(self.runner.wait(timeout=0), in_flight, cancelled)
        finally:
            self.runner.cancel(list(in_flight))

    def _land(
        self, outcomes: list[Outcome], in_flight: dict[str, Config], cancelled: dict[str, Config]
    ) -> None:
        """Record and observe finished trials, including ones cancelled after they finished."""
        for outcome in outcomes:
            config = in_flight.pop(outcome.trial_id, None) or cancelled.pop(outcome.trial_id)
            self.store.record(outcome, config)
            self.strategy.observe(config, outcome)
            if self.progress:
                self.progress.update(Counter(in_flight.values()), outcome)

    def _new_trial(self, config: Config, next_index: dict[str, int]) -> Trial:
        key = config.key
        if key not in next_index:
            used = self.store.used_indices(key)
            next_index[key] = max(used, default=-1) + 1
        index = next_index[key]
        next_index[key] = index + 1
        return self.make_trial(config, index, trial_seed(self.study, key, index))

    def _cancel_obsolete(self, in_flight: dict[str, Config], cancelled: dict[str, Config]) -> None:
        obsolete = set(self.strategy.obsolete(Counter(in_flight.values())))
        if not obsolete:
            return
        doomed = [tid for tid, config in in_flight.items() if config in obsolete]
        self.runner.cancel(doomed)
        for tid in doomed:
            cancelled[tid] = in_flight.pop(tid)
