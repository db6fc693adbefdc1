"""The amplification behind ``bisect amplify`` and ``heisenbisect.amplify``: search the spec's
stress knobs for the most evidence per second (`studies.amplify.search`), confirm the best
against the current settings on fresh interleaved runs, write the report (and, confirmed,
amplified.yaml) and answer (`studies.amplify.result`).

Every run lands in ``amplify.sqlite`` (the search) or ``confirm.sqlite`` (the confirmation)
first: those are the record, from which a rerun resumes and the report is rendered. The search
store also records where the runs ran (`studies.run_record`), for the report's Environment.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from heisenbisect.decide.amplify import Confirmation, ConfirmSettings, Search
from heisenbisect.decide.amplify_outcome import Ending, Summary, confirmed, summary_of
from heisenbisect.engine import Engine, Progress
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.hypotheses.model import Amplify, Spec
from heisenbisect.layout import AmplifyPaths, StudyPaths, target_folder
from heisenbisect.progress import make_progress
from heisenbisect.records import Config
from heisenbisect.reports.amplify import write_report
from heisenbisect.runners.base import Runner
from heisenbisect.runners.factory import RunnerMaker, runner_maker
from heisenbisect.signals import signal_of
from heisenbisect.store import Store, move_aside, store_files
from heisenbisect.studies.amplify.result import AmplifyResult, answer
from heisenbisect.studies.amplify.search import CURRENT, open_optuna_study, restored_search
from heisenbisect.studies.common import open_store
from heisenbisect.studies.common import trial_factory as common_trial_factory
from heisenbisect.studies.identity import RULE, UNSTORED, canonical, spec_identity
from heisenbisect.studies.options import Options, StudyInterrupted, loaded
from heisenbisect.studies.run_record import SessionRecorder
from heisenbisect.study_meta import environment_of
from heisenbisect.targets.preflight import problem_lines
from heisenbisect.targets.registry import make_target


def section(spec: Spec, spec_path: Path | str) -> Amplify:
    if spec.amplify is None:
        raise HeisenbisectError(
            f"{spec_path}: no 'amplify:' section; add one with the knobs to search (docs/amplify.md)"
        )
    return spec.amplify


def confirm_settings(amplify: Amplify) -> ConfirmSettings:
    return ConfirmSettings(
        confidence=amplify.confidence,
        first_look=min(amplify.first_look, amplify.confirm_runs),
        max_runs=amplify.confirm_runs,
    )


def search_identity(spec: Spec) -> dict:
    """What makes stored search runs comparable; the budget may change between runs."""
    assert spec.amplify is not None
    knobs = [canonical(k, UNSTORED) for k in spec.amplify.knobs]
    return {**spec_identity(spec), "kind": "amplify", "knobs": knobs}


def trial_factory(spec: Spec):
    """(config, index, seed) -> Trial: the spec's own settings plus the config's knob values."""
    amplify = section(spec, spec.study)
    return common_trial_factory(
        spec, extra_env=amplify.environment, extra_args=amplify.arguments, base=CURRENT
    )


def open_search_store(spec: Spec, paths: AmplifyPaths, fresh: bool) -> Store:
    """The search's store, holding the study folder's lock for the whole command."""
    return open_store(
        paths.search_store, search_identity(spec), fresh, "amplification", paths.companions()
    )


def open_confirm_store(spec: Spec, paths: AmplifyPaths, best: Config) -> Store:
    """The confirmation's runs, opened under the lock the search store holds. A confirmation of
    other settings (the search went on with a larger budget) is moved aside, not mixed in."""
    identity = {**search_identity(spec), "confirm": best.key}
    if paths.confirm_store.exists():
        with Store(paths.confirm_store) as old:
            bound = json.loads(old.meta("identity") or "{}").get("confirm")
            stale = old.count() > 0 and bound != best.key
        if stale:
            move_aside(paths.root, store_files(paths.confirm_store))
    store = Store(paths.confirm_store)
    try:
        store.bind(identity, "confirmation", rule=RULE)
    except BaseException:
        store.close()
        raise
    return store


def replayed_confirmation(spec: Spec, best: Config, store: Store) -> Confirmation:
    amplify = section(spec, spec.study)
    confirmation = Confirmation(best, CURRENT, confirm_settings(amplify))
    for config, outcome in store.outcomes():
        confirmation.observe(config, outcome)
    return confirmation


def amplify_study(options: Options, runners: RunnerMaker | None = None) -> AmplifyResult:
    """Check, open the stores, resume, search, confirm on the runner ``runners`` makes (default:
    the spec's, with the options' overrides); write the report and answer."""
    spec, spec_dir = loaded(options)
    amplify = section(spec, options.spec)
    if problems := problem_lines(spec, Path(options.spec)):
        raise SpecError(problems)  # the target cannot run: no run would measure anything
    paths = StudyPaths.of(spec, options.out, options.spec).amplify
    target = make_target(spec, spec_dir)
    make_trial = trial_factory(spec)
    runners = runners or runner_maker(spec, options.runner, options.address)
    with open_search_store(spec, paths, options.fresh) as store:
        study = open_optuna_study(paths, spec.study, amplify)
        if store.count():
            print(
                f"resuming {spec.study}: {store.count()} search runs reused from {paths.search_store}",
                file=sys.stderr,
            )
        search = restored_search(study, amplify, store)
        progress = make_progress(
            f"bisect amplify {spec.study}", lambda: search_rows(search.search), plain=options.plain
        )
        session = SessionRecorder(store, spec, target_folder(spec, spec_dir))
        try:
            with runners(target, paths.logs) as runner:
                record = session.hook(runner)
                Engine(search, runner, store, spec.study, make_trial, progress, record).run()
                summary = summary_of(search.search, amplify.confidence)
                if summary.ending is Ending.NOT_CONFIRMED:
                    summary = confirm(
                        spec, paths, summary, runner, progress, None if session.started else record
                    )
        except KeyboardInterrupt as exc:
            progress.close()
            print(
                f"\ninterrupted; every finished run is kept in {paths.root}; resume with: {options.resume_with}",
                file=sys.stderr,
            )
            raise StudyInterrupted(signal_exit_code(signal_of(exc)), paths.search_store) from None
        finally:
            session.finish()
        progress.close()
        ran_in = environment_of(store)
    write_report(spec, Path(options.spec), summary, paths, study, ran_in)
    return answer(spec.study, summary, paths)


def confirm(
    spec: Spec,
    paths: AmplifyPaths,
    searched: Summary,
    runner: Runner,
    progress: Progress | None,
    dispatched: Callable[[], None] | None = None,
) -> Summary:
    """Interleaved fresh runs of the best and the current settings until the claim is decided
    (``dispatched``: the search's record of this run, when the search itself ran nothing)."""
    with open_confirm_store(spec, paths, searched.best) as store:
        confirmation = replayed_confirmation(spec, searched.best, store)
        Engine(
            confirmation, runner, store, spec.study, trial_factory(spec), progress, dispatched
        ).run()
        confirmation = replayed_confirmation(
            spec, searched.best, store
        )  # the report comes from the store
    return confirmed(searched, confirmation.result())


def search_rows(search: Search) -> list[tuple[str, int, int, str | None]]:
    """The current settings (``baseline``) first, then the five best candidates so far."""
    estimates = search.estimates()
    ranked = sorted((c for c in estimates if c != CURRENT), key=lambda c: -estimates[c].value)[:5]
    return [
        (
            config.key,
            estimates[config].runs,
            estimates[config].failed_runs,
            f"{estimates[config].value:.3g} bits/s",
        )
        for config in [CURRENT, *ranked]
    ]
