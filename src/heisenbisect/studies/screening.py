"""The screening study behind ``bisect run`` and ``heisenbisect.run``, one at a time or in
groups as the spec's ``statistics.strategy`` says: check the spec, drive the study to its
end, write the report, answer (`studies.screening_result`); and `rerender`, behind ``bisect
report``, which renders the report again from the store alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.exit_code import exit_code
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.hypotheses import Spec, load_spec
from heisenbisect.layout import StudyPaths, target_folder
from heisenbisect.reports import contention as contention_report
from heisenbisect.reports import group as group_report
from heisenbisect.reports import screening as screening_report
from heisenbisect.reports.context import ReportContext
from heisenbisect.reports.evidence import (
    extra_fields_line,
    no_result_line,
    same_ending_line,
)
from heisenbisect.reports.screening import plain
from heisenbisect.reports.tracebacks import summary
from heisenbisect.runners.factory import RunnerMaker, runner_maker
from heisenbisect.store import Store
from heisenbisect.studies import contention, group, one_at_a_time
from heisenbisect.studies.budget import budget_warning
from heisenbisect.studies.common import REPORT_TOLERATES
from heisenbisect.studies.drive import Driven, drive
from heisenbisect.studies.identity import RULE, spec_identity
from heisenbisect.studies.judgement import judge
from heisenbisect.studies.options import Options, loaded
from heisenbisect.studies.screening_result import (
    ArmVerdict,
    StudyResult,
    group_verdicts,
    screening_verdicts,
)
from heisenbisect.targets.preflight import problem_lines

REPORT_WAY_OUT = "report them with the spec they ran under, or start over with `bisect run --fresh`"


@dataclass(frozen=True)
class ScreeningKind:
    """What tells one screening strategy from the other, from the store to the answer."""

    name: str  # StudyResult.strategy
    title: str  # after the study's name in the progress display
    # each kind pairs its own strategy with its own result type (`Screening` and `ScreeningResult`,
    # `GroupScreening` and `GroupResult`): Any stands for whichever pair the kind holds
    replayed: Callable[[Spec, Store], Any]
    rows: Callable[[Any], list]
    write_report: Callable[..., Path]
    conclusion: Callable[[Spec, Any, ReportContext], str]  # markdown
    verdicts: Callable[[Any], tuple[ArmVerdict, tuple[ArmVerdict, ...]]]


ONE_AT_A_TIME = ScreeningKind(
    "one_at_a_time",
    "",
    one_at_a_time.replayed_screening,
    one_at_a_time.progress_rows,
    screening_report.write_report,
    lambda spec, result, context: screening_report.conclusion(spec, result, context.evidence),
    screening_verdicts,
)
GROUP = ScreeningKind(
    "group",
    " (group screening)",
    group.replayed_group_screening,
    group.progress_rows,
    group_report.write_report,
    lambda spec, result, context: group_report.conclusion(spec, result),
    group_verdicts,
)


def screening_kind(spec: Spec) -> ScreeningKind:
    return GROUP if spec.uses_groups else ONE_AT_A_TIME


def screen(options: Options, runners: RunnerMaker | None = None) -> StudyResult:
    """Screen the spec's factors, resuming from its store, on the runner ``runners`` makes
    (default: the spec's, with the options' overrides); write the report and answer.

    Bad input raises `HeisenbisectError` before any trial runs; a signal, `StudyInterrupted`."""
    spec, spec_dir = loaded(options)
    refuse_version_folder(StudyPaths.of(spec, options.out, options.spec))
    kind = screening_kind(spec)
    runners = runners or runner_maker(spec, options.runner, options.address)
    if problems := problem_lines(spec, Path(options.spec)):
        raise SpecError(problems)  # the target cannot run: no trial would test anything
    if warning := budget_warning(spec, Path(options.spec)):
        print(warning, file=sys.stderr)
    driven = drive(
        options,
        spec,
        spec_dir,
        kind.replayed,
        kind.rows,
        f"bisect run {spec.study}{kind.title}",
        runners,
    )
    result = driven.strategy.result()
    evidence = driven.context.evidence
    code, warnings = exit_code(result, evidence), _warnings(driven)
    conclusion = plain(kind.conclusion(spec, result, driven.context))
    report = kind.write_report(
        spec, options.spec, result, driven.paths, driven.crashed, driven.context
    )
    baseline, arms = kind.verdicts(result)
    if result.finished and not evidence.no_valid_runs and not result.cannot_reproduce:
        if found := contention.recheck(options, spec, spec_dir, baseline, arms):
            contention_report.append(found, report, driven.paths.results)
    return StudyResult(
        study=spec.study,
        strategy=kind.name,
        exit_code=int(code),
        conclusion=conclusion,
        baseline=baseline,
        arms=arms,
        report=report,
        results=driven.paths.results,
        store=driven.paths.store,
        logs=driven.paths.logs,
        warnings=warnings,
        no_valid_runs=evidence.no_valid_runs,
        details=result,
    )


def refuse_version_folder(paths: StudyPaths) -> None:
    """A version bisection's folder is no screening's: both write results.json there, so a
    screening of the spec `bisect versions` wrote would overwrite the bisection's answer."""
    if paths.versions.store.exists():
        raise HeisenbisectError(
            f"bisect run: {paths.root} holds a version bisection ({paths.versions.store.name}); "
            "resume it with `bisect versions` (the line atop its spec.yaml), or give a screening "
            "a study of its own (another study name or --out)"
        )


