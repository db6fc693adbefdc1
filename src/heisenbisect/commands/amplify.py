"""`bisect amplify FILE`: search the spec's stress knobs for the most evidence per second,
confirm the best against the current settings, and write amplified.yaml. The work is
`amplify_study`, which is also ``heisenbisect.amplify``; the command prints what it returns."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from heisenbisect.decide.amplify import Claim, Estimate, Search, estimate
from heisenbisect.commands.common import add_execution_arguments, add_spec_argument, load, with_overrides
from heisenbisect.engine import Engine
from heisenbisect.errors import SpecError
from heisenbisect.exit_codes import ExitCode, signal_exit_code
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import make_progress
from heisenbisect.records import Config
from heisenbisect.reports.amplify import Ending, Summary, headline, write_report
from heisenbisect.runners.factory import make_runner
from heisenbisect.targets.preflight import problem_lines
from heisenbisect.targets.registry import make_target
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

if TYPE_CHECKING:
    from heisenbisect.api import AmplifyResult, Options

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
    """`amplify_study`, then print what it found."""
    from heisenbisect.api import Options, StudyInterrupted

    try:
        result = amplify_study(Options.from_args(args))
    except StudyInterrupted as exc:
        return exc.exit_code  # amplify_study said how to resume
    return print_result(result)


def amplify_study(options: Options) -> AmplifyResult:
    """Check, open the stores, resume, search, confirm; write the report (`heisenbisect.amplify`)."""
    from heisenbisect.api import StudyInterrupted

    spec, spec_dir = load(options)
    spec = with_overrides(spec, options)
    amplify = section(spec, options.spec)
    if problems := problem_lines(spec, Path(options.spec)):
        raise SpecError(problems)  # the target cannot run: no run would measure anything
    paths = AmplifyPaths.of(spec, options.out, options.spec)
    target = make_target(spec, spec_dir)
    make_trial = trial_factory(spec)
    with open_search_store(spec, paths, options.fresh) as store:
        study = open_optuna_study(paths, spec.study, amplify)
        if store.count():
            print(f"resuming {spec.study}: {store.count()} search runs reused from {paths.search_store}", file=sys.stderr)
        search = restored_search(study, amplify, store)
        progress = make_progress(f"bisect amplify {spec.study}", lambda: search_rows(search.search), plain=options.plain)
        try:
            with make_runner(spec, target, paths.logs, runner_override=options.runner,
                             address_override=options.address) as runner:
                Engine(search, runner, store, spec.study, make_trial, progress).run()
                summary = summarize(spec, search.search)
                if summary.ending is Ending.NOT_CONFIRMED:
                    summary = confirm(spec, paths, summary, runner, progress)
        except KeyboardInterrupt as exc:
            progress.close()
            print(f"\ninterrupted; every finished run is kept in {paths.root}; resume with: {options.resume_with}",
                  file=sys.stderr)
            raise StudyInterrupted(signal_exit_code(signal_of(exc)), paths.search_store) from None
        progress.close()
    write_report(spec, Path(options.spec), summary, paths, study)
    return answer(spec.study, summary, paths)


def answer(study: str, summary: Summary, paths: AmplifyPaths) -> AmplifyResult:
    """What the report says, as values, with the exit code that says it to scripts."""
    from heisenbisect.api import AmplifyResult, MeasuredSettings

    def measured(config: Config, e: Estimate) -> MeasuredSettings:
        return MeasuredSettings(
            knobs=dict(config.changes), runs=e.runs, failed_runs=e.failed_runs,
            rate=float(e.rate), rate_interval=_floats(e.rate_interval),
            runs_per_s=float(e.runs_per_s), runs_per_s_interval=_floats(e.runs_per_s_interval),
            bits_per_s=float(e.value), bits_per_s_interval=_floats(e.interval),
        )

    c = summary.confirmation
    confirmed = summary.ending is Ending.CONFIRMED
    return AmplifyResult(
        study=study, ending=summary.ending.value, exit_code=int(EXIT[summary.ending]), headline=headline(summary),
        best=measured(summary.best, summary.best_estimate), current=measured(CURRENT, summary.current_estimate),
        measured_by="confirmation" if c else "search",
        speedup=None if c is None else float(c.speedup), p_value=None if c is None else float(c.p_value),
        looks=None if c is None else c.looks_done, search_runs=summary.search_runs, candidates=summary.candidates,
        confidence=summary.confidence, report=paths.report, plot=paths.plot, results=paths.results,
        amplified=paths.amplified if confirmed else None, optuna_db=paths.optuna_db,
        dashboard=f"optuna-dashboard {paths.storage_url}", search_store=paths.search_store,
        confirm_store=paths.confirm_store if c else None, logs=paths.logs, details=summary,
    )


def _floats(bounds: tuple[float, float]) -> tuple[float, float]:
    return float(bounds[0]), float(bounds[1])


def print_result(result: AmplifyResult) -> int:
    """What ``bisect amplify`` prints; returns its exit code."""
    print(result.headline)
    print(f"report: {result.report}  (plot {result.plot.name}, results {result.results.name})")
    if result.amplified is not None:
        print(f"amplified spec: {result.amplified}")
    print(f"Optuna study: {result.dashboard}")
    return result.exit_code


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
