"""The contract of what a trial is: a `TrialTarget` runs one trial and says how it ended."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from pathlib import Path
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

    def close(self) -> None:  # noqa: B027 - a hook most targets leave empty, not abstract
        """Release what the target keeps between trials (servers); idempotent."""
