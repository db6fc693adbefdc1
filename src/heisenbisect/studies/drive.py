"""The loop every screening kind shares: open the study, replay it, run trials until it is
decided, and gather what its report needs. One at a time and group screening differ only in
the strategy they replay and the rows their progress shows."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heisenbisect.decide.crashes import CrashedRuns
from heisenbisect.decide.strategy import DecidingStrategy
from heisenbisect.engine import Engine
from heisenbisect.errors import HeisenbisectError
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import StudyPaths, target_folder
from heisenbisect.progress import LiveProgress, PlainProgress, make_progress
from heisenbisect.records import TrialStatus
from heisenbisect.reports.context import ReportContext
from heisenbisect.runners.factory import RunnerMaker
from heisenbisect.signals import signal_of
from heisenbisect.store import Store
from heisenbisect.studies.common import open_store, trial_factory
from heisenbisect.studies.guard import NothingRunsGuard
from heisenbisect.studies.identity import spec_identity
from heisenbisect.studies.judgement import judge
from heisenbisect.studies.options import Options, StudyInterrupted
from heisenbisect.studies.run_record import SessionRecorder
from heisenbisect.targets.protocol import NEVER_RAN
from heisenbisect.targets.registry import make_target


@dataclass(frozen=True)
class Driven:
    """A driven study, as its report needs it."""

    strategy: DecidingStrategy
    paths: StudyPaths
    crashed: list[CrashedRuns]
    context: ReportContext


def drive(
    options: Options,
    spec: Spec,
    spec_dir: Path,
    replayed: Callable[[Spec, Store], DecidingStrategy],
    rows: Callable[[Any], list],
    title: str,
    runners: RunnerMaker,
) -> Driven:
    """Run trials on the runner ``runners`` makes until the study is decided; `StudyInterrupted`
    (after saying how to resume) when a signal stopped it."""
    paths = StudyPaths.of(spec, options.out, options.spec)
    try:
        store = open_store(paths.store, spec_identity(spec, spec_dir), options.fresh)
    except KeyboardInterrupt as exc:
        if paths.store.exists():
            raise _interrupted(exc, options, paths, "no") from None
        raise
    with store:
        progress: PlainProgress | LiveProgress | None = None
        session = SessionRecorder(store, spec, target_folder(spec, spec_dir))
        try:  # from the store's opening: a signal at any point after it says how to resume
            if store.count():
                print(
                    f"resuming {spec.study}: {store.count()} finished trials reused from {paths.store}",
                    file=sys.stderr,
                )
            strategy = replayed(spec, store)
            will_run = not strategy.finished()  # a finished study keeps the environment it ran in
            target = make_target(spec, spec_dir)
            results_so_far = sum(o.status is TrialStatus.OK for _, o in store.outcomes())
            guard = NothingRunsGuard(
                strategy, results_so_far, give_up_after=spec.statistics.first_look
            )
            make_trial = trial_factory(spec)
            progress = make_progress(
                title, lambda: rows(strategy), plain=options.plain, verdicts=True
            )
            with runners(target, paths.logs) as runner:
                Engine(
                    guard,
                    runner,
                    store,
                    spec.study,
                    make_trial,
                    progress,
                    session.hook(runner) if will_run else None,
                ).run()
        except KeyboardInterrupt as exc:
            interrupted: KeyboardInterrupt | None = exc
        else:
            interrupted = None
        finally:
            if progress is not None:
                progress.close()  # before any message: a live display would draw over it
            session.finish()
        if interrupted:
            raise _interrupted(interrupted, options, paths, str(store.count()))
        if guard.never_ran is not None:
            never_ran = guard.never_ran
            raise HeisenbisectError(
                f"the target did not run: {never_ran.detail[len(NEVER_RAN) :]} (log: {never_ran.log_path}); "
                "fix target.command (a server's launch) or target.cwd in the spec, or install "
                "what it runs"
            )
        context, crashed = judge(store, strategy.result(), target_folder(spec, spec_dir))
        return Driven(strategy, paths, crashed, context)


def _interrupted(
    exc: KeyboardInterrupt, options: Options, paths: StudyPaths, finished: str
) -> StudyInterrupted:
    """Say how to resume (the store exists), and the exit code for the signal that stopped the run."""
    print(
        f"\ninterrupted after {finished} finished trials (all kept in {paths.store}); "
        f"resume with: {options.resume_with}",
        file=sys.stderr,
    )
    return StudyInterrupted(signal_exit_code(signal_of(exc)), paths.store)
