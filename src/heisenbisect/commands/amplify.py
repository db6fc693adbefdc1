"""`bisect amplify FILE`: search the spec's stress knobs for the most evidence per second,
confirm the best against the current settings, and write amplified.yaml."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from heisenbisect.bisect.amplify import Claim, Search, estimate
from heisenbisect.commands.common import add_execution_arguments, add_spec_argument, load, rerun_command, with_overrides
from heisenbisect.engine import Engine
from heisenbisect.exit_codes import ExitCode, signal_exit_code
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import make_progress
from heisenbisect.reports.amplify import Ending, Summary, headline, write_report
from heisenbisect.runners.factory import make_runner
from heisenbisect.runners.targets import make_target
from heisenbisect.signals import signal_of
from heisenbisect.studies.amplify import (
    CURRENT,
    AmplifyPaths,
    open_confirm_store,
    open_optuna_study,
    open_search_store,
    replayed_confirmation,
    restored_search,
    section,
    trial_factory,
)

EXIT = {
    Ending.CONFIRMED: ExitCode.DECIDED,
    Ending.NOT_CONFIRMED: ExitCode.UNDECIDED,
    Ending.CURRENT_BEST: ExitCode.UNDECIDED,
    Ending.NEVER_FAILED: ExitCode.CANNOT_REPRODUCE,
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "amplify",
        help="search stress knobs (Optuna) so the failure gives more evidence per second",
        description="Search the spec's amplify.knobs with Optuna for the settings under which the failure "
        "gives the most bits about a culprit per second of run, confirm the best against the current "
        "settings with a sequential test, and write amplify.md, amplify.png and (when confirmed) "
        "amplified.yaml in the study folder. Rerunning resumes from amplify.sqlite, confirm.sqlite and "
        "optuna.db there.",
    )
    add_spec_argument(parser)
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec, spec_dir = load(args)
    spec = with_overrides(spec, args)
    amplify = section(spec, args.spec)
    paths = AmplifyPaths.of(spec, args.out)
    target = make_target(spec, spec_dir)
    make_trial = trial_factory(spec)
    with open_search_store(spec, paths, args.fresh) as store:
        study = open_optuna_study(paths, spec.study, amplify.seed)
        if store.count():
            print(f"resuming {spec.study}: {store.count()} search runs reused from {paths.search_store}", file=sys.stderr)
        search = restored_search(study, amplify, store)
        progress = make_progress(f"bisect amplify {spec.study}", lambda: search_rows(search.search), plain=args.plain)
        try:
            with make_runner(spec, target, paths.logs, runner_override=args.runner, address_override=args.address) as runner:
                Engine(search, runner, store, spec.study, make_trial, progress).run()
                summary = summarize(spec, search.search)
                if summary.ending is Ending.NOT_CONFIRMED:
                    summary = confirm(spec, paths, summary, runner, progress)
        except KeyboardInterrupt as exc:
            progress.close()
            print(f"\ninterrupted; every finished run is kept in {paths.root}; resume with: {rerun_command()}",
                  file=sys.stderr)
            return signal_exit_code(signal_of(exc))
        progress.close()
    write_report(spec, Path(args.spec), summary, paths, study)
    print(headline(summary))
    print(f"report: {paths.report}  (plot {paths.plot.name}, results {paths.results.name})")
    if summary.ending is Ending.CONFIRMED:
        print(f"amplified spec: {paths.amplified}")
    print(f"Optuna study: optuna-dashboard {paths.storage_url}")
    return int(EXIT[summary.ending])


def confirm(spec: Spec, paths: AmplifyPaths, searched: Summary, runner, progress) -> Summary:
    """Interleaved fresh runs of the best and the current settings until the claim is decided."""
    with open_confirm_store(spec, paths, searched.best) as store:
        confirmation = replayed_confirmation(spec, searched.best, store)
        Engine(confirmation, runner, store, spec.study, trial_factory(spec), progress).run()
        confirmation = replayed_confirmation(spec, searched.best, store)  # the report comes from the store
    result = confirmation.result()
    ending = Ending.CONFIRMED if result.claim is Claim.CONFIRMED else Ending.NOT_CONFIRMED
    return dataclasses.replace(searched, ending=ending, confirmation=result)


def summarize(spec: Spec, search: Search) -> Summary:
    """Where the search leaves things: never failed, the current settings best, or a best to confirm."""
    amplify = section(spec, spec.study)
    estimates = search.estimates()
    best = search.best()
    if search.never_failed():
        ending = Ending.NEVER_FAILED
    elif best == CURRENT:
        ending = Ending.CURRENT_BEST
    else:
        ending = Ending.NOT_CONFIRMED  # until confirmed
    return Summary(
        ending=ending,
        best=best,
        search_best=estimates[best],
        search_current=estimates.get(CURRENT, estimate(search.candidates[CURRENT].evidence, amplify.confidence)),
        confirmation=None,
        search_runs=search.used,
        candidates=len(search.candidates),
        confidence=amplify.confidence,
    )


def search_rows(search: Search) -> list[tuple[str, int, int, str | None]]:
    """The current settings (``baseline``) first, then the five best candidates so far."""
    estimates = search.estimates()
    ranked = sorted((c for c in estimates if c != CURRENT), key=lambda c: -estimates[c].value)[:5]
    return [
        (config.key, estimates[config].runs, estimates[config].failed_runs,
         f"{estimates[config].value:.3g} bits/s")
        for config in [CURRENT, *ranked]
    ]
