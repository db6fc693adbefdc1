"""The commit bisection behind ``bisect commits`` and ``heisenbisect.commits``: check the spec,
resolve the range, probe commits (each in a worktree of its own) until one holds the asked
confidence or the budget is spent, write the report and answer (`studies.commits.result`).

The report comes from the store, never from the live run's memory: stopped by a signal, the
bisection still writes what it knows so far, and `StudyInterrupted` carries it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from heisenbisect.decide.batches import Batched
from heisenbisect.decide.commits import CommitStrategy, Result, State
from heisenbisect.decide.crashes import crashed_runs
from heisenbisect.decide.evidence import evidence_of
from heisenbisect.decide.range_check import RangeCheckStrategy, Refusal, reversed_rates_refusal
from heisenbisect.decide.strategy import Strategy
from heisenbisect.decide.verify import Verification
from heisenbisect.engine import Engine, TrialFactory
from heisenbisect.errors import SpecError
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.git import remove_stale_worktrees
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import Snapshot, make_progress
from heisenbisect.reports.commits import (
    ReportDetails,
    describe_priors,
    headline,
    verification_line,
    write_report,
)
from heisenbisect.reports.evidence import (
    extra_fields_line,
    no_result_line,
    same_ending_line,
)
from heisenbisect.reports.tracebacks import summary
from heisenbisect.runners.factory import RunnerMaker, runner_maker
from heisenbisect.signals import signal_of
from heisenbisect.store import Store
from heisenbisect.studies.commits.check import replayed_check, run_timeout, say
from heisenbisect.studies.commits.direction import FixView
from heisenbisect.studies.commits.marks import in_force, search_runs
from heisenbisect.studies.commits.prepare import (
    CommitStudy,
    from_options,
    open_commits_store,
    replayed,
)
from heisenbisect.studies.commits.result import CommitsResult, state_and_exit_code
from heisenbisect.studies.commits.verify import Phases, VerifyPlan, verify_trials
from heisenbisect.studies.commits.verify import plan as verify_plan
from heisenbisect.studies.commits.verify import progress_rows as verify_rows
from heisenbisect.studies.commits.verify import replayed as replayed_verification
from heisenbisect.studies.common import trial_factory
from heisenbisect.studies.options import Options, StudyInterrupted
from heisenbisect.targets.commit import CommitTarget, build_argv, builds_under_way
from heisenbisect.targets.log_endings import LogEndings
from heisenbisect.targets.preflight import lines_of, uncommitted_warning, worktree_problems
from heisenbisect.targets.registry import make_target


def bisect_commits(
    options: Options,
    assignments: list[str],
    runners: RunnerMaker | None = None,
    label: Callable[[str], str] | None = None,
    accepted: Callable[[], Path] | None = None,
) -> CommitsResult:
    """Check, open the store, resume, and run the three phases on the runner ``runners`` makes
    (default: the spec's, with the options' overrides): the range check at the two ends, the
    search until decided, the verification of a found culprit. Write the report and answer.
    ``label`` names the range's fields in messages (`prepare`). ``accepted``, for a spec not
    yet saved (a draft), saves it once the store took it and returns where it now lies."""
    study = from_options(options, assignments, label)
    runners = runners or runner_maker(study.spec, options.runner, options.address)
    # the folder and script are the bad commit's, as its worktree holds them (targets.preflight)
    problems = worktree_problems(study.spec, study.range.repo, study.range.bad.sha, study.workdir)
    if problems:
        raise SpecError(lines_of(problems, study.spec_path))
    if warning := uncommitted_warning(study.range.repo, study.workdir):
        print(warning, file=sys.stderr)
    with open_commits_store(study, options.fresh) as store:
        if accepted is not None:
            study = replace(study, spec_path=accepted())
        resumed = store.count()
        print(
            f"{len(study.range.candidates)} candidate commits, config {study.base.key}"
            + (
                f"; resuming with {resumed} stored trials from {study.paths.store}"
                if resumed
                else ""
            ),
            file=sys.stderr,
        )
        if study.stored:
            end = "good (failing) end" if study.fix else "bad commit"
            print(
                f"p_bad learned from runs already stored at the {end}: {'; '.join(study.stored.sources)}",
                file=sys.stderr,
            )
        try:
            phases = _phases(study, store, runners, options.plain)
        except KeyboardInterrupt as exc:
            result = _finish(study, store)
            raise StudyInterrupted(
                signal_exit_code(signal_of(exc)), study.paths.store, result
            ) from None
        # the report comes from the store, not from memory
        return _finish(study, store, phases.refusal, phases.verifying)


def _phases(study: CommitStudy, store: Store, runners: RunnerMaker, plain: bool) -> Phases:
    """The range check, the search, the verification; each skipped when the store holds it."""
    title = f"bisect commits {study.spec.study}"
    check = replayed_check(study, study.strategy(), store)
    if not check.finished():
        table = Table(title + ": the two ends", lambda: check_rows(study, check), plain)
        run_phase(study, store, check, runners, table, study.spec, trial_factory(study.spec))
        check = replayed_check(study, study.strategy(), store)
    if (refused := check.result().refusal(study.words)) is not None:
        return Phases(refused, None)
    spec, line = run_timeout(study.spec, search_runs(store), check)
    say(line)
    strategy = replayed(study, store)
    probe(
        study,
        store,
        strategy,
        runners,
        Table(title, lambda: progress_rows(study, strategy), plain),
        spec,
    )
    strategy = replayed(study, store)
    if (refused := reversed_rates_refusal(strategy, check.result(), study.words)) is not None:
        return Phases(refused, None)
    if (found := verify_plan(study, strategy)) is None:
        return Phases(None, None)
    verifying = replayed_verification(found, store)
    if not verifying.finished():
        rows = lambda: verify_rows(study, found, verifying)  # noqa: E731
        table = Table(title + ": verifying the culprit", rows, plain)
        run_phase(study, store, verifying, runners, table, spec, verify_trials(spec))
    return Phases(None, found)


@dataclass(frozen=True)
class Table:
    """The live table of a phase: its title, its rows, and whether to print plain lines instead."""

    title: str
    rows: Snapshot
    plain: bool


def probe(
    study: CommitStudy,
    store: Store,
    strategy: CommitStrategy,
    runners: RunnerMaker,
    table: Table | None = None,
    spec: Spec | None = None,
) -> None:
    """Probe until ``strategy`` (already replayed from ``store``) is done, each commit in a
    worktree; ``spec`` is the study's with the timeout the search runs under."""
    if strategy.finished():
        return
    spec = spec or study.spec
    run_phase(study, store, strategy, runners, table, spec, trial_factory(spec))


