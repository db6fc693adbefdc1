"""The clearing groups of a group screening: every change the search left, cleared by one test.

Once no search group is open, every candidate without an arm of its own goes into one clearing
group (one per level rank, so it stays a valid config): shown equivalent to the baseline, all its
members are cleared at once, which is why the search is cheap (an equivalence test costs hundreds
of runs whatever the group's size). Significantly lower or higher, a change inside shifts the rate
and the group is split in halves until that change has an arm of its own; stopping the failure,
its changes mask each other and a reduction (`decide.group.reductions`) takes them.
"""

from __future__ import annotations

from heisenbisect.decide.combinations import Change
from heisenbisect.decide.group.answers import SearchAnswers
from heisenbisect.decide.group.records import (
    PARTNER,
    SEARCHED,
    SET_ASIDE,
    UNTESTABLE,
    Arm,
    GroupSettings,
    Role,
)
from heisenbisect.decide.group.reductions import Reductions
from heisenbisect.decide.group.tree import SearchTree, initial_groups
from heisenbisect.decide.sequential import ZeroTest, decide
from heisenbisect.records import Verdict


class Clearing:
    """Adds the clearing groups once the search is quiet, and says what each one's answer leads to."""

    def __init__(
        self,
        settings: GroupSettings,
        tree: SearchTree,
        answers: SearchAnswers,
        reductions: Reductions,
    ):
        self.settings = settings
        self.s = settings.screening
        self.tree = tree
        self.answers = answers
        self.reductions = reductions
        self.searched = (
            False  # a clearing group lower than the baseline went back to the search once
        )

    def clear_the_rest(self, candidates: list[Change]) -> None:
        """Once the search is quiet, every change it did not give an arm of its own goes into one
        clearing group (one per level rank): a single equivalence test clears them all."""
        arms = self.tree.arms
        if self.reductions.under_way or any(
            a.open and (a.role is Role.GROUP or a.recheck) for a in arms
        ):
            return
        covered: set[Change] = set()
        for arm in arms:
            if arm.role is Role.SINGLE or (arm.role is Role.CLEAR and arm.answer not in SET_ASIDE):
                covered.update(arm.changes)
        rest = [c for c in candidates if c not in covered]
        for changes in initial_groups(rest, len(rest)) if rest else []:
            arm = self.tree.add(changes, Role.CLEAR if len(changes) > 1 else Role.SINGLE, None)
            if (
                arm.answer == SEARCHED
            ):  # the search found nothing in it: it splits as a clearing group
                arm.answer = arm.closed = ""

    def rules(self, arm: Arm, status: str) -> None:
        """A clearing group not yet split: it stops (reduce it), or differs from the baseline (split it,
        after asking whether a lower one and the single reducers stop together)."""
        if self.split_as_clear(arm) or arm.answer:
            return
        if status == "stops":
            arm.answer, arm.closed = (
                status,
                "stopped the failure: reduced to a smallest stopping subset "
                f"(no failed run in {arm.state.evidence.runs})",
            )
            decide(arm.state, Verdict.INCONCLUSIVE)
            self.reductions.start(arm.id, arm.changes)
        elif arm.state.verdict is Verdict.REDUCES and self.partner_wait(arm):
            pass  # a single reducer and a change inside may be an OR pair: asked before any split
        elif arm.state.verdict is Verdict.REDUCES and not self.searched and self.answers.levels():
            self.search_again(arm)
        elif arm.state.verdict in (Verdict.REDUCES, Verdict.INCREASES):
            self.tree.split(arm)  # a change inside shifts the rate: find it

    def search_again(self, arm: Arm) -> None:
        """A clearing group lower than the baseline holds a reducer the search missed: its halves go back to
        the search, whose level test (far below the baseline's rate?) finds it without a baseline window of
        their own, and the changes left join one new clearing group. Halving it as clearing groups, each an
        equivalence test, cost 3 500-6 000 trials at 128 flags. Once a study, and only where the level test
        is asked (`SearchAnswers.levels`): a clearing group lower again (an OR member alone keeps half the
        failure, the level test's edge) splits as clearing groups."""
        self.searched = True
        arm.answer, arm.closed = (
            SEARCHED,
            "lower than the baseline: its changes searched again for the reducer; the rest cleared by "
            "a new clearing group",
        )
        self.tree.hunt(arm)

    def split_as_clear(self, arm: Arm) -> bool:
        """Its halves are clearing groups or single arms. A search group taken up again as a clearing group
        (a half of a larger one) has the search's halves as children until then, and must still split:
        once, it sat `reduces` with a near-zero reducer and seven inert flags inside, all inconclusive."""
        return bool(arm.children) and all(
            self.tree.arms[c].role in (Role.CLEAR, Role.SINGLE) for c in arm.children
        )

    def partner_wait(self, group: Arm) -> bool:
        """A clearing group lower than the baseline beside single changes that reduce the failure without
        stopping it: one of them and a change in the group may be an OR pair whose members the search
        separated (one reached its own arm through a breaker's splits, the other was left). One probe of
        them together asks first: if it stops, a reduction finds the pair (about 2 000 runs at a 15%
        baseline) instead of halving the group level by level, each half an equivalence test (8 000 to
        9 000 runs, and the group's other changes inconclusive when a level runs out of looks).
        True while the probe is pending, or once it stopped and its reduction took the group's changes."""
        if group.partner is None:
            partial = self.partial_reducers(group)
            known = any(
                set(a.changes) <= set(partial) and self.answers.status(a) == "stops"
                for a in self.tree.arms
            )
            group.partner = (
                self.tree.add(partial + group.changes, Role.PROBE, None).id
                if partial and not known
                else -1
            )
        if group.partner < 0:
            return False  # none to ask (or the reducers stop together already)
        probe = self.tree.arms[group.partner]
        status = self.answers.status(probe)
        if status == "stops" and group.answer != PARTNER:
            group.answer, group.closed = (
                PARTNER,
                (
                    f"lower than the baseline; with the single reducers it stopped the failure (probe G{probe.id}): "
                    "reduced to a smallest stopping combination"
                ),
            )
            self.reductions.start(probe.id, probe.changes)
        return status in ("pending", "stops")

    def partial_reducers(self, group: Arm) -> tuple[Change, ...]:
        """Single changes (one per factor, none of the group's factors) that failed, less often than the
        baseline by half the least reduction of interest or more, and that the strict test does not show
        to stop; a single still running counts (an OR member alone needs ~960 runs to be claimed `reduces`
        at a 15% baseline, while the group's split would already run)."""
        test = ZeroTest(
            self.s.zero_rate,
            self.answers.strict_above(),
            self.settings.miss_rate,
            self.answers.cap(),
        )
        factors = {c[0] for c in group.changes}
        found: list[Change] = []
        for arm in self.tree.arms:
            if (
                arm.role is not Role.SINGLE
                or arm.answer == UNTESTABLE
                or arm.changes[0][0] in factors
            ):
                continue
            ev = arm.seen
            if arm.state.verdict in (Verdict.INCREASES, Verdict.ELIMINATES) or not ev.failed_runs:
                continue  # no_effect stays: an OR member alone keeps ~52% of the failure, inside the margin
            low = ev.failed_runs / ev.runs <= self.answers.baseline_rate() * (
                1.0 - self.s.min_reduction / 2
            )
            if low and test.answer(ev.failed_runs, ev.runs) != "stops":
                found.append(arm.changes[0])
                factors.add(arm.changes[0][0])
        return tuple(found)
