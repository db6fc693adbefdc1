"""What a version bisection (``bisect versions``) answers, as values. Its exit codes are the
commit bisection's (`studies.commits.result.state_and_exit_code`): 0 found (and verified), 1
undecided (a candidate set included; a culprit its verification did not confirm), 4 no trial
produced a result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.verify import Verification


@dataclass(frozen=True)
class VersionsResult:
    """What ``bisect versions`` prints and writes, as values."""

    study: str
    package: str
    state: str  # as `CommitsResult.state`
    exit_code: int
    culprit: str | None  # the first bad version, when found
    predecessor: str | None  # the version just before it (the last good one), when found
    probability: float
    headline: str
    verification: Verification | None  # the culprit's (`studies.versions.verify`), when found
    verification_line: str | None  # that verification in one sentence
    candidates: int
    trials: int
    report: Path
    results: Path
    store: Path
    warnings: tuple[str, ...]
    no_valid_runs: bool
    runs_at: dict[str, tuple[int, int]] = field(default_factory=dict)  # version: (runs, failed)
    details: object = field(default=None, repr=False)  # the bisection's `decide.commits.Result`

    @property
    def decided(self) -> bool:
        return self.exit_code == 0
