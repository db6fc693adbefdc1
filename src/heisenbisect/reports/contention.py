"""The re-check at another placement (`studies.contention`), as a section of the study's report and
a key of its results.json: each re-checked verdict under both placements, "depends on contention"
where they differ."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.reports.text import table

HEADING = "## Contention: the decided verdicts at another placement"
UNDECIDED = ("inconclusive", "not_applied")


@dataclass(frozen=True)
class Measured:
    """One verdict and the runs it rests on, under one placement."""

    verdict: str
    runs: int | None
    failed_runs: int | None

    def runs_text(self) -> str:
        if not self.runs:
            return "no runs"
        return f"{self.failed_runs}/{self.runs} runs failed ({self.failed_runs / self.runs:.1%})"

    def text(self) -> str:
        return f"{self.verdict}: {self.runs_text()}"


@dataclass(frozen=True)
class Rechecked:
    change: str  # "graph=0"
    main: Measured
    again: Measured

    @property
    def decided_again(self) -> bool:
        return self.again.verdict not in UNDECIDED

    @property
    def depends(self) -> bool:
        """The verdicts differ, the re-check's decided: an undecided re-check says nothing yet."""
        return self.decided_again and self.main.verdict != self.again.verdict


@dataclass(frozen=True)
class Contention:
    main_placement: str
    recheck_placement: str
    baseline_main: Measured
    baseline_again: Measured
    changes: tuple[Rechecked, ...]
    finished: bool
    report: Path  # the re-check's own report


def placement(spec: Spec) -> str:
    """The placement a verdict was measured under, in words."""
    e = spec.execution
    trials = f"up to {e.parallel} trial{'s' if e.parallel > 1 else ''} in flight"
    return f"{trials}, at most {e.trials_per_gpu} per GPU" if e.trials_per_gpu else trials


def markdown_lines(contention: Contention) -> list[str]:
    rows = [
        [f"`{c.change}`", c.main.text(), c.again.text(),
         "**depends on contention**" if c.depends else "holds in both" if c.decided_again else "not decided at the re-check"]
        for c in contention.changes
    ]
    rows.insert(0, ["baseline", contention.baseline_main.runs_text(), contention.baseline_again.runs_text(), ""])
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
        *([] if contention.finished else ["(The re-check is not finished: its verdicts are interim.)", ""]),
        table(["change", f"at {contention.main_placement}", f"at {contention.recheck_placement}", ""], rows),
        "",
    ]


def summary_line(contention: Contention) -> str:
    """What the re-check showed so far: a verdict not yet decided at the re-check "holds" nothing."""
    depends = [c for c in contention.changes if c.depends]
    if depends:
        return (f"{len(depends)} of {len(contention.changes)} verdicts depend on contention: "
                + ", ".join(f"`{c.change}` is {c.main.verdict} at {contention.main_placement} and {c.again.verdict} at "
                            f"{contention.recheck_placement}" for c in depends) + ".")
    decided = sum(c.decided_again for c in contention.changes)
    if decided == len(contention.changes):
        return f"Every re-checked verdict holds at both placements ({decided} re-checked)."
    if decided == 0:
        return f"None of the {len(contention.changes)} re-checked verdicts is decided at the re-check yet."
    return (f"{decided} of {len(contention.changes)} re-checked verdicts are decided at the re-check, each the same "
            "as in the study; the others are not decided yet.")


def record(contention: Contention) -> dict:
    def measured(m) -> dict:
        return {"verdict": m.verdict, "trials": m.runs, "failures": m.failed_runs}

    return {
        "placement": contention.main_placement,
        "recheck_placement": contention.recheck_placement,
        "baseline": {"main": measured(contention.baseline_main), "recheck": measured(contention.baseline_again)},
        "changes": [
            {"change": c.change, "main": measured(c.main), "recheck": measured(c.again), "depends_on_contention": c.depends}
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
