"""The group-screening report: report.md (claims, then the search), results.json, the splitting tree PNG."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from heisenbisect.decide.crashes import CrashedRuns
from heisenbisect.decide.group.records import GroupResult, SearchArm
from heisenbisect.decide.reach import runs_alone
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import StudyPaths
from heisenbisect.records import Verdict
from heisenbisect.reports import decided, paste, redacted, search_tree
from heisenbisect.reports import environment as environment_section
from heisenbisect.reports import evidence as evidence_section
from heisenbisect.reports.contention import placement
from heisenbisect.reports.context import ReportContext
from heisenbisect.reports.plotting import draw
from heisenbisect.reports.reproduce import reproduce_lines, trial_command
from heisenbisect.reports.screening import not_applied_sentence, question
from heisenbisect.reports.text import interval, join_words, percent, pvalue, table
from heisenbisect.reports.tracebacks import warning_lines
from heisenbisect.reports.verdicts import UNTESTABLE, presentation
from heisenbisect.user_text import code, fenced

NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}


def change_text(change: tuple[str, str]) -> str:
    return code(f"{change[0]}={change[1]}")


def arm_name(arm: SearchArm) -> str:
    if len(arm.changes) == 1:
        return change_text(arm.changes[0])
    return f"G{arm.id} ({len(arm.changes)} changes)"


def conclusion(spec: Spec, result: GroupResult) -> str:
    base = result.baseline
    if result.cannot_reproduce:
        return (
            f"The baseline never failed in {base.runs} runs: the failure could not be reproduced, so no "
            "change can be judged."
        )
    held = result.held_by_skips()
    by: dict[str, list] = {}
    for verdict in result.changes:
        if verdict not in held:
            by.setdefault(verdict.verdict, []).append(verdict)
    sentences = []
    eliminators = by.get(Verdict.ELIMINATES.value, [])
    if eliminators:
        names = [change_text(v.change) for v in eliminators]
        if len(names) == 1:
            sentences.append(f"{names[0]} drives the failure to zero.")
        else:
            conditions = [
                code(f"{v.change[0]}={spec.factor(v.change[0]).baseline_label}")
                for v in eliminators
            ]
            sentences.append(
                f"{join_words(names)} each drive the failure to zero, so {join_words(conditions)} are jointly "
                "necessary conditions of the failure: removing any one of them fixes it."
            )
    else:
        sentences.append("No single change drives the failure to zero.")
    for combo in result.combinations:
        if combo.verdict is not Verdict.ELIMINATES:
            continue
        verdicts_alone = [v for _, v in combo.members]
        combined = join_words([change_text(c) for c in combo.changes])
        if Verdict.ELIMINATES.value not in verdicts_alone:
            count = NUMBER_WORDS.get(len(combo.changes), str(len(combo.changes)))
            neither = "neither alone does" if len(combo.changes) == 2 else "none alone does"
            sentences.append(
                f"{combined} together eliminate the failure; {neither}: {count} independent causes."
            )
        else:
            sentences.append(f"{combined} together eliminate the failure.")
    reducers = by.get(Verdict.REDUCES.value, [])
    if reducers:
        verb = "suppresses" if len(reducers) == 1 else "suppress"
        sentences.append(f"{join_words([change_text(v.change) for v in reducers])} only {verb} it.")
    for key, plural, singular in (
        (Verdict.INCREASES.value, "changes make it worse", "change makes it worse"),
        (
            UNTESTABLE,
            "changes break the target (untestable)",
            "change breaks the target (untestable)",
        ),
        (
            Verdict.INCONCLUSIVE.value,
            "changes stay undecided within the budget",
            "change stays undecided within the budget",
        ),
    ):
        if by.get(key):
            subject = singular if len(by[key]) == 1 else plural
            sentences.append(
                f"{len(by[key])} {subject}: {join_words([change_text(v.change) for v in by[key][:8]])}"
                + (" and more." if len(by[key]) > 8 else ".")
            )
    if held:
        shown = join_words([change_text(v.change) for v in held[:8]])
        sentences.append(
            f"{shown} {'is' if len(held) == 1 else 'are'} untestable: skipped runs may hide the "
            f"failure there ({'its note says' if len(held) == 1 else 'their notes say'} why)."
        )
    if unapplied := by.get(Verdict.NOT_APPLIED.value, []):
        sentences.append(
            not_applied_sentence(
                [change_text(v.change) for v in unapplied[:8]],
                [v.reach for v in unapplied[:8]],
                [runs_alone(v.note) for v in unapplied[:8]],
            )
            + (f" ({len(unapplied) - 8} more in the report.)" if len(unapplied) > 8 else "")
        )
    cleared = by.get(Verdict.NO_EFFECT.value, [])
    if cleared:
        via = sum(v.via_group for v in cleared)
        subject = "change has" if len(cleared) == 1 else "changes have"
        sentences.append(f"{len(cleared)} {subject} no effect ({via} of them cleared by a group).")
    if any(a.masking for a in result.arms):
        sentences.append(
            "Some group stopped the failure while none of its halves did: changes mask each "
            "other there (see the search)."
        )
    if not result.finished:
        sentences.append("(The study is not finished: these are interim verdicts.)")
    return " ".join(sentences)


def cost_lines(result: GroupResult) -> list[str]:
    """Where the trials went, by part of the search (`TrialCost`), for the report."""
    cost = result.cost
    if cost is None:
        return []
    parts = (
        ("the baseline", cost.baseline),
        ("the search groups", cost.search),
        ("the clearing groups", cost.clearing),
        ("the changes' own arms", cost.own_arms),
        ("the reductions (probes and combinations)", cost.reductions),
    )
    return [
        "**Cost by part.** "
        + "; ".join(f"{name}: {n}" for name, n in parts)
        + f" (together {cost.total}).",
        "",
    ]


def results_json(spec: Spec, result: GroupResult) -> dict:
    def record(arm: SearchArm) -> dict:
        r = arm.result
        return {
            "id": arm.id,
            "parent": arm.parent,
            "role": arm.role,
            "changes": [{"factor": f, "level": v} for f, v in arm.changes],
            "verdict": r.verdict.value,
            "decision": arm.decision,
            "trials": r.runs,
            "failures": r.failed_runs,
            "run_failure_rate": r.run_rate,
            "interval": list(r.run_interval),
            "p_value": r.p_value,
            "equivalence_p": arm.equivalence_p,
            "masking": arm.masking,
            "statuses": dict(r.statuses),
            "note": r.note,
        }

    arms = {a.id: a for a in result.arms}
    base = result.baseline

    def accounting(change: tuple[str, str]) -> dict:
        own, group = result.trials_of(change)
        return {"own_trials": own, "group_trials": group}

    return {
        "study": spec.study,
        "question": question(spec),
        "strategy": "group",
        "baseline": {
            "trials": base.runs,
            "failures": base.failed_runs,
            "run_failure_rate": base.run_rate,
            "interval": list(base.run_interval),
            "verdict": base.verdict.value,
        },
        "arms": [
            {
                "factor": v.change[0],
                "level": v.change[1],
                "verdict": v.verdict,
                "arm": v.arm,
                "via_group": v.via_group,
                "note": v.note,
                "reach": None if v.reach is None else v.reach.record(),
            }
            | (
                {"trials": arms[v.arm].result.runs, "failures": arms[v.arm].result.failed_runs}
                if v.arm is not None
                else {}
            )
            | accounting(v.change)
            for v in result.changes
        ],
        "groups": [record(a) for a in result.arms],
        "untestable": [
            {
                "factor": b.change[0],
                "level": b.change[1],
                "arm": b.arm,
                "attempts": b.attempts,
                "statuses": dict(b.statuses),
                "log": b.log_path,
                "detail": b.detail,
            }
            for b in result.untestable
        ],
        "combinations": [
            {
                "changes": [{"factor": f, "level": v} for f, v in c.changes],
                "arm": c.arm,
                "verdict": c.verdict.value,
                "origin": c.origin,
                "members": [
                    {"factor": f, "level": v, "alone": alone} for (f, v), alone in c.members
                ],
            }
            for c in result.combinations
        ],
        "hypotheses_in_holm_family": result.family,
        "trials_total": result.trials_total,
        "trials_by_part": None if result.cost is None else dataclasses.asdict(result.cost),
        "conclusion": conclusion(spec, result),
        "finished": result.finished,
    }


def markdown(
    spec: Spec,
    spec_path: str,
    result: GroupResult,
    crashed: list[CrashedRuns],
    context: ReportContext,
    folder: Path,
) -> str:
    s = result.settings.screening
    conf = f"{s.confidence:.0%}"
    base = result.baseline
    arms = {a.id: a for a in result.arms}
    unapplied = [v for v in result.changes if v.verdict == Verdict.NOT_APPLIED.value]
    pending = [v for v in result.changes if v.via_group and v.arm is not None and arms[v.arm].open]
    claims = [
        v
        for v in result.changes
        if v not in unapplied
        and v not in pending
        and (v.verdict != Verdict.NO_EFFECT.value or not v.via_group)
    ]
    rows = []
    for v in claims:
        arm = arms.get(v.arm) if v.arm is not None else None
        r = arm.result if arm else None
        rows.append(
            [
                change_text(v.change),
                f"**{presentation(v.verdict).word}**",
                str(r.runs) if r else "-",
                str(r.failed_runs) if r else "-",
                f"{percent(r.run_rate)} {interval(r.run_interval)}" if r else "-",
                pvalue(r.p_value) if r else "-",
                decided.group_cell(r, base, s) if r else "-",
                v.note or "-",
            ]
        )
    cleared = [v for v in result.changes if v.verdict == Verdict.NO_EFFECT.value and v.via_group]
    by_group: dict[int, list] = {}
    for v in cleared:
        if v.arm is not None:  # cleared via a group: it names the group
            by_group.setdefault(v.arm, []).append(v)
    lines = [
        f"# heisenbisect: {spec.study}",
        "",
        f"**Question.** {question(spec)}",
        "",
        f"**Conclusion.** {conclusion(spec, result)}",
        "",
        "## Baseline",
        "",
        f"{base.failed_runs} of {base.runs} runs failed ({percent(base.run_rate)}, exact {conf} interval "
        f"{interval(base.run_interval)}). Every verdict here was measured at {placement(spec)}: a race's rate "
        "depends on how many trials share the machine (`execution.recheck_parallel` re-checks them at another).",
        "",
        f"## Changes decided by their own arm ({len(claims)} of {len(result.changes)})",
        "",
        table(
            [
                "change",
                "verdict",
                "runs",
                "failed runs",
                f"run-failure rate [{conf} CI]",
                "p (Holm, sequential)",
                "decided by",
                "note",
            ],
            rows,
        ),
        "",
        *([context.load_caution, ""] if context.load_caution else []),
        *([context.launch_note, ""] if context.launch_note else []),
        f"**Trials.** {result.trials_total} in all, each counted once (the baseline's {base.runs} runs included); "
        "a change's own runs and the runs of the groups it was in are apart in results.json (`own_trials`, "
        "`group_trials`).",
        "",
        *cost_lines(result),
    ]
    if pending:
        by_open: dict[int, list] = {}
        for v in pending:
            if v.arm is not None:  # a change in a clearing group names its group
                by_open.setdefault(v.arm, []).append(v)
        lines += [f"## In a clearing group, not yet decided ({len(pending)})", ""]
        for group_id, members in sorted(by_open.items()):
            r = arms[group_id].result
            lines.append(
                f"- G{group_id} ({r.failed_runs}/{r.runs} runs failed so far): "
                + ", ".join(change_text(v.change) for v in members)
            )
        lines.append("")
    if unapplied:
        lines += [
            f"## Changes never applied ({len(unapplied)})",
            "",
            "No Python process of the target read the variable in any run with the change applied, and its runs "
            "showed no difference: the change never reached the target, and nothing is claimed about it.",
            "",
        ]
        lines += [f"- {change_text(v.change)}: {v.note}" for v in unapplied]
        lines.append("")
    lines += [
        f"## Changes cleared by a group ({len(cleared)})",
        "",
    ]
    for group_id, members in sorted(by_group.items()):
        r = arms[group_id].result
        lines.append(
            f"- cleared by group G{group_id} (no_effect in group; {r.failed_runs}/{r.runs} runs failed, equivalence "
            f"p (Holm) {pvalue(arms[group_id].equivalence_p or 1.0)}): "
            + ", ".join(change_text(v.change) for v in members)
        )
    lines.append("")
    if result.combinations:
        lines += ["## Combinations", ""]
        for c in result.combinations:
            r = arms[c.arm].result
            alone = ", ".join(f"{change_text(ch)} alone {v}" for ch, v in c.members)
            lines.append(
                f"- {' + '.join(change_text(ch) for ch in c.changes)}: **{c.verdict.value}** ({r.failed_runs}/{r.runs} "
                f"runs failed, p (Holm) {pvalue(r.p_value)}); {alone}. Found from: {c.origin}."
            )
        lines.append("")
    if result.untestable:
        lines += ["## Untestable changes", ""]
        for b in result.untestable:
            statuses = ", ".join(f"{n} {k}" for k, n in b.statuses.items())
            lines.append(
                f"- {change_text(b.change)}: {statuses} in {b.attempts} trials "
                f"({b.detail or 'no detail'}); log: `{b.log_path}`"
            )
        lines.append("")
    search_rows = [
        [
            f"G{a.id}",
            f"G{a.parent}" if a.parent is not None else "-",
            a.role,
            str(len(a.changes)),
            ", ".join(f"{f}={v}" for f, v in a.changes[:3])
            + (", ..." if len(a.changes) > 3 else ""),
            str(a.result.runs),
            str(a.result.failed_runs),
            a.decision,
        ]
        for a in result.arms
    ]
    lines += [
        "## The search",
        "",
        f"{len(result.changes)} candidate changes in groups of up to "
        f"{max((len(a.changes) for a in result.arms), default=0)}; "
        f"{len(result.arms)} arms; {result.family} hypotheses in the Holm family.",
        "",
        f"![the splitting tree]({StudyPaths(folder).search_tree.name})",
        "",
        table(
            ["arm", "parent", "role", "changes", "members", "runs", "failed runs", "decision"],
            search_rows,
        ),
        "",
    ]
    lines += warning_lines(crashed, lambda config: config.key)
    lines += evidence_section.markdown_lines(context.evidence, folder)
    lines += environment_section.markdown_lines(context.environment)
    lines += [
        "## How to read this",
        "",
        "Groups are for search: a group arm sets all its changes at once; a sequential test between a rate of "
        f"{percent(s.zero_rate)} (zero_rate) and a higher one closes a search group whose rate is shown above "
        "zero_rate (it holds no eliminator) and splits one shown below; a single change far below the baseline "
        "gets an arm of its own. The changes the search leaves go "
        "into a clearing group (role `clear`), tested against the baseline: kept rate clears them, a "
        "difference splits it, a stop is reduced to a smallest stopping combination. Every verdict in the first "
        "table is decided by the change's own sequential arm against the baseline runs interleaved with it, as "
        f"one-at-a-time screening decides (looks at {', '.join(map(str, s.looks))} runs, exact {conf} bound for a "
        f"zero below {percent(s.zero_rate)}), with Holm over all {result.family} hypotheses of the study. "
        "`cleared by group` is a claim about the group: its rate was shown to stay between "
        f"{percent(1 - s.min_reduction)} and {percent(1 / (1 - s.min_reduction))} of the baseline's (an equivalence "
        "test in the same Holm family); it clears each member under the assumption that no change's effect is "
        "masked by another change in the same group. docs/group-screening.md has the details.",
        "",
        *reproduce_lines(spec, spec_path, folder),
        *fenced([f"{trial_command(spec, base.config)}   # baseline"]),
        "",
    ]
    return "\n".join(lines)


def write_report(
    spec: Spec,
    spec_path: str,
    result: GroupResult,
    paths: StudyPaths,
    crashed: list[CrashedRuns],
    context: ReportContext | None = None,
) -> Path:
    paths.root.mkdir(parents=True, exist_ok=True)
    draw(lambda: search_tree.plot_tree(result, paths.search_tree), paths.search_tree)
    context = context or ReportContext()
    text = markdown(spec, spec_path, result, crashed, context, paths.root)
    texts = {
        paths.results: json.dumps(results_json(spec, result), indent=2) + "\n",
        paths.report: text,
        paths.paste: paste.from_report(
            text,
            Path(spec_path),
            paths.root,
            context.environment,
            context.evidence.failing_log,
            (spec.target.argv, context.target_folder or Path(spec_path).parent),
        ),
    }
    redacted.write_all(texts, redacted.study_redactor(spec), paste=paths.paste)
    return paths.report
