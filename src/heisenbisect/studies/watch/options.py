"""What one watch is: its spec, branch and folder, the statistics, the hook (shared by the step
and the regression's bisection)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.watch import WatchSettings
from heisenbisect.layout import WatchPaths
from heisenbisect.studies.options import Options


@dataclass(frozen=True)
class WatchOptions:
    """One watch: its spec, branch and folder, the statistics, the hook."""

    study: Options  # the spec (written or given) and the execution overrides
    paths: WatchPaths
    repo: str = "."
    branch: str = "HEAD"
    settings: WatchSettings = field(default_factory=WatchSettings)
    on_regression: str | None = None
    command: str = "bisect watch"  # how the paste report names what was watched
    screening: Path | None = None  # a spec's screening store: its decided arms are watched too
