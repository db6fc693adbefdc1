"""The version bisection behind ``bisect versions``: list the released versions between the
ends, run the ends first (`studies.versions.check`: a range that cannot hold a culprit is
refused), probe them (each installed once into an environment of its own) with the commit
bisection's strategy until one holds the asked confidence or the budget is spent, then verify
the culprit, write the report and answer (`studies.versions.result`).

The report comes from the store, never from the live run's memory: stopped by a signal, the
bisection still writes what it knows so far, and `StudyInterrupted` carries it."""

from __future__ import annotations

import dataclasses
import sys

from heisenbisect.decide.batches import Batched
from heisenbisect.decide.commits import CommitStrategy, State
from heisenbisect.decide.crashes import crashed_runs
from heisenbisect.decide.evidence import evidence_of
from heisenbisect.decide.range_check import reversed_rates_refusal
from heisenbisect.decide.strategy import Strategy
from heisenbisect.engine import Engine, TrialFactory
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.progress import make_progress
from heisenbisect.records import TrialStatus
from heisenbisect.reports.commits import verification_line
from heisenbisect.reports.evidence import (
    extra_fields_line,
    no_result_line,
    same_ending_line,
)
from heisenbisect.reports.tracebacks import summary
from heisenbisect.reports.versions import VersionsReport, headline, predecessor, write_report
from heisenbisect.runners.factory import RunnerMaker, runner_maker
from heisenbisect.signals import signal_of
from heisenbisect.store import Store
from heisenbisect.studies.commits.result import state_and_exit_code
from heisenbisect.studies.commits.study import Table
from heisenbisect.studies.commits.verify import Phases, verify_trials
from heisenbisect.studies.commits.verify import replayed as replayed_verification
from heisenbisect.studies.common import trial_factory
from heisenbisect.studies.options import Options, StudyInterrupted, loaded
from heisenbisect.studies.versions.check import WORDS, check_rows, replayed_check
from heisenbisect.studies.versions.prepare import (
    VersionsRequest,
    VersionStudy,
    list_range,
    open_versions_store,
    replayed,
    write_spec,
)
from heisenbisect.studies.versions.result import VersionsResult
from heisenbisect.studies.versions.verify import UNIT
from heisenbisect.studies.versions.verify import plan as verify_plan
from heisenbisect.studies.versions.verify import progress_rows as verify_rows
from heisenbisect.targets.command import CommandTarget
from heisenbisect.targets.commit import BUILD_TIMEOUT_S, builds_under_way
from heisenbisect.targets.installed import Environments, InstalledTarget
from heisenbisect.targets.log_endings import LogEndings
from heisenbisect.targets.registry import make_target


def prepare(request: VersionsRequest, parallel: int | None = None) -> VersionStudy:
    """List the range and write the study's spec; the study, its spec loaded (``--parallel``)."""
    versions = list_range(request)
    spec_path = write_spec(request, versions)
    spec, _ = loaded(Options(str(spec_path), parallel=parallel))
    return VersionStudy(request, versions, spec, spec_path, request.installation())


def bisect_versions(
    request: VersionsRequest, options: Options, runners: RunnerMaker | None = None
) -> VersionsResult:
    """Probe on the runner ``runners`` makes (default: the spec's, with the options' overrides)
    until decided; verify the culprit; write the report and answer. ``options.spec`` is
    ignored: the study writes its own (`prepare`)."""
    study = prepare(request, options.parallel)
    runners = runners or runner_maker(study.spec, options.runner, options.address)
    with open_versions_store(study, options.fresh) as store:
        resumed = store.count()
        print(
            f"{len(study.range.candidates)} candidate versions of {request.package} "
            f"({study.range.good} .. {study.range.bad}, from {study.range.source})"
            + (f"; resuming with {resumed} stored trials" if resumed else ""),
            file=sys.stderr,
        )
        try:
            phases = _phases(study, store, runners, options.plain)
        except KeyboardInterrupt as exc:
            strategy = replayed(study, store)
            finish(study, strategy, store, options.resume_with, Phases(None, verify_plan(strategy)))
            print(f"interrupted; resume with: {options.resume_with}", file=sys.stderr)
            raise StudyInterrupted(signal_exit_code(signal_of(exc)), study.paths.store) from None
        # the report comes from the store, not from memory
        return finish(study, replayed(study, store), store, options.resume_with, phases)


def _phases(study: VersionStudy, store: Store, runners: RunnerMaker, plain: bool) -> Phases:
    """The range check, the search, the verification; each skipped when the store holds it."""
    title = f"bisect versions {study.request.package}"
    check = replayed_check(study, study.strategy(), store)
    if not check.finished():
        table = Table(title + ": the two ends", lambda: check_rows(study, check), plain)
        run_phase(study, store, check, runners, table, trial_factory(study.spec))
        check = replayed_check(study, study.strategy(), store)
    if (refused := check.result().refusal(WORDS)) is not None:
        return Phases(refused, None)
    strategy = replayed(study, store)
    if not strategy.finished():
        table = Table(title, lambda: progress_rows(study, strategy), plain)
        run_phase(study, store, strategy, runners, table, trial_factory(study.spec))
    strategy = replayed(study, store)
    if (refused := reversed_rates_refusal(strategy, check.result(), WORDS)) is not None:
        return Phases(refused, None)
    if (found := verify_plan(strategy)) is None:
        return Phases(None, None)
    verifying = replayed_verification(found, store)
    if not verifying.finished():
        rows = lambda: verify_rows(found, verifying)  # noqa: E731
        table = Table(title + ": verifying the culprit", rows, plain)
        run_phase(study, store, verifying, runners, table, verify_trials(study.spec))
    return Phases(None, found)


