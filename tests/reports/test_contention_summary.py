"""The re-check's summary says only what the re-check decided: an interim re-check whose arms are
all undecided must not read "every verdict holds" (the H200 study's interim report did)."""

from __future__ import annotations

from pathlib import Path

from heisenbisect.decide.contention import Contention, Measured, Rechecked
from heisenbisect.reports.contention import summary_line


def contention(*again: str) -> Contention:
    changes = tuple(
        Rechecked(f"x{i}=1", Measured("eliminates", 80, 0), Measured(verdict, 13, 0)) for i, verdict in enumerate(again)
    )
    return Contention(
        main_placement="8 per GPU", recheck_placement="1 per GPU",
        baseline_main=Measured("baseline", 493, 131), baseline_again=Measured("baseline", 14, 4),
        changes=changes, finished=False, report=Path("x-recheck/report.md"),
    )


def test_nothing_decided_yet_is_said_so():
    assert summary_line(contention("inconclusive", "inconclusive")) == (
        "None of the 2 re-checked verdicts is decided at the re-check yet.")


def test_some_decided_the_same_says_how_many():
    assert summary_line(contention("eliminates", "inconclusive")).startswith("1 of 2 re-checked verdicts are decided")


def test_all_decided_the_same_hold_at_both_placements():
    assert summary_line(contention("eliminates", "eliminates")) == (
        "Every re-checked verdict holds at both placements (2 re-checked).")


def test_a_changed_verdict_depends_on_contention_even_while_others_are_open():
    line = summary_line(contention("reduces", "inconclusive"))
    assert line.startswith("1 of 2 verdicts depend on contention: `x0=1` is eliminates at 8 per GPU and reduces")
