"""`bisect run` when the spec's strategy is group screening: the same run loop, the group study and report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heisenbisect.commands.common import rerun_command
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import make_progress
from heisenbisect.reports.group import conclusion, write_report
from heisenbisect.reports.tracebacks import crashed_runs, summary
from heisenbisect.runners.factory import make_runner
from heisenbisect.runners.targets import make_target
from heisenbisect.signals import signal_of
from heisenbisect.studies.common import StudyPaths, open_store, spec_identity
from heisenbisect.studies.group import progress_rows, replayed_group_screening, screen_groups


def run_groups(args: argparse.Namespace, spec: Spec, spec_dir: Path) -> int:
    paths = StudyPaths.of(spec, args.out)
    with open_store(paths.store, spec_identity(spec, spec_dir), args.fresh) as store:
        if store.count():
            print(f"resuming {spec.study}: {store.count()} finished trials reused from {paths.store}", file=sys.stderr)
        target = make_target(spec, spec_dir)
        screening = replayed_group_screening(spec, store)
        progress = make_progress(f"bisect run {spec.study} (group screening)", lambda: progress_rows(screening), plain=args.plain)
        try:
            with make_runner(spec, target, paths.logs, runner_override=args.runner, address_override=args.address) as runner:
                screen_groups(spec, screening, store, runner, progress)
        except KeyboardInterrupt as exc:
            interrupted: KeyboardInterrupt | None = exc
        else:
            interrupted = None
        finally:
            progress.close()
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
    for verdict in result.changes:
        if not verdict.via_group:
            print(f"{verdict.change[0]}={verdict.change[1]:<30} {verdict.verdict}")
    print(f"\n{conclusion(spec, result)}\n\nreport: {report}")
    if warning := summary(crashed):
        print(warning, file=sys.stderr)
    return 0
