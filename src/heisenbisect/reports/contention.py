"""The re-check at another placement (`studies.contention`), as a section of the study's report and
a key of its results.json: each re-checked verdict under both placements, "depends on contention"
where they differ (`decide.contention` says where)."""

from __future__ import annotations

import json
from pathlib import Path

from heisenbisect.decide.contention import Contention, Measured
from heisenbisect.hypotheses.model import Spec
from heisenbisect.reports.text import table
from heisenbisect.user_text import code

HEADING = "## Contention: the decided verdicts at another placement"


def runs_text(measured: Measured) -> str:
    if not measured.runs:
        return "no runs"
    failed = measured.failed_runs or 0
    return f"{failed}/{measured.runs} runs failed ({failed / measured.runs:.1%})"


def measured_text(measured: Measured) -> str:
    return f"{measured.verdict}: {runs_text(measured)}"


def placement(spec: Spec) -> str:
    """The placement a verdict was measured under, in words."""
    e = spec.execution
    trials = f"up to {e.parallel} trial{'s' if e.parallel > 1 else ''} in flight"
    return f"{trials}, at most {e.trials_per_gpu} per GPU" if e.trials_per_gpu else trials


def markdown_lines(contention: Contention) -> list[str]:
    rows = [
        [
            code(c.change),
            measured_text(c.main),
            measured_text(c.again),
            "**depends on contention**"
            if c.depends
            else "holds in both"
            if c.decided_again
            else "not decided at the re-check",
        ]
        for c in contention.changes
    ]
    rows.insert(
        0,
        ["baseline", runs_text(contention.baseline_main), runs_text(contention.baseline_again), ""],
    )
    return [
        HEADING,
        "",
        f"The study's verdicts were measured at {contention.main_placement}; each change it decided `eliminates` or "
        f"`reduces` was screened again, one at a time against a fresh baseline, at {contention.recheck_placement} "
        f"(its report: [{contention.report.parent.name}/{contention.report.name}]"
        f"({Path('..') / contention.report.parent.name / contention.report.name})).",
        "",
        summary_line(contention),
        "",
        *(
            []
            if contention.finished
            else ["(The re-check is not finished: its verdicts are interim.)", ""]
        ),
        table(
            ["change", f"at {contention.main_placement}", f"at {contention.recheck_placement}", ""],
            rows,
        ),
        "",
    ]


def summary_line(contention: Contention) -> str:
    """What the re-check showed so far: a verdict not yet decided at the re-check "holds" nothing."""
    depends = [c for c in contention.changes if c.depends]
    if depends:
        return (
            f"{len(depends)} of {len(contention.changes)} verdicts depend on contention: "
            + ", ".join(
                f"{code(c.change)} is {c.main.verdict} at {contention.main_placement} and {c.again.verdict} at "
                f"{contention.recheck_placement}"
                for c in depends
            )
            + "."
        )
    decided = sum(c.decided_again for c in contention.changes)
    if decided == len(contention.changes):
        return f"Every re-checked verdict holds at both placements ({decided} re-checked)."
    if decided == 0:
        return f"None of the {len(contention.changes)} re-checked verdicts is decided at the re-check yet."
    return (
        f"{decided} of {len(contention.changes)} re-checked verdicts are decided at the re-check, each the same "
        "as in the study; the others are not decided yet."
    )


def record(contention: Contention) -> dict:
    def measured(m) -> dict:
        return {"verdict": m.verdict, "trials": m.runs, "failures": m.failed_runs}

    return {
        "placement": contention.main_placement,
        "recheck_placement": contention.recheck_placement,
        "baseline": {
            "main": measured(contention.baseline_main),
            "recheck": measured(contention.baseline_again),
        },
        "changes": [
            {
                "change": c.change,
                "main": measured(c.main),
                "recheck": measured(c.again),
                "depends_on_contention": c.depends,
            }
            for c in contention.changes
        ],
        "finished": contention.finished,
    }


def append(contention: Contention, report: Path, results: Path) -> None:
    """Add the section at the end of report.md (replacing an earlier one) and the ``contention`` key to results.json."""
    text = report.read_text()
    if HEADING in text:
        text = text[: text.index(HEADING)]
    report.write_text(text.rstrip("\n") + "\n\n" + "\n".join(markdown_lines(contention)))
    data = json.loads(results.read_text())
    data["contention"] = record(contention)
    results.write_text(json.dumps(data, indent=2) + "\n")
