"""`bisect run FILE`: screen every factor level against the baseline, resumably, and report."""

from __future__ import annotations

import argparse
import sys

from heisenbisect.commands.common import add_execution_arguments, add_spec_argument, load, rerun_command, with_overrides
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.progress import make_progress
from heisenbisect.reports.screening import conclusion, label, write_report
from heisenbisect.reports.tracebacks import crashed_runs, summary
from heisenbisect.runners.factory import make_runner
from heisenbisect.runners.targets import make_target
from heisenbisect.signals import signal_of
from heisenbisect.studies.common import StudyPaths, open_store, spec_identity
from heisenbisect.studies.screening import progress_rows, replayed_screening, screen


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="screen factors: which changes drive the failure to zero")
    add_spec_argument(parser)
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec, spec_dir = load(args)
    spec = with_overrides(spec, args)
    if spec.uses_groups:
        from heisenbisect.commands.run_group import run_groups

        return run_groups(args, spec, spec_dir)
    paths = StudyPaths.of(spec, args.out)
    with open_store(paths.store, spec_identity(spec), args.fresh) as store:
        if store.count():
            print(f"resuming {spec.study}: {store.count()} finished trials reused from {paths.store}", file=sys.stderr)
        target = make_target(spec, spec_dir)
        screening = replayed_screening(spec, store)
        progress = make_progress(f"bisect run {spec.study}", lambda: progress_rows(screening), plain=args.plain)
        try:
            with make_runner(spec, target, paths.logs, runner_override=args.runner, address_override=args.address) as runner:
                screen(spec, screening, store, runner, progress)
        except KeyboardInterrupt as exc:
            interrupted: KeyboardInterrupt | None = exc
        else:
            interrupted = None
        finally:
            progress.close()  # before any message: a live display would draw over it
        if interrupted:
            print(
                f"\ninterrupted after {store.count()} finished trials (all kept in {paths.store}); "
                f"resume with: {rerun_command()}",
                file=sys.stderr,
            )
            return signal_exit_code(signal_of(interrupted))
        crashed = crashed_runs(store.outcomes())
    result = screening.result()
    report = write_report(spec, args.spec, result, paths, crashed)
    for arm in result.arms:
        print(f"{label(arm.config):<40} {arm.verdict.value:<16} {arm.failed_runs}/{arm.runs} runs failed")
    print(f"\n{conclusion(spec, result)}\n\nreport: {report}")
    if warning := summary(crashed):
        print(warning, file=sys.stderr)
    return 0
