"""How every report, plot and terminal line shows a verdict: its word, its colour, what it means.

One table, so that a verdict reads and looks the same in report.md, rates.png, search-tree.png
and the commits posterior plot. Colours come from matplotlib's default "Tableau 10" palette,
one hue per entry and no hue shared, so no two outcomes can be confused on one plot:

- better in green (eliminates) and olive, a duller green (reduces); worse in red (increases);
  nothing in gray (no_effect);
- undecided in blue (inconclusive), the colour the search tree always gave arms still open
  (rates.png used purple for it, which the tree used for masking: the two plots disagreed);
- the target broke in orange (untestable), a warning apart from red, which is about the failure
  rate; the change never arrived in brown (not_applied); the baseline never failed in pink
  (cannot_reproduce, which only ever stands alone);
- purple is left to the search tree's masking groups, and black to the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

from heisenbisect.decide.group.strategy import (
    UNTESTABLE,
)  # a change (or a commit) none of whose runs ended cleanly
from heisenbisect.records import Verdict


@dataclass(frozen=True)
class Presentation:
    word: str  # as report rows, results.json and the terminal write it
    colour: str  # a matplotlib colour
    meaning: str  # what a reader should take from it, in a few words


VERDICTS: dict[str, Presentation] = {
    Verdict.ELIMINATES.value: Presentation(
        "eliminates", "tab:green", "the change drives the failure to zero"
    ),
    Verdict.REDUCES.value: Presentation(
        "reduces", "tab:olive", "the change makes it rarer, not zero"
    ),
    Verdict.NO_EFFECT.value: Presentation(
        "no_effect", "tab:gray", "the change leaves the failure as it is"
    ),
    Verdict.INCREASES.value: Presentation("increases", "tab:red", "the change makes it worse"),
    Verdict.INCONCLUSIVE.value: Presentation(
        "inconclusive", "tab:blue", "undecided within the budget"
    ),
    Verdict.CANNOT_REPRODUCE.value: Presentation(
        "cannot_reproduce", "tab:pink", "the baseline never failed"
    ),
    Verdict.NOT_APPLIED.value: Presentation(
        "not_applied", "tab:brown", "the change never reached the target"
    ),
    UNTESTABLE: Presentation(
        "untestable",
        "tab:orange",
        "its runs did not end cleanly, or its skips may hide the failure",
    ),
}
MASKING = Presentation(
    "masking", "tab:purple", "a group stopped the failure while none of its halves did"
)
BASELINE_COLOUR = "black"


def presentation(verdict: Verdict | str) -> Presentation:
    """The presentation of a `Verdict` or of its value (``"untestable"`` too)."""
    return VERDICTS[verdict.value if isinstance(verdict, Verdict) else verdict]


def key_text(entries: list[Presentation]) -> str:
    """``green eliminates, gray no_effect``: a plot's colour key, in words."""
    return ", ".join(f"{e.colour.removeprefix('tab:')} {e.word}" for e in entries)
