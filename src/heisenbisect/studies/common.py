"""What every study kind shares: its store bound to the spec's identity (in the folder `layout` names), trial ids."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import StudyPaths
from heisenbisect.lock import StudyLock
from heisenbisect.records import Config, Trial, trial_id
from heisenbisect.store import Store, move_aside, store_files
from heisenbisect.studies.identity import RULE

# what `bisect report` reads a store despite: it runs nothing, so an edited target (or a store
# written before the target's files were hashed) cannot mix with its trials
REPORT_TOLERATES = "target_files"


def open_store(
    path: Path,
    identity: dict,
    fresh: bool,
    description: str = "spec",
    companions: Iterable[Path] | None = None,
) -> Store:
    """Lock the study folder, then open a store bound to ``identity``; closing the store unlocks.

    With ``fresh``, first move the store and its ``companions`` (logs, reports; default: the
    screening's) aside into ``<study>/previous/``.
    """
    lock = StudyLock.acquire(path.parent)
    try:
        if fresh:
            moved = (
                companions if companions is not None else StudyPaths(path.parent).screening_files()
            )
            try:
                kept = move_aside(path.parent, [*store_files(path), *moved])
            except OSError as exc:
                raise HeisenbisectError(
                    f"{path.parent}: --fresh cannot move the earlier study aside: {exc}"
                ) from None
            if kept is not None:
                print(
                    f"--fresh: the earlier trials, logs and reports are kept in {kept}",
                    file=sys.stderr,
                )
        store = Store(path, lock=lock)
    except BaseException:
        lock.release()
        raise
    try:
        way_out = "rerun with --fresh to move them aside and start over"
        if store.changes(identity, RULE) == [REPORT_TOLERATES] and description == "spec":
            way_out = "`bisect report` still renders them; " + way_out
        store.bind(identity, description, way_out=way_out, rule=RULE)
    except BaseException:
        store.close()
        raise
    return store


def trial_factory(
    spec: Spec,
    *,
    extra_env: Callable[[Config], dict[str, str]] | None = None,
    extra_args: Callable[[Config], Iterable[str]] | None = None,
    base: Config | None = None,
):
    """(config, index, seed) -> Trial with the config's environment and arguments.

    Amplify runs the spec's own settings (``base``) plus each config's knob values
    (``extra_env``, ``extra_args``); screening and bisection run the config itself."""

    def make(config: Config, index: int, seed: int) -> Trial:
        settings = config if base is None else base
        return Trial(
            trial_id=trial_id(config.key, index),
            config=config,
            index=index,
            seed=seed,
            env={**spec.environment(settings), **(extra_env(config) if extra_env else {})},
            args=(*spec.arguments(settings), *(extra_args(config) if extra_args else ())),
        )

    return make
