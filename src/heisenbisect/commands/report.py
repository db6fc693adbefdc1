"""`bisect report FILE`: re-render the screening report from the store alone, running nothing.

It refuses a store of other factors or another target as `bisect run` does (the arms would not
be the stored ones), but not one whose target's files changed: running nothing, it cannot mix an
edited script's trials with the old ones; it warns and renders what was stored (docs/refusals.md).
"""

from __future__ import annotations

import argparse
import sys

from heisenbisect.commands.common import add_spec_argument, load
from heisenbisect.errors import HeisenbisectError
from heisenbisect.reports.environment import environment_of
from heisenbisect.reports.evidence import evidence_of
from heisenbisect.reports.load import assess
from heisenbisect.reports.screening import ReportContext, write_report
from heisenbisect.reports.tracebacks import crashed_runs
from heisenbisect.targets.preflight import target_folder
from heisenbisect.store import Store
from heisenbisect.studies.common import REPORT_TOLERATES, StudyPaths, spec_identity
from heisenbisect.studies.screening import replayed_screening


REPORT_WAY_OUT = "report them with the spec they ran under, or start over with `bisect run --fresh`"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="re-render report.md, results.json and rates.png from the store")
    add_spec_argument(parser)
    parser.set_defaults(handler=report)


def report(args: argparse.Namespace) -> int:
    spec, spec_dir = load(args)
    paths = StudyPaths.of(spec, args.out, args.spec)
    if not paths.store.exists():
        raise HeisenbisectError(f"{paths.store}: no store yet; run `bisect run {args.spec}` first")
    with Store(paths.store) as store:
        tolerated = store.bind(spec_identity(spec, spec_dir), "spec", (REPORT_TOLERATES,), REPORT_WAY_OUT)
        if tolerated:
            print(f"warning: {store.mismatch(tolerated, 'target')}; running nothing, the report shows the trials "
                  "as they ran", file=sys.stderr)
        outcomes = store.outcomes()
        crashed = crashed_runs(outcomes)
        if spec.uses_groups:
            from heisenbisect.studies.group import replayed_group_screening

            result = replayed_group_screening(spec, store).result()
        else:
            result = replayed_screening(spec, store).result()
        ran_in = environment_of(store)
        caution = assess(store, result, ran_in)
        context = ReportContext(evidence_of(outcomes), ran_in, target_folder(spec, spec_dir), caution)
    if spec.uses_groups:
        from heisenbisect.reports import group

        print(group.write_report(spec, args.spec, result, paths, crashed, context))
        return 0
    print(write_report(spec, args.spec, result, paths, crashed, context))
    return 0
