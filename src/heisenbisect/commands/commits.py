"""`bisect commits FILE`: find the commit that introduced a flaky failure, resuming from the store."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from heisenbisect.decide.commits import CommitStrategy, State
from heisenbisect.commands.common import add_execution_arguments, add_spec_argument, load, rerun_command, with_overrides
from heisenbisect.studies.commits import CommitStudy, open_commits_store, prepare, replayed, run_study
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.exit_codes import ExitCode, signal_exit_code
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import make_progress
from heisenbisect.records import Config, Outcome
from heisenbisect.reports.commits import headline, write_report
from heisenbisect.reports.evidence import evidence_of
from heisenbisect.reports.tracebacks import crashed_runs, summary
from heisenbisect.targets.preflight import commit_problem_lines
from heisenbisect.signals import signal_of

if TYPE_CHECKING:
    from heisenbisect.api import CommitsResult, Options


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "commits",
        help="noisy git bisection over the spec's commit range",
        description="Probe the commits between commits.good and commits.bad (first-parent by default) "
        "under one config, keep a posterior over the first bad commit, and stop when one commit holds "
        "commits.confidence. Each probe runs in a worktree of its own; your working tree, index and "
        "HEAD are never touched; with --runner ray each probed commit gets a worktree on its worker. "
        "Rerunning resumes from <output>/<study>/commits.sqlite. Writes "
        "commits.md, commits.png and commits.json beside the screening report.",
    )
    add_spec_argument(parser)
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FACTOR=LEVEL",
        help="probe under this level of a factor instead of its baseline (repeatable)",
    )
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """`bisect_commits`, then print what it found."""
    from heisenbisect.api import Options, StudyInterrupted

    try:
        result = bisect_commits(Options.from_args(args), args.config)
    except StudyInterrupted as exc:
        print_result(exc.result)
        print(f"interrupted; resume with: {rerun_command()}", file=sys.stderr)
        return exc.exit_code
    return print_result(result)


def bisect_commits(options: Options, assignments: list[str]) -> CommitsResult:
    """Check, open the store, resume, probe until decided; write the report (`heisenbisect.commits`)."""
    from heisenbisect.api import StudyInterrupted

    spec, _ = load(options)
    spec = with_overrides(spec, options)
    # the folder and script are the bad commit's, as its worktree holds them (targets.preflight)
    if problems := commit_problem_lines(spec, Path(options.spec)):
        raise SpecError(problems)
    base = parse_config(spec, assignments)
    study = prepare(spec, Path(options.spec), base, options.out)
    with open_commits_store(study, options.fresh) as store:
        resumed = store.count()
        print(
            f"{len(study.range.candidates)} candidate commits, config {base.key}"
            + (f"; resuming with {resumed} stored trials from {study.store_path}" if resumed else ""),
            file=sys.stderr,
        )
        if study.stored:
            print(f"p_bad learned from runs already stored at the bad commit: {'; '.join(study.stored.sources)}",
                  file=sys.stderr)
        strategy = replayed(study, store)
        progress = make_progress(f"bisect commits {spec.study}", lambda: progress_rows(study, strategy), options.plain)
        try:
            run_study(study, store, strategy, progress, runner_override=options.runner, address_override=options.address)
        except KeyboardInterrupt as exc:
            progress.close()
            result = _finish(study, replayed(study, store), store.outcomes())
            raise StudyInterrupted(signal_exit_code(signal_of(exc)), study.store_path, result) from None
        progress.close()
        strategy = replayed(study, store)  # the report comes from the store, not from memory
        outcomes = store.outcomes()
    return _finish(study, strategy, outcomes)


def parse_config(spec: Spec, assignments: list[str]) -> Config:
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
        raise HeisenbisectError(f"--config: no factor named {exc.args[0]!r}; factors: {names}") from None
    except ValueError as exc:
        raise HeisenbisectError(f"--config: {exc}") from None


def _finish(study: CommitStudy, strategy: CommitStrategy, outcomes: list[tuple[Config, Outcome]]) -> CommitsResult:
    """Write the report; what it says, with the exit code that says it to scripts (README)."""
    from heisenbisect.api import CommitsResult

    crashed = crashed_runs(outcomes)
    evidence = evidence_of(outcomes)
    paths = write_report(study.folder, study.range, strategy, study.base.key, crashed, evidence)
    result = strategy.result()
    culprit = study.range.candidates[result.culprit]
    found = result.state is State.FOUND and not evidence.no_valid_runs
    if evidence.no_valid_runs:
        state, code, warnings = "no_valid_runs", ExitCode.NO_VALID_RUNS, (evidence.no_result_line(),)
    else:
        state = result.state.value
        code = ExitCode.DECIDED if result.state in (State.FOUND, State.SKIPPED) else ExitCode.UNDECIDED
        warnings = tuple(w for w in (summary(crashed), evidence.same_ending_line()) if w)
    return CommitsResult(
        study=study.spec.study, state=state, exit_code=int(code),
        culprit=culprit.sha if found else None,
        culprit_line=f"{culprit.author}, {culprit.date}" if found else None,
        probability=result.probability, headline=headline(study.range, result, strategy.settings.confidence),
        candidates=len(study.range.candidates), trials=result.trials, report=paths.markdown, plot=paths.plot,
        results=paths.results, store=study.store_path, warnings=warnings, no_valid_runs=evidence.no_valid_runs,
        details=result,
    )


def print_result(result: CommitsResult) -> int:
    """What ``bisect commits`` prints; returns its exit code."""
    if result.no_valid_runs:
        for line in result.warnings:
            print(line, file=sys.stderr)
        print(f"report: {result.report}")
        return result.exit_code
    print(result.headline)
    if result.culprit is not None:
        print(f"  {result.culprit}\n  {result.culprit_line}")
    print(f"report: {result.report}  (plot {result.plot.name}, results {result.results.name})")
    for line in result.warnings:
        print(line, file=sys.stderr)
    return result.exit_code


def progress_rows(study: CommitStudy, strategy: CommitStrategy) -> list[tuple[str, int, int, str | None]]:
    """The most probable commit first, then every probed commit, oldest first."""
    result = strategy.result()
    probs = strategy.posterior().probs
    cands = study.range.candidates

    def row(i: int) -> tuple[str, int, int, str | None]:
        verdict = "untestable" if strategy.untestable[i] else f"P={probs[i]:.3f}"
        return f"#{i + 1} {cands[i].short} {cands[i].subject[:40]}", int(strategy.trials[i]), int(strategy.failures[i]), verdict

    good = (f"good {study.range.good.short}", strategy.good_trials, strategy.good_failures, "good end")
    touched = [int(i) for i in np.flatnonzero((strategy.trials > 0) | strategy.untestable)]
    return [row(result.culprit), good, *[row(i) for i in touched if i != result.culprit]]
