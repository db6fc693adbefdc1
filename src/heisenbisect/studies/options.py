"""What every study kind is run with, and how it says it was stopped.

`Options` are the spec's file and the command line's overrides, whether they came from the
CLI (`commands.common.options_of`) or from a Python call (`heisenbisect.api`, which checks
them); `loaded` reads the spec with them applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from heisenbisect.hypotheses import Spec, load_spec

if TYPE_CHECKING:
    from heisenbisect.studies.commits.result import CommitsResult

RESUME_IN_PYTHON = "the same heisenbisect call"


@dataclass(frozen=True)
class Options:
    """What a study is run with: the spec's file and the command line's overrides (``--out`` ...)."""

    spec: str
    out: str | None = None
    fresh: bool = False
    parallel: int | None = None
    runner: str | None = None
    address: str | None = None
    plain: bool = True  # plain progress lines on stderr; the CLI draws a live table on a terminal
    resume_with: str = RESUME_IN_PYTHON  # what the message after an interruption says to run again


class StudyInterrupted(KeyboardInterrupt):
    """The study was stopped (Ctrl-C, SIGTERM); every finished trial is kept, and running the
    same study again resumes it. ``exit_code`` is the CLI's (130, 143, 129); ``result``, where
    a report was written on the way out (`commits`), what it says so far."""

    def __init__(self, exit_code: int, store: Path, result: CommitsResult | None = None):
        super().__init__(f"interrupted; every finished trial is kept in {store}")
        self.exit_code = exit_code
        self.store = store
        self.result = result


class Parallel(Protocol):
    @property
    def parallel(self) -> int | None: ...


def with_overrides(spec: Spec, options: Parallel) -> Spec:
    """``--parallel N``: N trials at once, on the local runner and on Ray (its max_in_flight)."""
    if options.parallel:
        execution = spec.execution.model_copy(
            update={"parallel": options.parallel, "max_in_flight": options.parallel}
        )
        return spec.model_copy(update={"execution": execution})
    return spec


def loaded(options: Options) -> tuple[Spec, Path]:
    """The spec with the command line's overrides, and its folder (where its paths start)."""
    path = Path(options.spec)
    return with_overrides(load_spec(path), options), path.parent
