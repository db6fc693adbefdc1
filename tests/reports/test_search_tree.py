"""The search tree's layout: every arm one row below its parent and inside its parent's span, no
two edges crossing, arms of one row apart; at 256 flags as at 8 (a 64-flag study once hung
overlap's leaf under another branch, with edges across the whole picture)."""

from __future__ import annotations

import random

import pytest

from heisenbisect.reports.search_tree import Place, layout


def halving(flags: int) -> list[tuple[int, int | None]]:
    """The search's tree: a group of every flag, split in halves down to single flags."""
    arms: list[tuple[int, int | None]] = []

    def split(size: int, parent: int | None) -> None:
        arms.append((len(arms), parent))
        me = len(arms) - 1
        if size > 1:
            split(size // 2, me)
            split(size - size // 2, me)

    split(flags, None)
    return arms


def random_forest(seed: int, arms: int = 120) -> list[tuple[int, int | None]]:
    """Arms in creation order, each a child of an earlier arm or a root (probes have no parent);
    ids shuffled, so that the order given, not the ids, is what the layout follows."""
    rng = random.Random(seed)
    ids = list(range(1000, 1000 + arms))
    rng.shuffle(ids)
    pairs = []
    for i, arm in enumerate(ids):
        parent = None if i == 0 or rng.random() < 0.1 else ids[rng.randrange(i)]
        pairs.append((arm, parent))
    return pairs


def check_geometry(pairs: list[tuple[int, int | None]], places: dict[int, Place]) -> None:
    assert set(places) == {arm for arm, _ in pairs}
    edges = [(places[parent], places[arm]) for arm, parent in pairs if parent is not None]
    for parent, child in edges:
        assert child.depth == parent.depth + 1  # below its parent
        assert parent.low <= child.low <= child.x <= child.high <= parent.high  # within its parent's span
    for (p1, c1) in edges:
        for (p2, c2) in edges:
            if p1.depth == p2.depth and p1.x < p2.x:
                assert c1.x <= c2.x, "two edges cross"
    rows: dict[int, list[Place]] = {}
    for place in places.values():
        rows.setdefault(place.depth, []).append(place)
    for row in rows.values():
        row.sort(key=lambda p: p.x)
        for left, right in zip(row, row[1:]):
            assert left.high < right.low  # arms of one row never share a column


@pytest.mark.parametrize("flags", [8, 64, 256])
def test_the_halving_search_is_drawn_as_a_tree(flags: int):
    pairs = halving(flags)
    places = layout(pairs)
    check_geometry(pairs, places)
    assert max(p.high for p in places.values()) == flags - 1  # one column per flag
    assert places[0].x == (flags - 1) / 2  # the root centred over them


@pytest.mark.parametrize("seed", range(20))
def test_any_forest_keeps_children_under_their_parent_without_crossings(seed: int):
    pairs = random_forest(seed)
    check_geometry(pairs, layout(pairs))
