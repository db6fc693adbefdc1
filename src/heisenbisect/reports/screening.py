"""The screening report: report.md, results.json and rates.png, rendered from a result alone."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from heisenbisect import __version__
from heisenbisect.decide.budget import runs_to_claim_zero
from heisenbisect.decide.crashes import CrashedRuns
from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.reach import UNSEEN, UNSEEN_REACH, runs_alone
from heisenbisect.decide.screening import ArmResult, ScreeningResult
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import AMPLIFIED_SUFFIX, StudyPaths
from heisenbisect.records import Config, Verdict
from heisenbisect.reports import accuracy, decided, redacted
from heisenbisect.reports import environment as environment_section
from heisenbisect.reports import paste as paste_parts
from heisenbisect.reports import reference as reference_section
from heisenbisect.reports.context import ReportContext
from heisenbisect.reports.evidence import log_link, no_result_line
from heisenbisect.reports.evidence import markdown_lines as evidence_lines
from heisenbisect.reports.plotting import PLOT_LABEL_CHARS, draw, pyplot
from heisenbisect.reports.reproduce import reproduce_lines, trial_command
from heisenbisect.reports.text import interval, join_words, percent, pvalue, table
from heisenbisect.reports.tracebacks import warning_lines
from heisenbisect.reports.verdicts import BASELINE_COLOUR, presentation
from heisenbisect.user_text import capped, code, fenced

PLOT_NAME = "rates.png"
SCHEMA_VERSION = (
    3  # results.json: 2 added schema_version, evidence, environment, conclusion_markdown;
)
#                     3 the not_applied verdict and each env arm's reach


@dataclass(frozen=True)
class Cost:
    """One arm's mean cost metric and its change against the baseline."""

    metric: str
    value: float
    change: float  # relative to the baseline; positive is better

    def describe(self) -> str:
        return f"{self.metric} {self.value:.4g}, {self.change:+.1%} vs baseline"


def cost_metric(spec: Spec, result: ScreeningResult) -> str | None:
    if spec.statistics.cost_metric:
        return spec.statistics.cost_metric
    names = list(result.baseline.metrics)  # in the order the target reported them
    return names[0] if names else None


def cost_of(
    arm: ArmResult, baseline: ArmResult, metric: str | None, higher_is_better: bool
) -> Cost | None:
    if metric is None or metric not in arm.metrics or not baseline.metrics.get(metric):
        return None
    value, base = arm.metrics[metric], baseline.metrics[metric]
    change = (value - base) / abs(base)
    return Cost(metric, value, change if higher_is_better else -change)


def label(config: Config) -> str:
    return ", ".join(f"{name}={level}" for name, level in config.changes) or "baseline"


