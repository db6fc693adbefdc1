"""Plain progress lines: one per trial, and one per verdict the moment it is decided (issue 38: with
`--plain` no verdict appeared until the report, 185 s into the README's main job)."""

from __future__ import annotations

import io
from collections import Counter

from heisenbisect.progress import PlainProgress
from heisenbisect.records import Outcome, TrialStatus


def outcome(index: int) -> Outcome:
    return Outcome(f"t{index}", "overlap=0", index, TrialStatus.OK, 0, 60)


def test_each_verdict_is_printed_once_when_it_is_decided_and_again_when_it_changes():
    rows = [("baseline", 10, 3, None), ("overlap=0", 10, 0, None)]
    stream = io.StringIO()
    progress = PlainProgress(stream, snapshot=lambda: rows)
    progress.update(Counter(), outcome(0))
    assert "verdict" not in stream.getvalue()
    rows[1] = ("overlap=0", 60, 0, "eliminates")
    progress.update(Counter(), outcome(1))
    progress.update(Counter(), outcome(2))
    assert stream.getvalue().count("verdict so far: overlap=0: eliminates (0 of 60 runs failed)") == 1
    rows[1] = ("overlap=0", 60, 0, None)  # withdrawn: the grown Holm family needs more runs
    progress.update(Counter(), outcome(3))
    assert "overlap=0: reopened" in stream.getvalue()


def test_without_a_snapshot_only_trials_are_printed():
    stream = io.StringIO()
    PlainProgress(stream).update(Counter(), outcome(0))
    assert stream.getvalue().startswith("[1] overlap=0 #0: ok 0/60 failed")
