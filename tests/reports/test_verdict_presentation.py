"""One presentation per verdict: every report, plot and terminal line reads it from reports/verdicts.py."""

from __future__ import annotations

from heisenbisect.records import Verdict
from heisenbisect.reports.verdicts import (
    BASELINE_COLOUR,
    MASKING,
    UNTESTABLE,
    VERDICTS,
    key_text,
    presentation,
)


def test_every_verdict_and_untestable_has_a_word_and_a_colour_of_its_own():
    assert set(VERDICTS) == {v.value for v in Verdict} | {UNTESTABLE}
    assert presentation(Verdict.NOT_APPLIED).word == "not_applied" and presentation(UNTESTABLE).word == "untestable"
    assert all(presentation(v).word == v.value for v in Verdict)  # as results.json and the terminal write them
    colours = [p.colour for p in VERDICTS.values()] + [MASKING.colour, BASELINE_COLOUR]
    assert len(set(colours)) == len(colours)


def test_inconclusive_is_blue_and_masking_alone_is_purple():
    """rates.png drew inconclusive purple, search-tree.png blue with purple for masking."""
    assert presentation(Verdict.INCONCLUSIVE).colour == "tab:blue" and MASKING.colour == "tab:purple"
    assert key_text([presentation(Verdict.INCONCLUSIVE), MASKING]) == "blue inconclusive, purple masking"
