"""What every study kind shares: its folder, its store bound to the spec's identity, trial ids."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from heisenbisect.engine import trial_id
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Trial
from heisenbisect.store import Store, move_aside


@dataclass(frozen=True)
class StudyPaths:
    """Where a study keeps everything: ``<out>/<study>/``."""

    root: Path

    @classmethod
    def of(cls, spec: Spec, out: str | None) -> "StudyPaths":
        # absolute: targets run in their own cwd and must still find their result file
        return cls((Path(out or spec.output) / spec.study).resolve())

    @property
    def store(self) -> Path:
        return self.root / "study.sqlite"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def report(self) -> Path:
        return self.root / "report.md"

    @property
    def results(self) -> Path:
        return self.root / "results.json"

    @property
    def plot(self) -> Path:
        return self.root / "rates.png"


def spec_identity(spec: Spec) -> dict:
    """What makes stored trials comparable: the target and the factors' levels."""
    return {
        "target": spec.target.model_dump(mode="json"),
        "factors": [f.model_dump(mode="json", exclude={"description"}) for f in spec.factors],
    }


def open_store(path: Path, identity: dict, fresh: bool, description: str = "spec") -> Store:
    """Open (or, with ``fresh``, move aside and recreate) a store bound to ``identity``."""
    if fresh:
        move_aside(path)
    store = Store(path)
    try:
        store.bind(identity, description)
    except Exception:
        store.close()
        raise
    return store


def trial_factory(spec: Spec):
    """(config, index, seed) -> Trial with the config's environment and arguments."""

    def make(config: Config, index: int, seed: int) -> Trial:
        return Trial(
            trial_id=trial_id(config.key, index),
            config=config,
            index=index,
            seed=seed,
            env=spec.environment(config),
            args=tuple(spec.arguments(config)),
        )

    return make
