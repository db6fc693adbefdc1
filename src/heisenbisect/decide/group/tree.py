"""The search tree of a group screening: its arms, one per config, and the moves that grow it.

The first groups are cut here (Hwang's generalized binary splitting, a group never holding two
levels of one factor); an arm is added, promoted to a claim, split in halves, or reopened to
answer from fresh runs. One arm per config, because the store keeps runs by config: a replay
must find every run's arm again. What to do with an arm is decided elsewhere (`decide.group`,
`decide.group.reductions`, `decide.group.clearing`); this module only keeps the tree consistent.
"""

from __future__ import annotations

import math

from heisenbisect.decide.combinations import Change, partition
from heisenbisect.decide.group.records import UNTESTABLE, Arm, Role
from heisenbisect.decide.sequential import ArmState
from heisenbisect.records import Config


def hwang_group_size(candidates: int, effects: int) -> int:
    """Hwang's generalized binary splitting: groups of 2^floor(log2((n - d + 1) / d))."""
    d = max(1, min(effects, candidates))
    if candidates <= d:
        return 1
    return 2 ** max(0, math.floor(math.log2((candidates - d + 1) / d)))


def initial_groups(candidates: list[Change], size: int) -> list[tuple[Change, ...]]:
    """Near-equal groups of about ``size``; a group never holds two levels of one factor.

    The n-th alternative level of every factor goes to the n-th pass, and passes are cut
    separately, so a group config is always a valid config.
    """
    passes: list[list[Change]] = []
    seen: dict[str, int] = {}
    for change in candidates:
        rank = seen.get(change[0], 0)
        seen[change[0]] = rank + 1
        while len(passes) <= rank:
            passes.append([])
        passes[rank].append(change)
    groups = []
    for changes in passes:
        count = max(1, math.ceil(len(changes) / max(1, size)))
        groups += [tuple(g) for g in partition(tuple(changes), count) if g]
    return groups


def ask_afresh(arm: Arm) -> None:
    """Reopen an arm so that the strict test answers from the runs still to come only: the runs so
    far raised the question (a stop that looked like masking, a probe a reduction stands on)."""
    arm.scan, arm.scan_from = (0, 0, "pending"), len(arm.seen.fractions)
    arm.answer, arm.closed, arm.state.verdict, arm.state.decided_at = "", "", None, None


class SearchTree:
    """Every arm of the study in the order it was added (its id), and the baseline it compares with."""

    def __init__(self, baseline: ArmState):
        self.baseline = baseline
        self.arms: list[Arm] = []
        self._by_config: dict[Config, Arm] = {}

    def arm_of(self, config: Config) -> Arm | None:
        return self._by_config.get(config)

    def add(
        self, changes: tuple[Change, ...], role: Role, parent: int | None, offset: int | None = None
    ) -> Arm:
        """The arm of ``changes``, created if new; an existing one takes the stronger role."""
        config = Config(changes=tuple(sorted(changes)))
        arm = self._by_config.get(config)
        if arm is None:
            base_runs = self.baseline.evidence.runs if offset is None else offset
            arm = Arm(len(self.arms), tuple(changes), role, ArmState(config), base_runs, parent)
            self.arms.append(arm)
            self._by_config[config] = arm
        elif role is Role.COMBINATION or (
            arm.role in (Role.PROBE, Role.GROUP) and role in (Role.SINGLE, Role.CLEAR)
        ):
            self.promote(arm, role)  # a claim is wanted now: the arm runs on to its own verdict
        if parent is not None and arm.id not in self.arms[parent].children and arm.id != parent:
            self.arms[parent].children.append(arm.id)
            if arm.parent is None:
                arm.parent = parent
        return arm

    def promote(self, arm: Arm, role: Role) -> None:
        """A search arm (or probe, or clearing group) becomes a claim: it reopens and runs on to its own verdict.

        Its claim starts from fresh runs, paired with the baseline's next: the runs so far are what
        selected it (a search group that showed m clean runs, a probe that stopped), and a claim
        read from them would be read from a sample chosen for looking clean. Once, a combination
        whose true rate was 7.8% was claimed to eliminate on the 90 clean runs that had picked it
        (docs/group-screening.md). The search keeps answering from every run (``Arm.seen``)."""
        if role is not arm.role and arm.state.evidence.attempts and arm.answer != UNTESTABLE:
            arm.search_evidence = arm.seen
            arm.state = ArmState(arm.state.config)
        arm.role = role
        arm.offset = max(arm.offset, self.baseline.evidence.runs - arm.state.evidence.runs)
        if arm.answer != UNTESTABLE:
            arm.answer, arm.closed, arm.state.verdict, arm.state.decided_at = "", "", None, None

    def split(self, arm: Arm) -> None:
        """Its halves: search groups stay search groups; a clearing group's halves are clearing
        groups or single arms."""
        for half in partition(arm.changes, 2):
            role = arm.role if arm.role is Role.GROUP or len(half) > 1 else Role.SINGLE
            self.add(half, role, arm.id)

    def hunt(self, arm: Arm) -> None:
        """Its halves as search groups, to find the reducer that makes it lower than the baseline."""
        for half in partition(arm.changes, 2):
            self.add(half, Role.GROUP, arm.id)