def conclusion(spec: Spec, result: ScreeningResult, evidence: Evidence | None = None) -> str:
    """One paragraph a team can paste (markdown): what eliminates, what suppresses, what is a decoy."""
    base = result.baseline
    if evidence is not None and evidence.no_valid_runs:
        return f"No verdict: {no_result_line(evidence)}."
    if base.verdict is Verdict.UNTESTABLE:  # `decide.skips`: its failure may be a skip
        return f"No verdict: {base.note}."
    if result.cannot_reproduce:
        return (
            f"The baseline never failed in {base.runs} runs (its run-failure rate is below "
            f"{percent(base.zero_bound)} at {result.settings.confidence:.0%} confidence): the failure "
            "could not be reproduced, so no factor can be judged."
        )
    by_verdict: dict[Verdict, list[ArmResult]] = {}
    for arm in result.arms:
        by_verdict.setdefault(arm.verdict, []).append(arm)
    sentences = []
    eliminators = by_verdict.get(Verdict.ELIMINATES, [])
    if eliminators:
        names = [code(label(a.config)) for a in eliminators]
        conditions = [
            code(f"{f}={spec.factor(f).baseline_label}")
            for a in eliminators
            for f, _ in a.config.changes
        ]
        if len(eliminators) == 1:
            sentences.append(f"{names[0]} drives the failure to zero.")
        else:
            sentences.append(
                f"{join_words(names)} each drive the failure to zero, so {join_words(conditions)} are "
                "jointly necessary conditions of the failure: removing any one of them fixes it."
            )
        cheapest = cheapest_fix(spec, result)
        if cheapest is not None:
            arm, cost = cheapest
            which = (
                "Its cost"
                if len(eliminators) == 1
                else f"The cheapest fix is {code(label(arm.config))}"
            )
            stress = (
                ", measured under amplify's stress settings: at your usual operating point the cost may differ"
                if spec.study.endswith(AMPLIFIED_SUFFIX)
                else ""
            )
            sentences.append(f"{which}: {cost.describe()}{stress}.")
    else:
        sentences.append("No single factor change drives the failure to zero.")
    for arm in by_verdict.get(Verdict.REDUCES, []):
        sentences.append(
            f"{code(label(arm.config))} only suppresses it (failed runs {percent(base.run_rate)} -> "
            f"{percent(arm.run_rate)})."
        )
    for verdict, plural, singular in (
        (Verdict.INCREASES, "make it worse", "makes it worse"),
        (Verdict.NO_EFFECT, "have no effect (decoys)", "has no effect (a decoy)"),
        (
            Verdict.INCONCLUSIVE,
            "stay undecided within the budget",
            "stays undecided within the budget",
        ),
    ):
        arms = by_verdict.get(verdict, [])
        if arms:
            verb = plural if len(arms) > 1 else singular
            sentences.append(f"{join_words([code(label(a.config)) for a in arms])} {verb}.")
    if unapplied := by_verdict.get(Verdict.NOT_APPLIED, []):
        sentences.append(
            not_applied_sentence(
                [code(label(a.config)) for a in unapplied],
                [a.reach for a in unapplied],
                [runs_alone(a.note) for a in unapplied],
            )
        )
    unseen = [a for a in result.arms if UNSEEN_REACH in a.note and a.reach is not None]
    for arm in unseen:
        assert arm.reach is not None
        sentences.append(
            f"`{label(arm.config)}` is {arm.verdict.value}, but {arm.reach.line()}: the tracker "
            "cannot tell whether the change reached the target."
        )
    for arm in by_verdict.get(Verdict.UNTESTABLE, []):
        sentences.append(f"`{label(arm.config)}` is untestable: {arm.note}.")
    never_failed = [
        a for a in by_verdict.get(Verdict.INCONCLUSIVE, []) if a.runs and not a.failed_runs
    ]
    needed = runs_to_claim_zero(result.settings.zero_rate, result.settings.confidence)
    too_few = [a for a in never_failed if a.runs < needed]
    if too_few:
        runs = join_words([f"{code(label(a.config))} in {a.runs}" for a in too_few])
        sentences.append(
            f"No run failed ({runs}), but that is too few to claim zero: {needed} runs without "
            f"a failure are needed at zero_rate {result.settings.zero_rate:g}."
        )
    if enough := [a for a in never_failed if a.runs >= needed]:
        runs = join_words([f"{code(label(a.config))} in {a.runs}" for a in enough])
        # enough runs for the bound, so what is missing is the comparison with the baseline
        sentences.append(
            f"No run failed ({runs}): enough runs to claim zero, which the arm's next look will check."
            if not result.finished
            else f"No run failed ({runs}), but the arm was not shown significantly below the baseline's rate."
        )
    if not result.finished:
        sentences.append("(The study is not finished: these are interim verdicts.)")
    return " ".join(sentences)


def not_applied_sentence(
    names: list[str], reaches: list, alone: list[str | None] | None = None
) -> str:
    """What the conclusion says of changes that never reached the target, and what to fix.

    ``alone``: each arm's verdict from its runs alone; only when every one was ``no_effect`` is
    a misspelt ``var`` the likely cause. Runs left inconclusive (or showing a hint of an effect)
    may be a reader the tracker cannot see (C code, a shell): the sentence says so instead."""
    verb = "was" if len(names) == 1 else "were"
    why = "; ".join(r.line() for r in reaches if r is not None)
    said = f"{join_words(names)} {verb} not applied ({why}): the runs say nothing about the change."
    if alone is not None and any(a != Verdict.NO_EFFECT.value for a in alone):
        return (
            f"{said} Something the tracker cannot see ({UNSEEN}) may read the variable: check "
            "that it does before renaming it, or run the arm longer."
        )
    return (
        f"{said} Fix the factor's `var` in the spec (or make the target read it) and rerun with "
        "--fresh."
    )


