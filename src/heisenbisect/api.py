"""The Python API: run a study from a script or a notebook and get its answer as an object.

``heisenbisect.run(path)`` is ``bisect run path``: the same driver (`commands.run.drive`), the
same store, resume, report and exit code, returned as a `StudyResult` instead of printed;
``heisenbisect.commits(path)`` is ``bisect commits path`` (`CommitsResult`) and
``heisenbisect.amplify(path)`` is ``bisect amplify path`` (`AmplifyResult`). Bad input
(a spec, an option, a target that cannot run, a store of another spec) raises
`heisenbisect.HeisenbisectError` (`SpecError` for the spec), which the CLI prints as its one
line with exit 2; Ctrl-C (or SIGTERM under the CLI) raises `StudyInterrupted`, a
`KeyboardInterrupt`, after keeping every finished trial. docs/api.md.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from heisenbisect.errors import HeisenbisectError, SpecError

if TYPE_CHECKING:
    from heisenbisect.decide.group import GroupResult
    from heisenbisect.decide.screening import ScreeningResult

RUNNERS = ("local", "ray")
RESUME_IN_PYTHON = "the same heisenbisect call"


@dataclass(frozen=True)
class Options:
    """What a study is run with: the spec's file and the command line's overrides (``--out`` ...)."""

    spec: str
    out: str | None = None
    fresh: bool = False
    parallel: int | None = None
    runner: str | None = None
    address: str | None = None
    plain: bool = True  # plain progress lines on stderr; the CLI draws a live table on a terminal
    resume_with: str = RESUME_IN_PYTHON  # what the message after an interruption says to run again

    @classmethod
    def of(cls, spec: str | os.PathLike, out: str | os.PathLike | None, fresh: bool, parallel: int | None,
           runner: str | None, address: str | None) -> "Options":
        """Checked arguments of a Python call; a bad one raises `HeisenbisectError` naming it."""
        if not isinstance(spec, (str, os.PathLike)):
            raise HeisenbisectError(f"spec: expected the path of a hypotheses file, got {type(spec).__name__}")
        if out is not None and not isinstance(out, (str, os.PathLike)):
            raise HeisenbisectError(f"out: expected a folder's path, got {type(out).__name__}")
        if address is not None and not isinstance(address, str):
            raise HeisenbisectError(f"address: expected a Ray address such as 'ray://host:10001', got {address!r}")
        if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1):
            raise HeisenbisectError(f"parallel: expected a whole number of trials at once, 1 or more, got {parallel!r}")
        if runner is not None and runner not in RUNNERS:
            raise HeisenbisectError(f"runner: expected one of {', '.join(map(repr, RUNNERS))}, got {runner!r}")
        return cls(os.fspath(spec), None if out is None else os.fspath(out), bool(fresh), parallel, runner, address)

    @classmethod
    def from_args(cls, args) -> "Options":
        """The options of a parsed command line (argparse checked them)."""
        from heisenbisect.commands.common import rerun_command

        return cls(args.spec, args.out, args.fresh, args.parallel, args.runner, args.address, args.plain, rerun_command())


@dataclass(frozen=True)
class ArmVerdict:
    """One change against the baseline (or the baseline itself) and what the study says about it."""

    change: str  # "overlap=0", "a=1, b=0"; "baseline" for the baseline
    verdict: str  # eliminates, reduces, no_effect, increases, inconclusive, not_applied, cannot_reproduce, untestable
    runs: int | None  # runs of the arm that decided it; None for a change cleared by a group
    failed_runs: int | None
    p_value: float | None
    note: str = ""  # not_applied: names the variable never read, and "did you mean" a close name that was
    decided_by_group: bool = False  # group screening: cleared with its group, no arm of its own


@dataclass(frozen=True)
class StudyResult:
    """What ``bisect run`` prints and writes, as values; the files are in ``report.parent``."""

    study: str
    strategy: str  # "one_at_a_time" or "group"
    exit_code: int  # the CLI's: 0 decided, 1 undecided, 3 cannot reproduce, 4 no valid runs (README)
    conclusion: str  # plain text; the markdown one is in results.json
    baseline: ArmVerdict
    arms: tuple[ArmVerdict, ...]
    report: Path
    results: Path
    store: Path
    logs: Path
    warnings: tuple[str, ...]  # what the CLI prints on stderr after the verdicts
    no_valid_runs: bool
    details: "ScreeningResult | GroupResult" = field(repr=False)  # the full result the report is made of

    @property
    def decided(self) -> bool:
        return self.exit_code == 0

    def verdict(self, change: str) -> str:
        """The verdict on ``change`` (``"overlap=0"``); KeyError naming the changes there are."""
        for arm in self.arms:
            if arm.change == change:
                return arm.verdict
        raise KeyError(f"no arm {change!r}; arms: {', '.join(a.change for a in self.arms)}")


class StudyInterrupted(KeyboardInterrupt):
    """The study was stopped (Ctrl-C, SIGTERM); every finished trial is kept, and running the
    same study again resumes it. ``exit_code`` is the CLI's (130, 143, 129); ``result``, where
    a report was written on the way out (`commits`), what it says so far."""

    def __init__(self, exit_code: int, store: Path, result: "CommitsResult | None" = None):
        super().__init__(f"interrupted; every finished trial is kept in {store}")
        self.exit_code = exit_code
        self.store = store
        self.result = result


def run(
    spec: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    fresh: bool = False,
    parallel: int | None = None,
    runner: str | None = None,
    address: str | None = None,
) -> StudyResult:
    """Screen the factors of the hypotheses file ``spec`` (one at a time or in groups, as its
    ``statistics.strategy`` says), resuming from its store; write the report; return the answer.

    ``out``, ``fresh``, ``parallel``, ``runner`` and ``address`` are ``bisect run``'s options.
    """
    return screen(Options.of(spec, out, fresh, parallel, runner, address))


def screen(options: Options) -> StudyResult:
    """`run` for already checked options: the body of ``bisect run`` without its printing."""
    from heisenbisect.commands.common import load, with_overrides
    from heisenbisect.commands.run import drive
    from heisenbisect.commands.validate import budget_warning
    from heisenbisect.targets.preflight import problem_lines

    spec, spec_dir = load(options)
    spec = with_overrides(spec, options)
    if problems := problem_lines(spec, Path(options.spec)):
        raise SpecError(problems)  # the target cannot run: no trial would test anything
    if warning := budget_warning(spec, Path(options.spec)):
        print(warning, file=sys.stderr)
    if spec.uses_groups:
        from heisenbisect.studies.group import progress_rows, replayed_group_screening as replayed

        title, answer = f"bisect run {spec.study} (group screening)", _group_answer
    else:
        from heisenbisect.studies.screening import progress_rows, replayed_screening as replayed

        title, answer = f"bisect run {spec.study}", _screening_answer
    driven = drive(options, spec, spec_dir, replayed, progress_rows, title)
    if isinstance(driven, int):
        from heisenbisect.studies.common import StudyPaths

        raise StudyInterrupted(driven, StudyPaths.of(spec, options.out, options.spec).store)
    strategy, paths, crashed, context = driven
    result = strategy.result()
    from heisenbisect.reports.screening import plain as plain_text
    from heisenbisect.reports.tracebacks import summary

    report, conclusion, baseline, arms, code = answer(spec, options, result, paths, crashed, context)
    evidence = context.evidence
    load_caution = context.load_caution and plain_text(context.load_caution)
    warnings = tuple(w for w in (summary(crashed), evidence.same_ending_line(), load_caution) if w)
    if evidence.no_valid_runs:
        from heisenbisect.exit_codes import ExitCode

        code, warnings = ExitCode.NO_VALID_RUNS, (evidence.no_result_line(),)
    return StudyResult(
        study=spec.study, strategy="group" if spec.uses_groups else "one_at_a_time", exit_code=int(code),
        conclusion=conclusion, baseline=baseline, arms=arms, report=report, results=paths.results,
        store=paths.store, logs=paths.logs, warnings=warnings, no_valid_runs=evidence.no_valid_runs, details=result,
    )


def _screening_answer(spec, options: Options, result, paths, crashed, context):
    from heisenbisect.commands.run import exit_code
    from heisenbisect.reports.screening import conclusion, label, plain, write_report

    report = write_report(spec, options.spec, result, paths, crashed, context)

    def verdict_of(arm) -> ArmVerdict:
        return ArmVerdict(label(arm.config), arm.verdict.value, arm.runs, arm.failed_runs, arm.p_value, arm.note)

    text = plain(conclusion(spec, result, context.evidence))
    return report, text, verdict_of(result.baseline), tuple(verdict_of(a) for a in result.arms), exit_code(result)


def _group_answer(spec, options: Options, result, paths, crashed, context):
    from heisenbisect.commands.run_group import exit_code
    from heisenbisect.reports.group import conclusion, write_report
    from heisenbisect.reports.screening import plain

    report = write_report(spec, options.spec, result, paths, crashed, context)
    by_id = {arm.id: arm.result for arm in result.arms}
    base = result.baseline
    baseline = ArmVerdict("baseline", base.verdict.value, base.runs, base.failed_runs, None, base.note)
    arms = []
    for v in result.changes:
        decided_by = None if v.via_group or v.arm is None else by_id.get(v.arm)
        arms.append(ArmVerdict(
            f"{v.change[0]}={v.change[1]}", v.verdict,
            decided_by.runs if decided_by else None, decided_by.failed_runs if decided_by else None,
            decided_by.p_value if decided_by else None, v.note, v.via_group,
        ))
    return report, plain(conclusion(spec, result)), baseline, tuple(arms), exit_code(result)


@dataclass(frozen=True)
class CommitsResult:
    """What ``bisect commits`` prints and writes, as values."""

    study: str
    state: str  # found; skipped (untestable commits keep the culprit among a few); budget, exhausted,
    #             contradiction, running (undecided); no_valid_runs
    exit_code: int  # the CLI's: 0 found (or skipped), 1 undecided, 4 no valid runs
    culprit: str | None  # the first bad commit's full sha, when found
    culprit_line: str | None  # its author and date
    probability: float  # the posterior of the most probable commit
    headline: str
    candidates: int
    trials: int
    report: Path
    plot: Path
    results: Path
    store: Path
    warnings: tuple[str, ...]
    no_valid_runs: bool
    details: object = field(repr=False)  # the bisection's full `decide.commits.Result`

    @property
    def decided(self) -> bool:
        return self.exit_code == 0


def commits(
    spec: str | os.PathLike,
    *,
    config: Sequence[str] = (),
    out: str | os.PathLike | None = None,
    fresh: bool = False,
    parallel: int | None = None,
    runner: str | None = None,
    address: str | None = None,
) -> CommitsResult:
    """Bisect the spec's commit range with a flaky signal, as ``bisect commits`` does; ``config``
    is its ``--config FACTOR=LEVEL`` list (default: every factor at its baseline)."""
    if isinstance(config, str):
        raise HeisenbisectError(f"config: expected a list of 'FACTOR=LEVEL' strings, got the string {config!r}")
    from heisenbisect.commands.commits import bisect_commits

    return bisect_commits(Options.of(spec, out, fresh, parallel, runner, address), list(config))


@dataclass(frozen=True)
class MeasuredSettings:
    """Settings of the stress knobs and what their runs measured, each with its interval."""

    knobs: dict[str, str]  # knob -> value, as amplify.json's "best"; {} for the current settings
    runs: int
    failed_runs: int
    rate: float  # the run-failure rate (posterior mean)
    rate_interval: tuple[float, float]
    runs_per_s: float
    runs_per_s_interval: tuple[float, float]
    bits_per_s: float  # the objective: bits about a culprit per second of run (docs/amplify.md)
    bits_per_s_interval: tuple[float, float]


@dataclass(frozen=True)
class AmplifyResult:
    """What ``bisect amplify`` prints and writes, as values."""

    study: str
    ending: str  # confirmed; not_confirmed, current_best (nothing beats the current settings); never_failed
    exit_code: int  # the CLI's: 0 confirmed, 1 not confirmed or current best, 3 never failed
    headline: str
    best: MeasuredSettings
    current: MeasuredSettings
    measured_by: str  # "confirmation" (its fresh, interleaved runs) or "search" (no confirmation ran)
    speedup: float | None  # best over current bits per second, from the confirmation
    p_value: float | None  # the confirmation's one-sided sequential p-value
    looks: int | None  # the confirmation's looks
    search_runs: int
    candidates: int
    confidence: float
    report: Path  # amplify.md
    plot: Path  # amplify.png
    results: Path  # amplify.json
    amplified: Path | None  # amplified.yaml, only when confirmed
    optuna_db: Path
    dashboard: str  # the optuna-dashboard command that opens optuna_db
    search_store: Path  # amplify.sqlite
    confirm_store: Path | None  # confirm.sqlite, when a confirmation ran
    logs: Path
    details: object = field(repr=False)  # the report's `reports.amplify.Summary`

    @property
    def confirmed(self) -> bool:
        return self.exit_code == 0


def amplify(
    spec: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    fresh: bool = False,
    parallel: int | None = None,
    runner: str | None = None,
    address: str | None = None,
) -> AmplifyResult:
    """Search the spec's ``amplify.knobs`` for the most evidence per second, confirm the best
    against the current settings and write amplified.yaml when confirmed, as ``bisect amplify``
    does, resuming from its stores; the keyword arguments are its options."""
    from heisenbisect.commands.amplify import amplify_study

    return amplify_study(Options.of(spec, out, fresh, parallel, runner, address))