def run_phase(
    study: CommitStudy,
    store: Store,
    strategy: Strategy,
    runners: RunnerMaker,
    table: Table | None,
    spec: Spec,
    make_trial: TrialFactory,
) -> None:
    """Run ``strategy`` on the engine until it is done, each commit in a worktree of its own,
    under ``table`` (with the builds under way beneath it; None: nothing shown).

    A batch of probes at a time (`decide.batches`): the same study and seeds make the same probes
    whatever order parallel results land in."""
    commits = study.commits
    target = CommitTarget(
        make_target(spec, study.spec_path.parent),
        study.range.repo,
        spec.execution.parallel,
        build_argv(commits.build),
        commits.pythonpath,
        study.workdir,
        commits.build_timeout,
    )
    logs = study.paths.logs
    progress = (
        None
        if table is None
        else make_progress(
            table.title, table.rows, table.plain, notes=lambda: builds_under_way(logs)
        )
    )
    try:
        with target, runners(target, logs) as runner:
            Engine(Batched(strategy), runner, store, spec.study, make_trial, progress).run()
    finally:
        remove_stale_worktrees(study.range.repo)  # those of Ray hosts killed rather than closed
        if progress is not None:
            progress.close()


def _finish(
    study: CommitStudy,
    store: Store,
    refusal: Refusal | None = None,
    verifying: VerifyPlan | None = None,
) -> CommitsResult:
    """Decide from the store what the bisection answers (state, exit code, the report's
    details), then write the report from those values; the answer, as values."""
    strategy = replayed(study, store)
    outcomes = in_force(store)
    verification = None if verifying is None else replayed_verification(verifying, store).result()
    endings = LogEndings()
    crashed = crashed_runs(outcomes, endings)
    evidence = evidence_of(outcomes, endings)
    seen = shown(study, strategy, verification)
    result = seen.result
    refused = None if refusal is None else refusal.state
    state, code = state_and_exit_code(result.state, evidence, refused, verification)
    found = result.state is State.FOUND and not evidence.no_valid_runs and refusal is None
    details = details_of(study, refusal, verification)
    paths = study.paths
    write_report(
        paths,
        study.range,
        seen.strategy,
        study.base.key,
        crashed,
        evidence,
        details,
        study.spec,
        study.spec_path,
        study.base,
    )
    culprit = study.range.candidates[result.culprit]
    if evidence.no_valid_runs:
        warnings: tuple[str, ...] = (no_result_line(evidence),)
    else:
        warnings = tuple(
            w
            for w in (summary(crashed), same_ending_line(evidence), extra_fields_line(evidence))
            if w
        )
    return CommitsResult(
        study=study.spec.study,
        state=state,
        exit_code=int(code),
        culprit=culprit.sha if found else None,
        culprit_line=f"{culprit.author}, {culprit.date}" if found else None,
        probability=result.probability,
        headline=seen.headline if refusal is None else refusal.message,
        candidates=len(study.range.candidates),
        trials=result.trials,
        report=paths.report,
        plot=paths.plot,
        results=paths.results,
        store=paths.store,
        warnings=warnings,
        no_valid_runs=evidence.no_valid_runs,
        details=result,
        refusal=None if refusal is None else refusal.message,
        verification=verification,
        verification_line=None
        if verification is None or not found
        else verification_line(verification, study.fix),
    )