def verdict_cell(verdict: Verdict, reach) -> str:
    """A report row's verdict; a not_applied one names its variable and what it may have meant."""
    if verdict is Verdict.NOT_APPLIED and reach is not None:
        return f"**{presentation(verdict).word}** ({reach.short()})"
    return f"**{presentation(verdict).word}**"


def cheapest_fix(spec: Spec, result: ScreeningResult) -> tuple[ArmResult, Cost] | None:
    metric = cost_metric(spec, result)
    costed = [
        (arm, cost)
        for arm in result.arms
        if arm.verdict is Verdict.ELIMINATES
        and (cost := cost_of(arm, result.baseline, metric, spec.statistics.cost_higher_is_better))
    ]
    return max(costed, key=lambda pair: pair[1].change) if costed else None


def plain(markdown_text: str) -> str:
    """Markdown inline code and emphasis removed: the conclusion as plain text."""
    return re.sub(r"(\*\*|`)", "", markdown_text)


def results_json(spec: Spec, result: ScreeningResult, context: ReportContext | None = None) -> dict:
    metric = cost_metric(spec, result)
    higher = spec.statistics.cost_higher_is_better

    def arm_record(arm: ArmResult) -> dict:
        cost = cost_of(arm, result.baseline, metric, higher)
        return {
            "trials": arm.runs,
            "failures": arm.failed_runs,
            "session_failures": arm.failures,
            "sessions": arm.sessions,
            "run_failure_rate": arm.run_rate,
            "interval": list(arm.run_interval),
            "session_failure_rate": arm.rate,
            "statuses": dict(arm.statuses),
            "metrics": dict(arm.metrics),
            "cost": None
            if cost is None
            else {"metric": cost.metric, "value": cost.value, "change": cost.change},
            "reach": None if arm.reach is None else arm.reach.record(),
        }

    arms = []
    for arm in result.arms:
        ((factor, level),) = arm.config.changes
        arms.append(
            {
                "factor": factor,
                "level": level,
                "verdict": arm.verdict.value,
                "p_value": arm.p_value,
                "decided_at": arm.decided_at,
                "note": arm.note,
            }
            | arm_record(arm)
        )
    cheapest = cheapest_fix(spec, result)
    context = context or ReportContext()
    evidence = context.evidence
    said = conclusion(spec, result, evidence)
    return {
        "schema_version": SCHEMA_VERSION,
        "heisenbisect_version": __version__,
        "study": spec.study,
        "question": question(spec),
        "cannot_reproduce": result.cannot_reproduce,
        "no_valid_runs": evidence.no_valid_runs,
        "baseline": arm_record(result.baseline),
        "arms": arms,
        "jointly_necessary": [
            {"factor": f, "level": spec.factor(f).baseline_label}
            for a in result.arms
            if a.verdict is Verdict.ELIMINATES
            for f, _ in a.config.changes
        ],
        "cheapest_fix": None if cheapest is None else label(cheapest[0].config),
        "conclusion": plain(said),
        "conclusion_markdown": said,
        "finished": result.finished,
        "evidence": {
            "results": evidence.results,
            "without_result": {
                status.value: {"trials": e.count, "first": e.detail, "log": e.log_path}
                for status, e in evidence.without_result.items()
            },
            "same_ending": evidence.same_ending,
        },
        "environment": context.environment,
        "load_caution": None if context.load_caution is None else plain(context.load_caution),
        "launches": None if context.launch_note is None else plain(context.launch_note),
        "settings": {
            "confidence": result.settings.confidence,
            "zero_rate": result.settings.zero_rate,
            "min_reduction": result.settings.min_reduction,
            "max_trials": result.settings.max_trials,
            "looks": list(result.settings.looks),
        },
    }


def question(spec: Spec) -> str:
    return (
        spec.question.strip()
        or f"Which factor changes drive the failure of {code(shlex.join(spec.target.argv) or 'the target')} to zero?"
    )


