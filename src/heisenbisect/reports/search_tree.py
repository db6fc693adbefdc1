"""search-tree.png: group screening's splitting tree laid out as a tree, probes included.

Each arm sits one row below its parent and inside its parent's span; the leaves take one column
each, in the order the search made them, and a parent is centred over its children. Siblings
keep the order of their parents, so no two edges cross, however many flags (a 64-flag study drew
children under other branches and edges across the whole picture). The arms the combination
search (ddmin) probed have no parent: they stand as trees of their own after the search's, drawn
with dashed boxes. The figure widens with the leaves (upright leaf labels keep 256 flags readable).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.decide.group.records import GroupResult, SearchArm
from heisenbisect.reports.plotting import pyplot
from heisenbisect.reports.verdicts import MASKING, UNTESTABLE, Presentation, key_text, presentation

UPRIGHT_FROM = 24  # leaves: from this many on, leaf labels stand upright, a narrow column each
INCH_PER_LEAF = {False: 0.55, True: 0.22}  # by upright
INCH_PER_ROW = 1.0


@dataclass(frozen=True)
class Place:
    x: float  # column: leaves at 0, 1, 2, ...; a parent at its children's centre
    depth: int  # row: roots at 0
    low: float  # the span of the arm's subtree: its first and last leaf's columns
    high: float


def layout(arms: Iterable[tuple[int, int | None]]) -> dict[int, Place]:
    """Place each ``(arm id, parent id)``; an arm whose parent is not among them is a root.
    Children and roots keep the order given."""
    pairs = list(arms)
    ids = {arm for arm, _ in pairs}
    children: dict[int | None, list[int]] = {}
    for arm, parent in pairs:
        children.setdefault(parent if parent in ids else None, []).append(arm)
    places: dict[int, Place] = {}
    next_leaf = 0.0

    def place(arm: int, depth: int) -> Place:
        nonlocal next_leaf
        below = [place(child, depth + 1) for child in children.get(arm, [])]
        if below:
            spot = Place((below[0].x + below[-1].x) / 2, depth, below[0].low, below[-1].high)
        else:
            spot = Place(next_leaf, depth, next_leaf, next_leaf)
            next_leaf += 1
        places[arm] = spot
        return spot

    for root in children.get(
        None, []
    ):  # recursion depth is the tree's: log2(flags) for a halving search
        place(root, 0)
    return places


def _look(arm: SearchArm) -> Presentation:
    if arm.masking:
        return MASKING
    return (
        presentation(UNTESTABLE) if UNTESTABLE in arm.decision else presentation(arm.result.verdict)
    )


def _label(arm: SearchArm) -> str:
    if len(arm.changes) == 1:
        return arm.changes[0][0]
    return f"{'P' if arm.role == 'probe' else 'G'}{arm.id}:{len(arm.changes)}"


def plot_tree(result: GroupResult, path: Path) -> None:
    """One box per arm (failed/runs, coloured by its decision), edges from parent to child."""
    plt = pyplot()

    probes = [a for a in result.arms if a.role == "probe"]
    ordered = [a for a in result.arms if a.role != "probe"] + probes  # the search's trees first
    places = layout((a.id, a.parent) for a in ordered)
    arms = {a.id: a for a in ordered}
    leaves = max((p.high for p in places.values()), default=0) + 1
    rows = max((p.depth for p in places.values()), default=0) + 1
    upright = leaves > UPRIGHT_FROM
    fig, ax = plt.subplots(
        figsize=(
            min(150.0, max(6.0, 1.5 + INCH_PER_LEAF[upright] * leaves)),
            1.4 + INCH_PER_ROW * rows,
        )
    )
    for arm in ordered:
        if arm.parent in places and arm.id in places:
            parent, child = places[arm.parent], places[arm.id]
            ax.plot(
                [parent.x, child.x],
                [-parent.depth, -child.depth],
                color="lightgray",
                zorder=1,
                linewidth=0.8,
            )
    drawn: dict[str, Presentation] = {}
    for arm_id, spot in places.items():
        arm = arms[arm_id]
        look = _look(arm)
        drawn[look.word] = look
        leaf = spot.low == spot.high
        ax.text(
            spot.x,
            -spot.depth,
            f"{_label(arm)}\n{arm.result.failed_runs}/{arm.result.runs}",
            ha="center",
            va="center",
            fontsize=6,
            rotation=90 if leaf and upright else 0,
            zorder=2,
            bbox={
                "boxstyle": "round",
                "facecolor": look.colour,
                "alpha": 0.35,
                "linestyle": "--" if arm.role == "probe" else "-",
            },
        )
    ax.set_xlim(-0.8, leaves - 0.2)
    ax.set_ylim(-rows + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(
        f"search tree: failed/runs per arm\n{key_text(list(drawn.values()))}\ninconclusive: split or still "
        "open; dashed: probes of the combination search (ddmin)",
        fontsize=8,
        loc="left",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
