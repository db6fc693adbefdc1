"""Immutable records that cross module boundaries: configs, trials, outcomes, verdicts."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

# how an outcome's detail opens when its result carried numbers beside the protocol's keys
EXTRA_RESULT_FIELDS = "extra result fields kept as metrics: "


class TrialStatus(str, enum.Enum):
    """How a trial ended. Only ``ok`` outcomes carry failure evidence."""

    OK = "ok"
    SKIP = "skip"
    ERROR = "error"
    TIMEOUT = "timeout"


class Verdict(str, enum.Enum):
    """What an arm's factor change does to the failure rate, against the baseline."""

    ELIMINATES = "eliminates"
    REDUCES = "reduces"
    NO_EFFECT = "no_effect"
    INCREASES = "increases"
    INCONCLUSIVE = "inconclusive"
    CANNOT_REPRODUCE = "cannot_reproduce"
    NOT_APPLIED = "not_applied"  # its variable never reached the target: no claim about the change
    UNTESTABLE = "untestable"  # its runs did not end cleanly, or its skips may hide the failure


@dataclass(frozen=True, order=True)
class Config:
    """One assignment of levels to factors; factors not named stay at their baseline.

    ``changes`` holds (factor, level label) pairs for factors off their baseline,
    sorted, so equal configs have equal keys. ``commit`` is set only under commit bisection.
    """

    changes: tuple[tuple[str, str], ...] = ()
    commit: str | None = None

    @property
    def key(self) -> str:
        parts = [f"{name}={label}" for name, label in self.changes] or ["baseline"]
        if self.commit:
            parts.append(f"@{self.commit}")
        return ",".join(parts)

    def level_of(self, factor: str) -> str | None:
        return dict(self.changes).get(factor)


@dataclass(frozen=True)
class Trial:
    """One execution of the target under a config with a seed; ``trial_id`` is unique per study."""

    trial_id: str
    config: Config
    index: int
    seed: int
    env: Mapping[str, str | None] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    workdir: str | None = None  # overrides the target's cwd (a commit's worktree, say)


@dataclass(frozen=True)
class EnvReads:
    """Which watched environment variables the Python processes of one run looked up.

    ``names``: the watched names looked up by name, and unwatched names close to one (a
    misspelling's intended name), each with the number of processes that looked it up;
    ``copied_at``: where a process enumerated or copied the whole environment, and so may
    have read any name (``file:line``). See `targets.env_reads`.
    """

    processes: int  # Python processes of the run that started tracking
    names: Mapping[str, int] = field(default_factory=dict)
    copied_at: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """The result of one trial.

    ``failures`` out of ``total`` units (sessions). A trial that reported only an exit
    code counts as one unit. ``failed`` is the run-level event used by the statistics.
    """

    trial_id: str
    config_key: str
    index: int
    status: TrialStatus
    failures: int = 0
    total: int = 0
    metrics: Mapping[str, float] = field(default_factory=dict)
    duration_s: float = 0.0
    log_path: str | None = None
    detail: str = ""
    env_reads: EnvReads | None = None  # None: no Python process of the run tracked its reads

    @property
    def failed(self) -> bool:
        return self.status is TrialStatus.OK and self.failures > 0

    @property
    def failure_fraction(self) -> float:
        return self.failures / self.total if self.total else 0.0


def trial_seed(study: str, config_key: str, index: int) -> int:
    """A seed fixed by study, config and index: a rerun of the same trial gets the same seed."""
    digest = hashlib.sha256(f"{study}\0{config_key}\0{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def trial_id(config_key: str, index: int) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in config_key)
    digest = hashlib.sha256(config_key.encode()).hexdigest()[:8]
    return f"{safe[:60]}-{digest}-{index:04d}"