def _warnings(driven: Driven) -> tuple[str, ...]:
    """What follows the verdicts on stderr; with no valid run, only the line that says why."""
    evidence = driven.context.evidence
    if evidence.no_valid_runs:
        return (no_result_line(evidence),)
    load_caution = driven.context.load_caution and plain(driven.context.load_caution)
    return tuple(
        w
        for w in (
            summary(driven.crashed),
            same_ending_line(evidence),
            extra_fields_line(evidence),
            load_caution,
        )
        if w
    )


def rerender(options: Options) -> tuple[Path, int]:
    """Render the screening's report again from its store, running nothing; its path and the
    exit code `screen` gives for the same trials (`bisect report` answers as `bisect run`). A
    contention re-check's own report is rendered again too, so the study's report never links to
    a report that was not written (an interrupted re-check writes none).

    It refuses a store of other factors or another target as `screen` does (the arms would not
    be the stored ones), but not one whose target's files changed: running nothing, it cannot mix
    an edited script's trials with the old ones; it warns and renders what was stored
    (docs/refusals.md)."""
    spec, spec_dir = load_spec(options.spec), Path(options.spec).parent
    paths = StudyPaths.of(spec, options.out, options.spec)
    if not paths.store.exists():
        raise HeisenbisectError(
            f"{paths.store}: no store yet; run `bisect run {options.spec}` first"
        )
    kind = screening_kind(spec)
    report, result, evidence = render_stored(spec, spec_dir, options.spec, paths, kind)
    baseline, arms = kind.verdicts(result)
    if again := contention.stored_recheck(options, spec, arms):
        derived, again_paths = again
        again_report, again_result, _ = render_stored(
            derived, spec_dir, options.spec, again_paths, ONE_AT_A_TIME
        )
        found = contention.paired(spec, derived, baseline, arms, again_result, again_report)
        contention_report.append(found, report, paths.results)
    return report, int(exit_code(result, evidence))


def render_stored(
    spec: Spec, spec_dir: Path, spec_path: str, paths: StudyPaths, kind: ScreeningKind
) -> tuple[Path, Any, Evidence]:
    """Write one study's report from its store alone; the report's path, the replayed result and
    the evidence its exit code rests on."""
    with Store(paths.store) as store:
        identity = spec_identity(spec, spec_dir)
        tolerated = store.bind(identity, "spec", (REPORT_TOLERATES,), REPORT_WAY_OUT, rule=RULE)
        if tolerated:
            print(
                f"warning: {store.mismatch(tolerated, 'target')}; running nothing, the report shows the trials "
                "as they ran",
                file=sys.stderr,
            )
        result = kind.replayed(spec, store).result()
        context, crashed = judge(store, result, target_folder(spec, spec_dir))
    report = kind.write_report(spec, spec_path, result, paths, crashed, context)
    return report, result, context.evidence
