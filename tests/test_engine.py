"""The engine between a strategy, a real local runner and a real store."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping

from heisenbisect.engine import Engine
from heisenbisect.records import Config, Outcome, Trial, trial_id
from heisenbisect.runners.local import LocalRunner
from heisenbisect.store import Store
from heisenbisect.targets.command import CommandTarget

ARM = Config((("overlap", "0"),))


class TwoTrials:
    """Wants two trials of one config, then is finished."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.proposed = False

    def observe(self, config: Config, outcome: Outcome) -> None:
        self.seen.append(outcome.trial_id)

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.proposed:
            return []
        self.proposed = True
        return [ARM, ARM]

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return []

    def finished(self) -> bool:
        return len(self.seen) == 2


class DecideAfterFirst(TwoTrials):
    """Wants two trials of one config and is decided by the first outcome; it thinks slowly,
    so the second trial finishes before the engine cancels it."""

    def observe(self, config: Config, outcome: Outcome) -> None:
        super().observe(config, outcome)
        time.sleep(0.6)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return [ARM] if self.seen and in_flight.get(ARM) else []

    def finished(self) -> bool:
        return False


def make_trial(config: Config, index: int, seed: int) -> Trial:
    # trial 0 ends at once, trial 1 a moment later: while the strategy thinks about trial 0
    return Trial(trial_id(config.key, index), config, index, seed, args=(str(0.05 + 0.3 * index),))


def test_a_trial_finishing_just_before_its_cancellation_is_recorded_not_lost(tmp_path):
    target = CommandTarget((sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))"), timeout_s=30)
    strategy = DecideAfterFirst()
    with Store(tmp_path / "s.sqlite") as store, LocalRunner(target, tmp_path / "logs", parallel=2) as runner:
        Engine(strategy, runner, store, "s", make_trial).run()
        stored = [o.trial_id for _, o in store.outcomes()]
    assert stored == strategy.seen
    assert len(stored) == len(set(stored)) == 2
    assert Counter(stored) == Counter(trial_id(ARM.key, i) for i in (0, 1))


class CountingRunner(LocalRunner):
    """The real local runner, counting the trials handed to it."""

    submitted = 0

    def submit(self, trial: Trial) -> None:
        self.submitted += 1
        super().submit(trial)


def test_the_dispatched_hook_runs_once_after_the_first_trials_start_and_before_any_outcome_is_stored(tmp_path):
    """A study probes the machine there (studies.drive): after the first trials were handed to
    the runner, so the probes do not delay them, and before an outcome, so the record precedes them."""
    target = CommandTarget((sys.executable, "-c", "import time; time.sleep(0.2)"), timeout_s=30)
    calls: list[tuple[int, int]] = []
    with Store(tmp_path / "s.sqlite") as store, CountingRunner(target, tmp_path / "logs", parallel=2) as runner:
        engine = Engine(TwoTrials(), runner, store, "s", make_trial,
                        dispatched=lambda: calls.append((runner.submitted, store.count())))
        engine.run()
        assert store.count() == 2
    assert calls == [(2, 0)]  # once: both trials submitted, none stored
