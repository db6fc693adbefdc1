"""`bisect run FILE`: screen every factor level against the baseline, resumably, and report.

Exit codes (heisenbisect.exit_codes): 0 every arm decided, 1 some arm inconclusive or
not_applied (or the study unfinished), 2 bad input or a target that never ran, 3 the baseline never failed
(cannot_reproduce), 4 no trial produced a result.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from heisenbisect.commands.common import add_execution_arguments, add_spec_argument
from heisenbisect.errors import HeisenbisectError
from heisenbisect.exit_codes import ExitCode, signal_exit_code
from heisenbisect.progress import make_progress
from heisenbisect.records import TrialStatus, Verdict
from heisenbisect.reports import environment, load
from heisenbisect.reports.evidence import evidence_of
from heisenbisect.reports.screening import ReportContext
from heisenbisect.decide.strategy import Strategy
from heisenbisect.hypotheses.model import Spec
from heisenbisect.reports.tracebacks import CrashedRuns, crashed_runs
from heisenbisect.runners.factory import make_runner
from heisenbisect.targets.preflight import target_folder
from heisenbisect.targets.protocol import NEVER_RAN
from heisenbisect.targets.registry import make_target
from heisenbisect.signals import signal_of
from heisenbisect.store import Store
from heisenbisect.studies.common import StudyPaths, open_store, spec_identity
from heisenbisect.studies.guard import NothingRunsGuard
from heisenbisect.studies.screening import screen

if TYPE_CHECKING:
    from heisenbisect.api import Options, StudyResult


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="screen factors: which changes drive the failure to zero")
    add_spec_argument(parser)
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """`heisenbisect.api.screen` (load, check, drive, report), then print what it says."""
    from heisenbisect.api import Options, StudyInterrupted, screen

    try:
        study = screen(Options.from_args(args))
    except StudyInterrupted as exc:
        return exc.exit_code  # drive said how to resume
    return print_ending(study)


def print_ending(study: StudyResult) -> int:
    """The end of every screening kind: the verdicts, the conclusion and the warnings, or only
    "no trial produced a result" (exit 4) when nothing can be concluded; returns the exit code."""
    if study.no_valid_runs:
        for line in study.warnings:
            print(line, file=sys.stderr)
        print(f"report: {study.report}")
        return study.exit_code
    for arm in study.arms:
        unapplied = arm.verdict == Verdict.NOT_APPLIED.value
        if not arm.decided_by_group or unapplied:
            runs = f" {arm.failed_runs}/{arm.runs} runs failed" if arm.runs is not None else ""
            why = f": {arm.note}" if unapplied else ""
            print(f"{arm.change:<40} {arm.verdict:<16}{runs}{why}".rstrip())
    print(f"\n{study.conclusion}\n\nreport: {study.report}")
    for line in study.warnings:
        print(line, file=sys.stderr)
    return study.exit_code


def drive(
    args: Options,
    spec: Spec,
    spec_dir: Path,
    replayed: Callable[[Spec, Store], Strategy],
    rows: Callable[[Strategy], list],
    title: str,
) -> tuple[Strategy, StudyPaths, list[CrashedRuns], ReportContext] | int:
    """Open the study, replay it, run trials until it is decided; what the report needs, or an
    exit code when it was stopped by a signal. The same loop for every screening kind."""
    paths = StudyPaths.of(spec, args.out, args.spec)
    with open_store(paths.store, spec_identity(spec, spec_dir), args.fresh) as store:
        if store.count():
            print(f"resuming {spec.study}: {store.count()} finished trials reused from {paths.store}", file=sys.stderr)
        target = make_target(spec, spec_dir)
        strategy = replayed(spec, store)
        results_so_far = sum(o.status is TrialStatus.OK for _, o in store.outcomes())
        guard = NothingRunsGuard(strategy, results_so_far, give_up_after=spec.statistics.first_look)
        will_run = not strategy.finished()  # a finished study keeps the environment it ran in
        progress = make_progress(title, lambda: rows(strategy), plain=args.plain)
        try:
            with make_runner(spec, target, paths.logs, runner_override=args.runner, address_override=args.address) as runner:
                if will_run:
                    environment.record_start(
                        store, spec, target_folder(spec, spec_dir), runner_kind(spec, args), runner.capacity
                    )
                screen(spec, guard, store, runner, progress)
        except KeyboardInterrupt as exc:
            interrupted: KeyboardInterrupt | None = exc
        else:
            interrupted = None
        finally:
            progress.close()  # before any message: a live display would draw over it
            if will_run:
                environment.record_finish(store)
        if interrupted:
            print(
                f"\ninterrupted after {store.count()} finished trials (all kept in {paths.store}); "
                f"resume with: {args.resume_with}",
                file=sys.stderr,
            )
            return signal_exit_code(signal_of(interrupted))
        if guard.never_ran is not None:
            never_ran = guard.never_ran
            raise HeisenbisectError(
                f"the target did not run: {never_ran.detail[len(NEVER_RAN):]} (log: {never_ran.log_path}); "
                "fix target.command or target.cwd in the spec"
            )
        outcomes = store.outcomes()
        ran_in = environment.environment_of(store)
        caution = load.assess(store, strategy.result(), ran_in)
        context = ReportContext(evidence_of(outcomes), ran_in, target_folder(spec, spec_dir), caution)
        return strategy, paths, crashed_runs(outcomes), context


def exit_code(result) -> int:
    """0 only when every arm is decided; see the module's docstring. A not_applied arm is not
    decided: its question was never put to the target."""
    if result.cannot_reproduce:
        return ExitCode.CANNOT_REPRODUCE
    if not result.finished or any(arm.verdict in UNDECIDED for arm in result.arms):
        return ExitCode.UNDECIDED
    return ExitCode.DECIDED


UNDECIDED = (Verdict.INCONCLUSIVE, Verdict.NOT_APPLIED)


def runner_kind(spec, args: Options) -> str:
    """The runner the factory picks, for the report (see runners.factory.make_runner)."""
    if args.runner:
        return args.runner
    return "ray" if args.address or spec.execution.address else spec.execution.runner