def progress_rows(
    study: CommitStudy, strategy: CommitStrategy
) -> list[tuple[str, int, int, str | None]]:
    """The most probable commit first, then every probed commit, oldest first."""
    strategy = shown_strategy(study, strategy)
    result = strategy.result()
    probs = strategy.posterior().probs
    cands = study.range.candidates

    def row(i: int) -> tuple[str, int, int, str | None]:
        verdict = "untestable" if strategy.untestable[i] else f"P={probs[i]:.3f}"
        return (
            f"#{i + 1} {cands[i].short} {cands[i].subject[:40]}",
            int(strategy.trials[i]),
            int(strategy.failures[i]),
            verdict,
        )

    good = (
        f"good {study.range.good.short}",
        strategy.good_trials,
        strategy.good_failures,
        "good end",
    )
    touched = [int(i) for i in np.flatnonzero((strategy.trials > 0) | strategy.untestable)]
    return [row(result.culprit), good, *[row(i) for i in touched if i != result.culprit]]


def shown_strategy(study: CommitStudy, strategy: CommitStrategy) -> CommitStrategy:
    """The strategy in the range's order, as reports show it (a fix's is kept reversed)."""
    return FixView(strategy) if study.fix else strategy  # type: ignore[return-value]


@dataclass(frozen=True)
class Shown:
    """Where a bisection stands, as its report, its answer and an action's line show it."""

    strategy: CommitStrategy  # in the range's order (`shown_strategy`)
    result: Result
    headline: str  # ``fix: `` first for a fix bisection


def shown(
    study: CommitStudy, strategy: CommitStrategy, verification: Verification | None = None
) -> Shown:
    """The replayed ``strategy`` in the range's order, its result and headline, made once for
    `_finish` and the actions (`actions`) alike."""
    view = shown_strategy(study, strategy)
    result = view.result()
    confidence = strategy.settings.confidence
    line = headline(study.range, result, confidence, verification)
    return Shown(view, result, ("fix: " if study.fix else "") + line)


def details_of(
    study: CommitStudy,
    refusal: Refusal | None = None,
    verification: Verification | None = None,
) -> ReportDetails:
    """What the report says beyond the posterior: direction, soft priors, stored runs used, the
    range check's refusal and the culprit's verification."""
    c = study.commits
    return ReportDetails(
        fix=study.fix,
        priors=tuple(describe_priors(c.priors)),
        weights=None if study.weights is None else tuple(float(w) for w in study.weights.weights),
        stored_sources=study.stored.sources if study.stored else (),
        refusal=None if refusal is None else refusal.message,
        refusal_state=None if refusal is None else refusal.state.value,
        verification=verification,
    )


def check_rows(
    study: CommitStudy, check: RangeCheckStrategy
) -> list[tuple[str, int, int, str | None]]:
    """The live table while the ends run: one row per end."""
    found = check.result()
    failing, passing = found.failing, found.passing
    return [
        (study.words.failing_end, failing[0], failing[1], found.state.value),
        ("the other end", passing[0], passing[1], None),
    ]
