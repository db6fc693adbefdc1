"""Contention as a condition, not noise: the decided eliminators and reducers screened again at
another placement (``execution.recheck_parallel``), after the study.

A race's rate depends on how many trials share the machine or the GPU: eager decoding removed the
GPU race alone and only reduced it with four trials on one GPU (docs/gpu-race). So a verdict is a
verdict *under a placement*; this re-screens each change the study decided ``eliminates`` or
``reduces``, one at a time against a fresh baseline, at ``recheck_parallel`` trials in flight (per
GPU when ``trials_per_gpu`` is set), in a study folder of its own (``<study>-recheck``, resumable
like any other), and pairs the two verdicts: one that changes "depends on contention".
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from heisenbisect.decide.budget import runs_to_claim_zero
from heisenbisect.decide.contention import Contention, Measured, Rechecked
from heisenbisect.decide.screening import ScreeningResult
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import StudyPaths, output_folder
from heisenbisect.records import Verdict
from heisenbisect.reports import screening as screening_report
from heisenbisect.reports.contention import placement
from heisenbisect.runners.factory import runner_maker
from heisenbisect.studies import one_at_a_time
from heisenbisect.studies.drive import drive
from heisenbisect.studies.options import Options
from heisenbisect.studies.screening_result import ArmVerdict

RECHECKED = (Verdict.ELIMINATES.value, Verdict.REDUCES.value)
SUFFIX = "-recheck"


def recheck_spec(spec: Spec, changes: list[tuple[str, str]]) -> Spec:
    """The spec of the re-check: only the factors of ``changes`` (baseline and the decided levels),
    one at a time, at ``recheck_parallel`` trials in flight (per GPU with ``trials_per_gpu``)."""
    wanted: dict[str, set[str]] = {}
    for name, level in changes:
        wanted.setdefault(name, set()).add(level)
    factors = []
    for factor in spec.factors:
        if factor.name in wanted:
            levels = [
                v
                for v, label in zip(factor.levels, factor.labels)
                if label == factor.baseline_label or label in wanted[factor.name]
            ]
            factors.append(factor.model_copy(update={"levels": levels}))
    n = spec.execution.recheck_parallel
    e = spec.execution
    if e.trials_per_gpu:
        execution = e.model_copy(update={"trials_per_gpu": n, "recheck_parallel": None})
    else:
        execution = e.model_copy(
            update={"parallel": n, "max_in_flight": n, "recheck_parallel": None}
        )
    statistics = spec.statistics.model_copy(
        update={"strategy": "one_at_a_time", "first_look": zero_anchored_first_look(spec)}
    )
    study = (spec.study + SUFFIX)[-100:]
    return spec.model_copy(
        update={
            "study": study,
            "factors": factors,
            "statistics": statistics,
            "execution": execution,
        }
    )


def zero_anchored_first_look(spec: Spec) -> int:
    """The re-check's first look, chosen so that one of its looks (first, 2x, 4x, ...) falls on the
    fewest runs whose zero failures bound the rate below ``zero_rate`` (59 at 0.05 and 95%).

    The re-check runs where trials are slow (one at a time on a GPU) and most of its arms are
    eliminators that can only be decided at such a look: with the spec's looks (10, 20, 40, 80)
    each would wait for 80 runs, a third more than it needs. A rule of the settings alone, never
    of the runs, so the schedule stays fixed before any data.
    """
    s = spec.statistics
    fewest = runs_to_claim_zero(s.zero_rate, s.confidence)
    if fewest <= s.first_look:
        return s.first_look
    first = fewest
    while math.ceil(first / 2) >= s.first_look:
        first = math.ceil(first / 2)
    return first


def wanted_changes(arms: tuple[ArmVerdict, ...]) -> list[tuple[str, str]]:
    """The single changes decided ``eliminates`` or ``reduces``."""
    found = []
    for arm in arms:
        if arm.verdict in RECHECKED and ", " not in arm.change:
            factor, level = arm.change.split("=", 1)
            found.append((factor, level))
    return found


def recheck_of(spec: Spec, arms: tuple[ArmVerdict, ...]) -> Spec | None:
    """The re-check's spec; None when the spec asks for none or the study decided no single change."""
    changes = wanted_changes(arms)
    if not spec.execution.recheck_parallel or not changes:
        return None
    return recheck_spec(spec, changes)


def recheck(
    options: Options, spec: Spec, spec_dir: Path, baseline: ArmVerdict, arms: tuple[ArmVerdict, ...]
) -> Contention | None:
    """Screen the decided eliminators and reducers again at the spec's ``recheck_parallel``; None
    when not asked for or nothing was decided. Interrupted, it raises `StudyInterrupted` as any study."""
    derived = recheck_of(spec, arms)
    if derived is None:
        return None
    again_options = dataclasses.replace(
        options, out=str(output_folder(spec, options.out, options.spec))
    )
    title = f"bisect run {spec.study}: re-check at {placement(derived)}"
    driven = drive(
        again_options,
        derived,
        spec_dir,
        one_at_a_time.replayed_screening,
        one_at_a_time.progress_rows,
        title,
        runner_maker(derived, options.runner, options.address),
    )
    result = driven.strategy.result()
    report = screening_report.write_report(
        derived, options.spec, result, driven.paths, driven.crashed, driven.context
    )
    return paired(spec, derived, baseline, arms, result, report)


def stored_recheck(
    options: Options, spec: Spec, arms: tuple[ArmVerdict, ...]
) -> tuple[Spec, StudyPaths] | None:
    """The re-check's spec and paths when the study asked for one and its store exists."""
    derived = recheck_of(spec, arms)
    if derived is None:
        return None
    paths = StudyPaths.of(derived, output_folder(spec, options.out, options.spec), options.spec)
    return (derived, paths) if paths.store.exists() else None


def paired(
    spec: Spec,
    derived: Spec,
    baseline: ArmVerdict,
    arms: tuple[ArmVerdict, ...],
    result: ScreeningResult,
    report: Path,
) -> Contention:
    """Each re-checked change's verdict at both placements."""
    by_change = {screening_report.label(a.config): a for a in result.arms}
    rows = []
    for arm in arms:
        if arm.change in by_change:
            again = by_change[arm.change]
            rows.append(
                Rechecked(
                    arm.change,
                    Measured(arm.verdict, arm.runs, arm.failed_runs),
                    Measured(again.verdict.value, again.runs, again.failed_runs),
                )
            )
    base = result.baseline
    return Contention(
        main_placement=placement(spec),
        recheck_placement=placement(derived),
        baseline_main=Measured("baseline", baseline.runs, baseline.failed_runs),
        baseline_again=Measured("baseline", base.runs, base.failed_runs),
        changes=tuple(rows),
        finished=result.finished,
        report=report,
    )