def target_of(study: VersionStudy) -> InstalledTarget:
    """The spec's command target with a bare ``python`` kept, so the version's environment runs."""
    inner = make_target(study.spec, study.spec_path.parent)
    assert isinstance(inner, CommandTarget), "a version bisection's spec has a command target"
    bare = dataclasses.replace(inner, argv=study.request.command)
    return InstalledTarget(bare, environments_of(study))


def environments_of(study: VersionStudy) -> Environments:
    """Where each version's environment is made and kept (`layout.VersionsPaths.envs`)."""
    return Environments(study.installation, study.paths.envs, BUILD_TIMEOUT_S)


def run_phase(
    study: VersionStudy,
    store: Store,
    strategy: Strategy,
    runners: RunnerMaker,
    table: Table,
    make_trial: TrialFactory,
) -> None:
    """Run ``strategy`` on the engine until it is done, each version in its environment, under
    ``table`` (with the installs under way beneath it)."""
    logs = study.paths.logs
    progress = make_progress(
        table.title, table.rows, table.plain, notes=lambda: builds_under_way(logs)
    )
    target = target_of(study)
    try:
        with runners(target, logs) as runner:
            Engine(Batched(strategy), runner, store, study.spec.study, make_trial, progress).run()
    finally:
        target.close()
        progress.close()


def finish(
    study: VersionStudy,
    strategy: CommitStrategy,
    store: Store,
    rerun: str,
    phases: Phases,
) -> VersionsResult:
    """Write the report; what it says, as values."""
    verifying, refused = phases.verifying, phases.refusal
    verification = None if verifying is None else replayed_verification(verifying, store).result()
    outcomes = store.outcomes()
    endings = LogEndings()
    crashed = crashed_runs(outcomes, endings)
    evidence = evidence_of(outcomes, endings)
    untestable = {
        config.commit: outcome.detail
        for config, outcome in outcomes
        if outcome.status is TrialStatus.SKIP and config.commit
    }
    versions = study.range
    details = VersionsReport(
        tuple(study.installation.pins),
        untestable,
        verification,
        rerun,
        None if refused is None else refused.message,
        None if refused is None else refused.state.value,
    )
    write_report(study.paths, versions, strategy, crashed, evidence, details)
    result = strategy.result()
    refused_state = None if refused is None else refused.state
    state, code = state_and_exit_code(result.state, evidence, refused_state, verification)
    found = result.state is State.FOUND and not evidence.no_valid_runs and refused is None
    if evidence.no_valid_runs:
        warnings: tuple[str, ...] = (no_result_line(evidence),)
    else:
        warnings = tuple(
            w
            for w in (summary(crashed), same_ending_line(evidence), extra_fields_line(evidence))
            if w
        )
    runs_at = {
        versions.candidates[i]: (int(strategy.trials[i]), int(strategy.failures[i]))
        for i in range(len(versions.candidates))
    }
    runs_at[versions.good] = (strategy.good_trials, strategy.good_failures)
    return VersionsResult(
        study=study.spec.study,
        package=versions.package,
        state=state,
        exit_code=int(code),
        culprit=versions.candidates[result.culprit] if found else None,
        predecessor=predecessor(versions, result.culprit) if found else None,
        probability=result.probability,
        headline=headline(versions, result, strategy.settings.confidence, verification)
        if refused is None
        else refused.message,
        verification=verification,
        verification_line=None
        if verification is None or not found
        else verification_line(verification, False, UNIT),
        candidates=len(versions.candidates),
        trials=result.trials,
        report=study.paths.report,
        results=study.paths.results,
        store=study.paths.store,
        warnings=warnings,
        no_valid_runs=evidence.no_valid_runs,
        runs_at=runs_at,
        details=result,
    )


def progress_rows(
    study: VersionStudy, strategy: CommitStrategy
) -> list[tuple[str, int, int, str | None]]:
    """The most probable version first, the good end, then every probed version, oldest first."""
    result = strategy.result()
    probs = strategy.posterior().probs
    cands = study.range.candidates

    def row(i: int) -> tuple[str, int, int, str | None]:
        verdict = "untestable" if strategy.untestable[i] else f"P={probs[i]:.3f}"
        return (f"#{i + 1} {cands[i]}", int(strategy.trials[i]), int(strategy.failures[i]), verdict)

    good = (f"good {study.range.good}", strategy.good_trials, strategy.good_failures, "good end")
    others = [i for i in range(len(cands)) if i != result.culprit]
    ran = [i for i in others if strategy.trials[i] > 0 or strategy.untestable[i]]
    return [row(result.culprit), good, *[row(i) for i in ran]]
