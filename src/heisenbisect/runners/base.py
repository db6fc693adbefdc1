"""The two contracts of execution: a `TrialTarget` runs one trial, a `Runner` schedules many."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType
from typing import ClassVar

from heisenbisect.records import Outcome, Trial


class TrialTarget(ABC):
    """Runs one trial to completion, blocking, and says how it ended.

    Contract:
    - returns exactly one `Outcome` per call; a failing, crashing, hanging or
      untestable target is an outcome (status ``ok``/``error``/``timeout``/``skip``),
      never an exception;
    - writes everything the target printed to ``log_path``;
    - returns promptly (status ``error``, detail ``cancelled``) once ``cancelled`` is set,
      leaving no process behind;
    - may be called from several threads at once, for different trials;
    - must be picklable when built, so a Ray runner can ship it to workers.
    Only broken infrastructure (cannot create a log file, say) raises.
    """

    keeps_state: ClassVar[bool] = False
    """True when ``execute`` reuses something across trials of one config (a server): the Ray
    runner then runs each config's trials in one actor that holds the config's resources."""

    @abstractmethod
    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome: ...

    def close(self) -> None:
        """Release what the target keeps between trials (servers); idempotent."""


class Runner(ABC):
    """Runs trials somewhere (threads here, a Ray cluster) and streams their outcomes back.

    Contract (every implementation passes ``tests/test_runner_contract.py``):
    - ``submit`` never blocks on a trial's completion; trials beyond ``capacity`` queue;
    - ``wait`` returns the outcomes finished since the last call, each submitted trial's
      exactly once, or an empty list once ``timeout`` passes;
    - ``cancel`` stops trials not yet finished; no outcome is ever returned for them;
    - a failing target is an outcome, not an exception; only broken infrastructure raises;
    - ``close`` stops whatever still runs and is idempotent.
    Strategies never see a runner: the engine sits between them.
    """

    capacity: int

    @abstractmethod
    def submit(self, trial: Trial) -> None: ...

    @abstractmethod
    def wait(self, timeout: float | None = None) -> list[Outcome]: ...

    @abstractmethod
    def cancel(self, trial_ids: list[str]) -> None: ...

    @abstractmethod
    def pending(self) -> int:
        """Trials submitted whose outcome has not been returned yet."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> "Runner":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
