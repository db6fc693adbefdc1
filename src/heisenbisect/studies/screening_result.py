"""What a screening (``bisect run``, one at a time or in groups) answers, as values, with the
exit code that says it to scripts: 0 every arm decided, 1 some arm inconclusive,
not_applied or untestable (or the study unfinished, or the baseline's runs skipped where it
might have failed), 3 the baseline never failed (cannot_reproduce), 4 no
trial produced a result, or the baseline failed only by crashing (README, exit codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.group.strategy import GroupResult
from heisenbisect.decide.screening import ArmResult, ScreeningResult
from heisenbisect.reports.screening import label

# not decided: a not_applied arm's question was never put to the target


@dataclass(frozen=True)
class ArmVerdict:
    """One change against the baseline (or the baseline itself) and what the study says about it."""

    change: str  # "overlap=0", "a=1, b=0"; "baseline" for the baseline
    verdict: str  # eliminates, reduces, no_effect, increases, inconclusive, not_applied, cannot_reproduce, untestable
    runs: int | None  # runs of the arm that decided it; None for a change cleared by a group
    failed_runs: int | None
    p_value: float | None
    note: str = (
        ""  # not_applied: names the variable never read, and "did you mean" a close name that was
    )
    decided_by_group: bool = False  # group screening: cleared with its group, no arm of its own


@dataclass(frozen=True)
class StudyResult:
    """What ``bisect run`` prints and writes, as values; the files are in ``report.parent``."""

    study: str
    strategy: str  # "one_at_a_time" or "group"
    exit_code: (
        int  # the CLI's: 0 decided, 1 undecided, 3 cannot reproduce, 4 no valid runs (README)
    )
    conclusion: str  # plain text; the markdown one is in results.json
    baseline: ArmVerdict
    arms: tuple[ArmVerdict, ...]
    report: Path
    results: Path
    store: Path
    logs: Path
    warnings: tuple[str, ...]  # what the CLI prints on stderr after the verdicts
    no_valid_runs: bool
    details: ScreeningResult | GroupResult = field(
        repr=False
    )  # the full result the report is made of

    @property
    def decided(self) -> bool:
        return self.exit_code == 0

    def verdict(self, change: str) -> str:
        """The verdict on ``change`` (``"overlap=0"``); KeyError naming the changes there are."""
        for arm in self.arms:
            if arm.change == change:
                return arm.verdict
        raise KeyError(f"no arm {change!r}; arms: {', '.join(a.change for a in self.arms)}")


def screening_verdicts(result: ScreeningResult) -> tuple[ArmVerdict, tuple[ArmVerdict, ...]]:
    """The baseline's and each arm's verdict of a one-at-a-time screening."""

    def verdict_of(arm: ArmResult) -> ArmVerdict:
        return ArmVerdict(
            label(arm.config), arm.verdict.value, arm.runs, arm.failed_runs, arm.p_value, arm.note
        )

    return verdict_of(result.baseline), tuple(verdict_of(a) for a in result.arms)


def group_verdicts(result: GroupResult) -> tuple[ArmVerdict, tuple[ArmVerdict, ...]]:
    """The baseline's and each change's verdict of a group screening; a change cleared with its
    group has no runs of its own."""
    by_id = {arm.id: arm.result for arm in result.arms}
    base = result.baseline
    baseline = ArmVerdict(
        "baseline", base.verdict.value, base.runs, base.failed_runs, None, base.note
    )
    arms = []
    for v in result.changes:
        decided_by = None if v.via_group or v.arm is None else by_id.get(v.arm)
        arms.append(
            ArmVerdict(
                f"{v.change[0]}={v.change[1]}",
                v.verdict,
                decided_by.runs if decided_by else None,
                decided_by.failed_runs if decided_by else None,
                decided_by.p_value if decided_by else None,
                v.note,
                v.via_group,
            )
        )
    return baseline, tuple(arms)