def markdown(
    spec: Spec,
    spec_path: str,
    result: ScreeningResult,
    plot_name: str | None,
    crashed: list[CrashedRuns],
    paths: StudyPaths | None = None,
    context: ReportContext | None = None,
) -> str:
    context = context or ReportContext()
    s = result.settings
    conf = f"{s.confidence:.0%}"
    lines = [*_head(spec, result, context, plot=True)]
    lines += [context.launch_note, ""] if context.launch_note else []
    if plot_name:
        lines += [f"![failure rates with {conf} intervals]({plot_name})", ""]
    lines += evidence_lines(context.evidence, paths.root if paths else Path.cwd())
    lines += warning_lines(crashed, label)
    lines += [
        "## How to read this",
        "",
        f"Each run (one trial) is one unit of evidence: sessions inside a run share a batch and fail "
        f"together, so they are never pooled across runs. An arm changes one factor from the baseline. "
        f"`eliminates`: significantly below the baseline, no failed run, and the exact one-sided {conf} "
        f"bound on its run-failure rate below {percent(s.zero_rate)}. `reduces`: significantly lower but "
        f"not zero. `no_effect`: shown to keep between {percent(1 - s.min_reduction)} and "
        f"{percent(1 / (1 - s.min_reduction))} of the baseline's rate. `increases`: significantly higher. "
        f"`inconclusive`: budget ({s.max_trials} runs per arm) spent. `not_applied`: no Python process of the "
        f"target read the factor's variable in any of the arm's runs, and the runs showed no difference: the change "
        f"never reached the target (a misspelt name, say), so nothing is claimed about it. Arms are examined at "
        f"{', '.join(map(str, s.looks))} runs with a sequential correction, and Holm's correction across "
        f"arms keeps the chance of any wrong claim below {1 - s.confidence:.0%}.",
        "",
        *environment_section.markdown_lines(context.environment),
        *reproduce_lines(spec, spec_path, paths.root if paths else None),
    ]
    if context.evidence.failing_log or context.evidence.clean_log:
        folder = paths.root if paths else Path.cwd()
        lines += [
            f"Logs: one failing run {log_link(context.evidence.failing_log, folder)}, "
            f"one clean run {log_link(context.evidence.clean_log, folder)}.",
            "",
        ]
    lines += _first_trials(spec, result, context.target_folder)
    return "\n".join(lines)


def baseline_and_arms(spec: Spec, result: ScreeningResult, plot: bool = True) -> list[str]:
    """The baseline's line and the arms' table, each verdict beside the statistic that decided it."""
    base, s = result.baseline, result.settings
    metric = cost_metric(spec, result)
    higher = spec.statistics.cost_higher_is_better
    conf = f"{s.confidence:.0%}"
    answered = accuracy.shown(base.metrics)  # the `answers` check was on: accuracy per arm
    rows = []
    for arm in result.arms:
        ((factor, level),) = arm.config.changes
        cost = cost_of(arm, base, metric, higher)
        rows.append(
            [
                code(factor),
                code(level),
                verdict_cell(arm.verdict, arm.reach),
                str(arm.runs),
                str(arm.failed_runs),
                f"{percent(arm.run_rate)} {interval(arm.run_interval)}",
                *([accuracy.accuracy_cell(arm.metrics)] if answered else []),
                f"{arm.failures}/{arm.sessions}",
                pvalue(arm.p_value),
                decided.cell(arm, base, s),
                cost.describe() if cost else "-",
            ]
        )
    baseline_levels = (
        ", ".join(code(f"{f.name}={f.baseline_label}") for f in spec.factors) or "no factors"
    )
    return [
        "## Baseline",
        "",
        f"{baseline_levels}: {base.failed_runs} of {base.runs} runs failed "
        f"({percent(base.run_rate)}, exact {conf} interval {interval(base.run_interval)}); "
        f"{base.failures} of {base.sessions} sessions failed ({percent(base.rate)} per run on average)"
        + (f"; known-answer accuracy {accuracy.accuracy_cell(base.metrics)}." if answered else "."),
        "",
        "## Arms",
        "",
        table(
            [
                "factor",
                "level",
                "verdict",
                "runs",
                "failed runs",
                f"run-failure rate [{conf} CI]",
                *(["known-answer accuracy"] if answered else []),
                "failed sessions",
                "p (Holm, sequential)",
                "decided by",
                f"cost ({metric or 'no metric'})",
            ],
            rows,
        ),
        "",
        f"`decided by`: the statistic behind each verdict, in the measure that decided it. `eliminates` rests on "
        f"the {decided.RUN_RATE} (its exact zero bound); `reduces`, `increases` and `no_effect` on the "
        f"{decided.FRACTION}, at the look that decided (the first n runs of the arm and of the baseline)."
        + (
            f" {PLOT_NAME} shows both measures and marks the one that decided each verdict."
            if plot
            else ""
        ),
        "",
    ]


