"""The decided verdicts at two placements (`studies.contention` re-checks them): a verdict that
changes at another placement "depends on contention". `reports.contention` words it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from heisenbisect.records import Verdict

UNDECIDED = (Verdict.INCONCLUSIVE.value, Verdict.NOT_APPLIED.value)


@dataclass(frozen=True)
class Measured:
    """One verdict and the runs it rests on, under one placement."""

    verdict: str
    runs: int | None
    failed_runs: int | None


@dataclass(frozen=True)
class Rechecked:
    change: str  # "graph=0"
    main: Measured
    again: Measured

    @property
    def decided_again(self) -> bool:
        return self.again.verdict not in UNDECIDED

    @property
    def depends(self) -> bool:
        """The verdicts differ, the re-check's decided: an undecided re-check says nothing yet."""
        return self.decided_again and self.main.verdict != self.again.verdict


@dataclass(frozen=True)
class Contention:
    main_placement: str
    recheck_placement: str
    baseline_main: Measured
    baseline_again: Measured
    changes: tuple[Rechecked, ...]
    finished: bool
    report: Path  # the re-check's own report
