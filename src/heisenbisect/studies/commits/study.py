"""The commit bisection behind ``bisect commits`` and ``heisenbisect.commits``: check the spec,
resolve the range, probe commits (each in a worktree of its own) until one holds the asked
confidence or the budget is spent, write the report and answer (`studies.commits.result`).

The report comes from the store, never from the live run's memory: stopped by a signal, the
bisection still writes what it knows so far, and `StudyInterrupted` carries it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from heisenbisect.decide.batches import Batched
from heisenbisect.decide.commits import CommitStrategy, State
from heisenbisect.decide.crashes import crashed_runs
from heisenbisect.decide.evidence import evidence_of
from heisenbisect.engine import Engine, Progress
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.exit_codes import signal_exit_code
from heisenbisect.git import remove_stale_worktrees, uncommitted_paths
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import make_progress
from heisenbisect.records import Config, Outcome
from heisenbisect.reports.commits import ReportDetails, headline, write_report
from heisenbisect.reports.evidence import (
    extra_fields_line,
    no_result_line,
    same_ending_line,
)
from heisenbisect.reports.tracebacks import summary
from heisenbisect.runners.factory import RunnerMaker, runner_maker
from heisenbisect.signals import signal_of
from heisenbisect.store import Store
from heisenbisect.studies.commits.direction import FixView
from heisenbisect.studies.commits.marks import in_force
from heisenbisect.studies.commits.prepare import CommitStudy, open_commits_store, prepare, replayed
from heisenbisect.studies.commits.priors import describe_priors
from heisenbisect.studies.commits.result import CommitsResult, state_and_exit_code
from heisenbisect.studies.common import trial_factory
from heisenbisect.studies.options import Options, StudyInterrupted, loaded
from heisenbisect.targets.commit import CommitTarget, build_argv, builds_under_way
from heisenbisect.targets.log_endings import LogEndings
from heisenbisect.targets.preflight import commit_problem_lines
from heisenbisect.targets.registry import make_target


def bisect_commits(
    options: Options,
    assignments: list[str],
    runners: RunnerMaker | None = None,
    label: Callable[[str], str] | None = None,
    accepted: Callable[[], Path] | None = None,
) -> CommitsResult:
    """Check, open the store, resume, probe on the runner ``runners`` makes (default: the
    spec's, with the options' overrides) until decided; write the report and answer.
    ``label`` names the range's fields in messages (`prepare`). ``accepted``, for a spec not
    yet saved (a draft), saves it once the store took it and returns where it now lies."""
    spec, _ = loaded(options)
    # the folder and script are the bad commit's, as its worktree holds them (targets.preflight)
    if problems := commit_problem_lines(spec, Path(options.spec)):
        raise SpecError(problems)
    base = parse_config(spec, assignments)
    study = prepare(spec, Path(options.spec), base, options.out, label)
    if warning := uncommitted_warning(study):
        print(warning, file=sys.stderr)
    runners = runners or runner_maker(spec, options.runner, options.address)
    with open_commits_store(study, options.fresh) as store:
        if accepted is not None:
            study = replace(study, spec_path=accepted())
        resumed = store.count()
        print(
            f"{len(study.range.candidates)} candidate commits, config {base.key}"
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
        strategy = replayed(study, store)
        progress = make_progress(
            f"bisect commits {spec.study}",
            lambda: progress_rows(study, strategy),
            options.plain,
            notes=lambda: builds_under_way(study.paths.logs),
        )
        try:
            probe(study, store, strategy, runners, progress)
        except KeyboardInterrupt as exc:
            progress.close()
            result = _finish(study, replayed(study, store), in_force(store))
            raise StudyInterrupted(
                signal_exit_code(signal_of(exc)), study.paths.store, result
            ) from None
        progress.close()
        strategy = replayed(study, store)  # the report comes from the store, not from memory
        outcomes = in_force(store)
    return _finish(study, strategy, outcomes)


def uncommitted_warning(study: CommitStudy, shown: int = 5) -> str | None:
    """One line naming the edited, uncommitted files of the probed folder: a user who edited
    the check script expects the probes to run the edit; they run each commit's own files."""
    edited = uncommitted_paths(study.range.repo, study.workdir)
    if not edited:
        return None
    named = ", ".join(edited[:shown]) + (
        f" and {len(edited) - shown} more" if len(edited) > shown else ""
    )
    return (
        f"warning: uncommitted changes in {study.range.repo} ({named}): the probes use the "
        "committed versions at each commit, not these edits; commit them, or `git stash`, to "
        "probe what you edited"
    )


def parse_config(spec: Spec, assignments: list[str]) -> Config:
    """``--config FACTOR=LEVEL ...`` as the config every commit is probed under."""
    pairs: dict[str, str] = {}
    for text in assignments:
        name, sep, label = text.partition("=")
        if not sep or not name:
            raise HeisenbisectError(f"--config: expected FACTOR=LEVEL, got {text!r}")
        pairs[name] = label
    try:
        return spec.config_from_assignments(pairs)
    except KeyError as exc:
        names = ", ".join(f.name for f in spec.factors) or "none"
        raise HeisenbisectError(
            f"--config: no factor named {exc.args[0]!r}; factors: {names}"
        ) from None
    except ValueError as exc:
        raise HeisenbisectError(f"--config: {exc}") from None


def probe(
    study: CommitStudy,
    store: Store,
    strategy: CommitStrategy,
    runners: RunnerMaker,
    progress: Progress | None = None,
) -> None:
    """Probe until ``strategy`` (already replayed from ``store``) is done, each commit in a worktree.

    A batch of probes at a time (`decide.batches`): the same study and seeds make the same probes
    whatever order parallel results land in."""
    if strategy.finished():
        return
    spec = study.spec
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
    try:
        with target, runners(target, study.paths.logs) as runner:
            Engine(
                Batched(strategy), runner, store, spec.study, trial_factory(spec), progress
            ).run()
    finally:
        remove_stale_worktrees(study.range.repo)  # those of Ray hosts killed rather than closed


def _finish(
    study: CommitStudy, strategy: CommitStrategy, outcomes: list[tuple[Config, Outcome]]
) -> CommitsResult:
    """Write the report; what it says, as values."""
    endings = LogEndings()
    crashed = crashed_runs(outcomes, endings)
    evidence = evidence_of(outcomes, endings)
    paths = study.paths
    shown = shown_strategy(study, strategy)
    write_report(
        paths,
        study.range,
        shown,
        study.base.key,
        crashed,
        evidence,
        details_of(study),
        study.spec,
        study.spec_path,
        study.base,
    )
    result = shown.result()
    culprit = study.range.candidates[result.culprit]
    state, code = state_and_exit_code(result.state, evidence)
    found = result.state is State.FOUND and not evidence.no_valid_runs
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
        headline=("fix: " if study.fix else "")
        + headline(study.range, result, strategy.settings.confidence),
        candidates=len(study.range.candidates),
        trials=result.trials,
        report=paths.report,
        plot=paths.plot,
        results=paths.results,
        store=paths.store,
        warnings=warnings,
        no_valid_runs=evidence.no_valid_runs,
        details=result,
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


def details_of(study: CommitStudy) -> ReportDetails:
    """What the report says beyond the posterior: direction, soft priors, stored runs used."""
    c = study.commits
    return ReportDetails(
        fix=study.fix,
        priors=tuple(describe_priors(c.priors)),
        weights=None if study.weights is None else tuple(float(w) for w in study.weights.weights),
        stored_sources=study.stored.sources if study.stored else (),
    )