def paste(
    spec: Spec, spec_path: str, result: ScreeningResult, paths: StudyPaths, context: ReportContext
) -> str:
    """paste.md: the report for an upstream issue, self-contained (`reports.paste`)."""
    spec_file = Path(spec_path)
    spec_dir = spec_file.parent.resolve()
    scrub = paste_parts.Scrub(spec_dir, paths.root)
    out = paths.root.parent
    default_out = (spec_dir / Path(spec.output).expanduser()).resolve()
    out_args = [] if out == default_out else ["--out", paste_parts.relative(out, spec_dir)]
    folder = (
        paste_parts.relative(context.target_folder, spec_dir) if context.target_folder else None
    )
    lines = [
        *_head(spec, result, context, plot=False),
        *paste_parts.spec_lines(spec_file, scrub),
        *paste_parts.script_lines(
            spec.target.argv, context.target_folder or spec_dir, spec_dir, scrub
        ),
        *paste_parts.environment_lines(context.environment),
        "## Reproduce",
        "",
        "From the spec's folder, with "
        f"`{environment_section.install_line_of(context.environment, __version__)}`:",
        "",
        "```",
        shlex.join(["bisect", "run", spec_file.name, *out_args])
        + "      # the study; resumes from its store",
        "```",
        "",
        *_first_trials(spec, result, Path(folder) if folder else None),
    ]
    lines += paste_parts.failing_run_lines(context.evidence.failing_log, scrub)
    lines += [f"_Written by heisenbisect {__version__} (`bisect report --paste`)._", ""]
    return paste_parts.without_links(scrub("\n".join(lines)))


def _head(spec: Spec, result: ScreeningResult, context: ReportContext, plot: bool) -> list[str]:
    """What report.md and paste.md open with: the question, the conclusion, the rate table and its notes."""
    notes = [f"- {code(label(a.config))}: {a.note}" for a in result.arms if a.note]
    return [
        f"# heisenbisect: {spec.study}",
        "",
        f"**Question.** {question(spec)}",
        "",
        f"**Conclusion.** {conclusion(spec, result, context.evidence)}",
        "",
        *baseline_and_arms(spec, result, plot=plot),
        *notes,
        *([""] if notes else []),
        *([context.load_caution, ""] if context.load_caution else []),
        *reference_section.markdown_lines(
            (label(arm.config), arm) for arm in (result.baseline, *result.arms)
        ),
    ]


