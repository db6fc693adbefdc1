"""The reductions of a group screening: from a set that stops the failure to a smallest combination.

A set stops the failure while no single change of it does (a masking search group, a clearing
group, the single reducers together, a clearing group with them): changes that mask each other,
as an OR pair does. ddmin (`decide.combinations`) reduces it, each probe an arm of its own asked
by the strict test (`decide.group.answers`), answers implied by earlier arms reused, and a set it
stands on asked again on fresh runs. What it finds becomes a combination arm with its members'
single arms, claimed only by their own sequential tests on fresh runs (`decide.group.claims`).
"""

from __future__ import annotations

from heisenbisect.decide.combinations import Change, Reduction
from heisenbisect.decide.group.answers import SearchAnswers
from heisenbisect.decide.group.records import UNTESTABLE, Arm, GroupSettings, Role
from heisenbisect.decide.group.tree import SearchTree, ask_afresh
from heisenbisect.decide.sequential import decide
from heisenbisect.records import Config, Verdict


class Reductions:
    """The reductions under way (each with the arm it started from), and the combinations found."""

    def __init__(self, settings: GroupSettings, tree: SearchTree, answers: SearchAnswers):
        self.settings = settings
        self.tree = tree
        self.answers = answers
        self.under_way: list[tuple[int, Reduction]] = []  # (arm the search started from, its ddmin)
        self.combinations: list[tuple[int, str]] = []  # (combination arm, where it came from)
        self.reducer_probe: int | None = None
        self.reducers_tried = False

    def start(self, origin: int, changes: tuple[Change, ...]) -> None:
        self.under_way.append((origin, Reduction(changes, budget=self.settings.reduction_probes)))

    def probe_rules(self, arm: Arm, status: str) -> None:
        """A probe closes once it answers."""
        if arm.open and status in ("fails", "stops"):
            arm.answer, arm.closed = status, f"probe: {status}"
            if arm.asked_again:
                runs, failed, _ = arm.scan
                arm.closed = f"probe: stopped, then {status} when asked again ({failed} of {runs} fresh runs failed)"
            decide(arm.state, Verdict.INCONCLUSIVE)

    def recheck_rules(self, arm: Arm, status: str) -> None:
        """A suspected masking's second look: a stop on fresh runs starts a reduction."""
        if status in ("fails", "stops"):
            arm.recheck = False
            runs, failed, _ = arm.scan
            arm.answer, arm.closed = (
                status,
                f"split, then stopped on a second look ({failed} of {runs} fresh runs failed)",
            )
            decide(arm.state, Verdict.INCONCLUSIVE)
            if status == "fails":
                arm.closed = f"split, then failed on a second look ({failed} of {runs} fresh runs)"
            else:
                arm.masking = True
                self.start(arm.id, arm.changes)

    def advance(self) -> None:
        """Every reduction as far as its probes have answered; a finished one leaves its combination."""
        self._detect_masking()
        still = []
        for origin, reduction in self.under_way:
            while (probe := reduction.probe()) is not None:
                if reduction.asking_again:
                    status, known = self._ask_again(probe), ""
                else:
                    known = self._known(probe)
                    status = known or self._probe_status(self.tree.add(probe, Role.PROBE, None))
                if status == "pending":
                    break
                reduction.record(status == "stops", ran=not known)
            if reduction.probe() is None:
                self._finish(origin, reduction)
            else:
                still.append((origin, reduction))
        self.under_way = still

    def _probe_status(self, arm: Arm) -> str:
        """A probe's answer is the strict test's. A search group with the probe's config stopped by the
        wide test (its alternative the baseline's rate), which a set at 7.8% passes about as often as not:
        that "stops" sent one reduction to a pair with an inert flag (15 049 trials at 512 flags, 9 589
        now). Such a group is taken up as a probe and answers from fresh runs; its "fails" stands."""
        status = self.answers.status(arm)
        if status == "stops" and arm.role is Role.GROUP and not self.answers.strict(arm):
            arm.role = Role.PROBE
            ask_afresh(arm)
            status = self.answers.status(arm)
        return status

    def _ask_again(self, changes: tuple[Change, ...]) -> str:
        """The probe that showed ``changes`` to stop, reopened once to answer again from fresh runs only
        (`combinations.Reduction.asking_again`); an arm of another role keeps its answer."""
        arm = self.tree.arm_of(Config(changes=tuple(sorted(changes))))
        assert arm is not None  # the reduction stands on it: it was probed
        if arm.role is Role.PROBE and not arm.asked_again:
            arm.asked_again = arm.stop_checked = True
            ask_afresh(arm)
        return self.answers.status(arm)

    def _known(self, probe: tuple[Change, ...]) -> str:
        """A probe's answer that earlier arms already imply under monotonicity: a superset of a set
        shown to stop (by the strict test) stops, a subset of a set shown above zero_rate fails. The
        probe's own arm is not one of them: its answer is the probe run, and counts against the budget
        (it once answered every probe as implied, so no reduction ever spent a probe of its budget)."""
        changes = set(probe)
        for arm in self.tree.arms:
            if arm.role is Role.PROBE and set(arm.changes) == changes:
                continue
            if arm.answer == "stops" and self.answers.strict(arm) and set(arm.changes) <= changes:
                return "stops"
            if arm.answer == "fails" and changes <= set(arm.changes):
                return "fails"
        return ""

    def _detect_masking(self) -> None:
        """A group that stopped the failure while every half keeps failing: search its combination."""
        arms, status = self.tree.arms, self.answers.status
        for arm in arms:
            if (
                arm.masking
                or arm.recheck
                or arm.role is not Role.GROUP
                or not arm.children
                or status(arm) != "stops"
            ):
                continue
            if any(
                arms[c].role in (Role.SINGLE, Role.COMBINATION) and arms[c].answer != UNTESTABLE
                for c in arm.children
            ):
                continue  # a half's change has an arm of its own: it, not masking, explains the stop
            statuses = [status(arms[c]) for c in arm.children]
            if (
                all(s in ("fails", UNTESTABLE) for s in statuses)
                and statuses.count("fails") >= 2
                and not arm.open
            ):
                # first a second look by the strict test on fresh runs, so that a chance run of clean runs
                # (a group holding one OR member at 7.8% looks clean now and then) is not taken for masking
                arm.recheck = True
                ask_afresh(arm)

    def combine_reducers(self) -> None:
        """Several single changes reduce the failure (or were found far below the baseline's rate by the
        search): do they stop it together (a second fix, an OR pair, or the only one)?"""
        arms = self.tree.arms
        if self.reducers_tried or any(a.open for a in arms) or self.under_way:
            return
        if self.reducer_probe is not None:
            self.reducers_tried = True
            probe = arms[self.reducer_probe]
            if self.answers.status(probe) == "stops":
                self.start(probe.id, probe.changes)
                self.advance()
            return
        singles = [a for a in arms if a.role is Role.SINGLE]
        # an OR pair's member alone keeps about half the failure: its own arm may end no_effect, yet the
        # search found it far below the baseline's rate (and kept it out of the clearing group that would
        # have stopped with both members inside)
        reducers = [
            a.changes[0]
            for a in singles
            if a.state.verdict is Verdict.REDUCES
            or a.lowered
            and a.state.verdict not in (Verdict.ELIMINATES, Verdict.INCREASES)
        ]
        factors = {c[0] for c in reducers}
        if len(reducers) < 2 or len(factors) < len(reducers):
            self.reducers_tried = True
            return
        self.reducer_probe = self.tree.add(tuple(reducers), Role.PROBE, None).id

    def _finish(self, origin: int, reduction: Reduction) -> None:
        changes = reduction.current
        arms = self.tree.arms
        group = next((a for a in arms if a.partner == origin), None)
        if group is not None and not set(changes) & set(group.changes):
            # the stop came from the single reducers alone, not from a partner in the group: it splits as before
            group.partner = -1
            group.answer = group.closed = ""
        for change in changes:
            self.tree.add((change,), Role.SINGLE, None)
        if len(changes) > 1:
            if arms[origin].role is Role.CLEAR:
                arms[
                    origin
                ].masking = True  # it stopped the failure, and no single change of it does
            arm = self.tree.add(changes, Role.COMBINATION, None)
            if all(a != arm.id for a, _ in self.combinations):
                origin_text = self._origin_text(origin)
                if reduction.exhausted:
                    names = ", ".join("{}={}".format(*c) for c in changes)
                    origin_text += (
                        f"; the search for a smallest combination used its budget of {reduction.budget} probes: "
                        f"this is the smallest shown to stop, and it could not separate {names}"
                    )
                self.combinations.append((arm.id, origin_text))

    def _origin_text(self, origin: int) -> str:
        arm = self.tree.arms[origin]
        group = next((a for a in self.tree.arms if a.partner == origin), None)
        if group is not None:
            return (
                f"group G{group.id} of the changes the search left was lower than the baseline and, with the changes "
                "that reduce the failure alone, stopped it"
            )
        if arm.role is Role.CLEAR:
            return f"group G{arm.id} of the changes the search left stopped the failure; none of them alone does"
        if arm.masking:
            return f"group G{arm.id} stopped the failure while none of its halves did"
        return "the changes that reduce the failure, together"
