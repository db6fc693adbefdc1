"""What a version bisection (``bisect versions``) answers, as values. Its exit codes are the
commit bisection's (`studies.commits.result.state_and_exit_code`): 0 found, 1 undecided (a
candidate set included), 4 no trial produced a result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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
    verification: str  # the culprit's verification line (`studies.versions.study.verify_culprit`)
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