def _first_trials(spec: Spec, result: ScreeningResult, folder: Path | None) -> list[str]:
    """Each config's first trial as a command to run by hand, for report.md and paste.md alike."""
    commands = []
    for arm in (result.baseline, *result.arms):
        commands += [f"# {_one_line(label(arm.config))}", trial_command(spec, arm.config, folder)]
    return [
        "The first trial of each config by hand (its seed and the protocol's variables included):",
        "",
        *fenced(commands),
        "",
    ]


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def plot(result: ScreeningResult, path: Path, study: str = "") -> None:
    """Both measures a verdict can rest on, side by side, coloured by verdict: the share of runs
    that failed (exact interval; its zero bound decides `eliminates`) and the difference of the
    mean failure fraction per run from the baseline's (Welch interval, as the table's "decided by":
    it decides `reduces`, `increases`, `no_effect`). A filled marker is the measure that decided the
    arm's verdict, a hollow one the other. (A per-config t interval on the fraction would undercover
    badly when runs rarely fail: benchmarks/results/decided-intervals.md.)"""
    import numpy as np

    plt = pyplot()
    arms = [result.baseline, *result.arms]
    s = result.settings

    def difference(arm: ArmResult) -> tuple[float, float, float]:
        if arm is result.baseline:
            return 0.0, 0.0, 0.0
        look = decided.deciding_look(s, arm.decided_at)
        n = look[0] if look else min(len(arm.fractions), len(result.baseline.fractions))
        if n == 0:
            return float("nan"), float("nan"), float("nan")
        value, low, high = decided.difference_interval(
            np.asarray(arm.fractions[:n]), np.asarray(result.baseline.fractions[:n]), s.confidence
        )
        return (value, value, value) if np.isnan(low) else (value, low, high)

    from matplotlib.lines import Line2D

    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(12, 0.45 * len(arms) + 2.0))
    keys: dict[str, Line2D] = {}  # one legend entry per verdict, filled
    for y, arm in enumerate(reversed(arms)):
        look = presentation(arm.verdict)
        baseline = arm is result.baseline
        color = BASELINE_COLOUR if baseline else look.colour
        if not baseline:
            keys.setdefault(
                look.word,
                Line2D(
                    [],
                    [],
                    marker="o",
                    linestyle="",
                    color=color,
                    label=f"{look.word}: {look.meaning}",
                ),
            )
        measure = None if baseline else decided.measure_of(arm.verdict)
        for ax, (value, low, high), this in (
            (left, (arm.run_rate, *arm.run_interval), decided.RUN_RATE),
            (right, difference(arm), decided.FRACTION),
        ):
            filled = baseline or measure == this
            ax.errorbar(
                value,
                y,
                xerr=[[value - low], [high - value]],
                fmt="o",
                color=color,
                capsize=3,
                markerfacecolor=color if filled else "white",
            )
    left.set_yticks(range(len(arms)))
    left.set_yticklabels(
        [
            f"{capped(label(a.config), PLOT_LABEL_CHARS)} ({presentation(a.verdict).word})"
            if a is not result.baseline
            else "baseline"
            for a in reversed(arms)
        ]
    )
    zero = left.axvline(
        s.zero_rate, color="tab:green", linestyle=":", label=f"zero_rate {percent(s.zero_rate)}"
    )
    left.set_xlabel(f"{decided.RUN_RATE}\n({s.confidence:.0%} exact interval)", fontsize=9)
    left.set_xlim(left=0)
    left.set_title("decides eliminates (its zero bound)", fontsize=9)
    right.axvline(0, color=BASELINE_COLOUR, linewidth=0.8)
    right.set_xlabel(
        f"{decided.FRACTION}: arm - baseline\n(at the deciding look, {s.confidence:.0%} Welch interval)",
        fontsize=9,
    )
    right.set_title("decides reduces, increases, no_effect", fontsize=9)
    left.legend(handles=[*keys.values(), zero], loc="best", fontsize="small")
    fig.suptitle(
        f"{study + ': ' if study else ''}per config; filled marker: the measure that decided its verdict",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(
    spec: Spec,
    spec_path: str,
    result: ScreeningResult,
    paths: StudyPaths,
    crashed: list[CrashedRuns],
    context: ReportContext | None = None,
) -> Path:
    """Write the report, results and plot where ``paths`` says; return the report's path.

    results.json is strict JSON (no NaN or Infinity): a non-finite number is a bug, not data.
    """
    paths.root.mkdir(parents=True, exist_ok=True)
    drawn = draw(lambda: plot(result, paths.plot, spec.study), paths.plot)
    texts = {
        paths.results: json.dumps(results_json(spec, result, context), indent=2, allow_nan=False)
        + "\n",
        paths.report: markdown(
            spec, spec_path, result, paths.plot.name if drawn else None, crashed, paths, context
        ),
        paths.paste: paste(spec, spec_path, result, paths, context or ReportContext()),
    }
    redacted.write_all(texts, redacted.study_redactor(spec), paste=paths.paste)
    return paths.report
