"""What `bisect watch` writes and prints: the history table (``bisect watch --log``) and a
regression's paste-ready report (``regression-NNNN.md``), rendered from the watch's stored steps
and the bisection's own commits.md; nothing here decides."""

from __future__ import annotations

import re
from pathlib import Path

from heisenbisect.git import CommitInfo

HEADER = "| step | watched | head | against | runs (failed) | rate bounds | result | trials |"


def rate_text(runs: int, failed: int, low: float, high: float) -> tuple[str, str]:
    return f"{runs} ({failed})", f"{low:.3f}-{high:.3f}"


def history_table(steps: list) -> str:
    """Every step, oldest first: what ran, what it measured, what it concluded."""
    lines = [HEADER, "|" + "---|" * 8]
    for s in steps:
        runs, bounds = rate_text(s.runs, s.failed, s.low, s.high)
        against = "-" if s.good is None else s.good[:10]
        if s.good is not None:
            good_runs = s.recorded[0] + s.good_runs
            against += f" ({good_runs} runs, {s.recorded[1] + s.good_failed} failed)"
        result = s.status
        if s.culprit:
            result += f": culprit {s.culprit[:10]}"
        elif s.headline and s.status != "good":
            result += f": {s.headline}"
        trials = f"{s.trials}" + (
            f" + {s.bisection_trials} bisecting" if s.bisection_trials else ""
        )
        lines.append(
            f"| {s.number} | {s.config} | {s.head[:10]} | {against} | {runs} | {bounds} | "
            f"{result} | {trials} |"
        )
    return "\n".join(lines)


def regression_report(
    step,
    good: CommitInfo,
    head: CommitInfo,
    culprit: CommitInfo | None,
    headline: str,
    confidence: float,
    bisection_report: Path | None,
    command: str,
) -> str:
    """A regression, self-contained for an upstream issue: what was watched, the evidence that the
    head got worse, the culprit, and the bisection's own report below."""
    good_runs = step.recorded[0] + step.good_runs
    good_failed = step.recorded[1] + step.good_failed
    title = (
        f"Regression: {culprit.short} {culprit.subject}"
        if culprit
        else f"Regression at {head.short}"
    )
    lines = [
        f"# {title}",
        "",
        f"`bisect watch` (step {step.number}) found that `{command}` fails more often at the head "
        f"`{head.short}` ({head.subject}) than at the last known good `{good.short}` "
        f"({good.subject}).",
        "",
        f"| commit | runs | failed runs | rate bounds (one-sided, each at {confidence:.0%}) |",
        "|---|---|---|---|",
        f"| last known good `{good.short}` | {good_runs} | {good_failed} | - |",
        f"| head `{head.short}` | {step.runs} | {step.failed} | {step.low:.3f}-{step.high:.3f} |",
        "",
        f"Runs interleaved at both commits; one-sided Fisher's exact test spent over looks: "
        f"p = {step.p_value:.2g} (significant below {1 - confidence:.2g}).",
        "",
        f"**{headline}**",
        "",
    ]
    if culprit is not None:
        lines += [
            f"- culprit: `{culprit.sha}` {culprit.subject}",
            f"- author: {culprit.author}, {culprit.date}",
            "",
        ]
    if bisection_report is not None and bisection_report.exists():
        body = bisection_report.read_text()
        body = re.sub(r"^!\[.*\]\(.*\)\s*$", "", body, flags=re.MULTILINE)  # no local images
        body = re.sub(r"^(#+) ", r"#\1 ", body, flags=re.MULTILINE)  # one level down
        lines += [body.strip(), ""]  # its "# Commit bisection", one level down
    return "\n".join(lines) + "\n"
