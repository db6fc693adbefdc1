"""The contract of where trials run: a `Runner` schedules many trials of a `targets.base.TrialTarget`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType

from heisenbisect.records import Outcome, Trial


class Runner(ABC):
    """Runs trials somewhere (threads here, a Ray cluster) and streams their outcomes back.

    Contract (every implementation passes ``tests/runners/test_runner_contract.py``):
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

    def __enter__(self) -> Runner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
