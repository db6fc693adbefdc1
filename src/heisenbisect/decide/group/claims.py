"""The claims of a group screening: each claim arm decided by `decide.sequential`'s rules, Holm across the family.

A single change's, a combination's and a clearing group's arm takes looks on the geometric
schedule, each against the baseline runs that came after the arm was added (``Arm.offset``), so
a late arm is interleaved in time with its own baseline as in one-at-a-time screening. Holm runs
over every claim that exists at the moment; a claim the grown family no longer supports reopens
while it has looks left. Apart from the search (`decide.group.answers`), whose answers only steer:
nothing here reads them, and no claim is read from the search's runs alone.

Skipped runs are held against a claim as in one-at-a-time screening (`decide.skips`): at each look
the arm's skip share over every run of its config is compared with the baseline's, and an
``eliminates`` or ``no_effect`` its skips could have made is held; one still held when the arm's
budget ends is ``untestable``. Without it a change whose runs turn the failure into a skipped run
(a could-not-run traceback) was claimed to eliminate it in 19 of 20 simulated studies.
"""

from __future__ import annotations

from heisenbisect.decide import stats
from heisenbisect.decide.group.records import CLAIMS, UNTESTABLE, Arm, Role
from heisenbisect.decide.screening import ScreeningSettings, skips_of
from heisenbisect.decide.sequential import (
    ArmState,
    Schedule,
    ZeroTest,
    claim_difference,
    close_out,
    decide,
    equivalence_pvalue,
    look_at_difference,
    out_of_budget,
    spend,
    zero_bound,
)
from heisenbisect.decide.skips import Skips, SkipTest, skip_test
from heisenbisect.records import Verdict


def looks_at(arm: Arm) -> bool:
    """Arms with sequential tests: the claims and the clearing groups (the search only counts clean runs)."""
    return arm.role in (Role.SINGLE, Role.COMBINATION, Role.CLEAR)


class Claims:
    """The looks, the Holm family and the verdicts of the claim arms among ``arms`` (shared with the search tree)."""

    def __init__(
        self, settings: ScreeningSettings, baseline: ArmState, arms: list[Arm], miss_rate: float
    ):
        self.s = settings
        self.miss_rate = miss_rate  # the search test's: a promoted single's zero is shown by it too
        self.schedule: Schedule = settings.schedule  # computed once: read per trial
        self.baseline = baseline
        self.arms = arms
        self._skip_tests: dict[int, SkipTest] = {}  # each claim arm's, at its latest look
        self._held: dict[int, str] = {}  # claims its skips hold back: why

    def look_due(self, arm: Arm) -> bool:
        look = self.schedule.next(arm.state.looks_done)
        if look is None:
            return False
        return (
            arm.state.evidence.runs >= look.size
            and self.baseline.evidence.runs >= arm.offset + look.size
        )

    def look_pending(self, arm: Arm) -> bool:
        """The arm has the runs for its next look and waits for the baseline's: it decides after it,
        not on an earlier, weaker look (an arm promoted from the search arrives with many runs)."""
        look = self.schedule.next(arm.state.looks_done)
        return look is not None and arm.state.evidence.runs >= look.size

    def take_looks(self) -> None:
        """Every look that is due, then Holm. An arm promoted with many runs takes all its due looks
        first: the weighted Bonferroni bound over looks holds for the minimum over all of them, and
        deciding at its first look would close it with the weakest p-value, which a family grown
        later could withdraw."""
        looked = False
        for arm in self.arms:
            while arm.open and looks_at(arm) and self._look_if_due(arm):
                looked = True
        if looked:
            self._apply_holm()

    def _look_if_due(self, arm: Arm) -> bool:
        state = arm.state
        look = self.schedule.next(state.looks_done)
        if look is None or not self.look_due(arm):
            return False
        arm_y = state.evidence.array()[: look.size]
        base_y = self.baseline.evidence.array()[arm.offset : arm.offset + look.size]
        look_at_difference(state, arm_y, base_y, look.weight, stream=arm.id)
        equivalence = equivalence_pvalue(arm_y, base_y, self.s.min_reduction)
        if arm.role is Role.CLEAR:
            arm.equivalence_p = spend(arm.equivalence_p, equivalence, look.weight)
            return True
        level = look.level(self.s.alpha)
        self._skip_tests[arm.id] = skip_test(_skips(arm), skips_of(self.baseline), level)
        self._held.pop(arm.id, None)  # each look judges its claims afresh
        if equivalence <= level:
            decide(state, Verdict.NO_EFFECT)  # the one-at-a-time rule for a single arm
            self._hold_if_skipped(arm)
        return True

    def family(self) -> tuple[list[Arm], list[Arm]]:
        """The Holm family: the difference tests of single changes and combinations (the claims
        about what a change does) and the equivalence tests of clearing groups (the claims that
        clear their members). The search groups and probes only steer the search: no claims; nor
        do breakers, which never ran."""
        claims = [
            a
            for a in self.arms
            if a.role in (Role.SINGLE, Role.COMBINATION) and a.answer != UNTESTABLE
        ]
        return claims, [a for a in self.arms if a.role is Role.CLEAR]

    def holm(self) -> tuple[dict[int, float], dict[int, float]]:
        """Holm-adjusted p-values over the family as it stands: the claims' differences, the
        clearing groups' equivalences."""
        tested, groups = self.family()
        adjusted = stats.holm_adjust(
            [a.state.sequential_p for a in tested] + [a.equivalence_p for a in groups]
        )
        difference = {a.id: p for a, p in zip(tested, adjusted)}
        return difference, {a.id: p for a, p in zip(groups, adjusted[len(tested) :])}

    def _apply_holm(self) -> None:
        difference, equivalence = self.holm()
        for arm in self.arms:
            state = arm.state
            if self._withdrawn(arm, difference, equivalence):
                state.verdict, state.decided_at = (
                    None,
                    None,
                )  # the grown family needs more evidence: run on
            revisable = state.verdict is Verdict.INCONCLUSIVE and not state.note and not arm.closed
            if (
                state.verdict is not None
                and not revisable
                or not looks_at(arm)
                or self.look_pending(arm)
            ):
                continue
            # a clearing group's difference steers the search at the arm's own sequential level; shown
            # equivalent at the same look, it is cleared, as a single arm is (`_look_if_due`)
            p = difference[arm.id] if arm.id in difference else state.sequential_p
            if (
                arm.role is Role.CLEAR
                and equivalence.get(arm.id, 1.0) <= self.s.alpha
                and state.verdict is None
            ):
                decide(state, Verdict.NO_EFFECT)
            elif p <= self.s.alpha:
                self.claim(arm)
                self._hold_if_skipped(arm)
            elif equivalence.get(arm.id, 1.0) <= self.s.alpha and state.verdict is None:
                decide(state, Verdict.NO_EFFECT)

    def claim(self, arm: Arm) -> None:
        """`sequential.claim_difference` on the arm's fresh runs; ``eliminates`` also needs every run of its
        config, the search's before the promotion included, to bound the rate below zero_rate. A near-zero
        reducer at 8% that failed 2 of its 18 search runs then showed 0 of 60 fresh (a 0.7% chance) and
        was claimed to eliminate; an extra condition on a claim can only make it rarer, never wrong."""
        state = arm.state
        claim_difference(state, self.s)
        if state.verdict is Verdict.ELIMINATES and (
            arm.role is Role.CLEAR
            or zero_bound(arm.seen, self.s.confidence) >= self.s.zero_rate
            or arm.first_role is Role.GROUP
            and not self._strict_zero(arm)
        ):
            # a clearing group stops the failure only by the strict test (108 clean runs at 0.3%), which
            # starts its reduction: read from 0 of 60 runs, an 8% reducer's group once sent ddmin after a
            # 126-change set that does not stop (51 184 trials)
            state.verdict, state.decided_at, state.pending_zero = (
                None,
                None,
                True,
            )  # runs on to its next look

    def _hold_if_skipped(self, arm: Arm) -> None:
        """Take back a claim the arm's skips at its latest look could have made (`decide.skips`): it
        runs on to its next look, and is ``untestable`` only if still held when its budget ends."""
        test, claim = self._skip_tests.get(arm.id), arm.state.verdict
        why = test.holds(claim, self.s.zero_rate) if test and claim else ""
        if claim and why:
            self._held[arm.id] = f"untestable rather than {claim.value}: {why}"
            arm.state.verdict, arm.state.decided_at = None, None

    def _strict_zero(self, arm: Arm) -> bool:
        """Every run of a single the search promoted shows its rate below zero_rate by the strict test (85
        clean runs at 0.05): the wide test promotes one after 2 clean runs at a 94% baseline, and 0 of 62
        runs then claimed an 8% reducer `eliminates` (a 0.6% chance, in 1-3 of 200 studies a row)."""
        above = min(2.0 * self.s.zero_rate, (1.0 + self.s.zero_rate) / 2.0)
        test = ZeroTest(self.s.zero_rate, above, self.miss_rate, arm.seen.runs + 1)
        return test.answer(arm.seen.failed_runs, arm.seen.runs) == "stops"

    def _withdrawn(
        self, arm: Arm, difference: dict[int, float], equivalence: dict[int, float]
    ) -> bool:
        """A claim the family, grown since it was made, no longer supports, on an arm with looks left.

        The search keeps adding hypotheses, which raises every adjusted p-value; rather than let the
        final Holm withdraw such a claim in the report, the arm reopens and gathers more runs (the
        weighted Bonferroni bound over looks holds whenever an arm stops, so running on is allowed)."""
        if arm.closed or arm.state.looks_done >= len(self.schedule):
            return False
        verdict = arm.state.verdict
        if verdict in CLAIMS and arm.id in difference:
            return difference[arm.id] > self.s.alpha
        if verdict is Verdict.NO_EFFECT and arm.id in equivalence:
            return equivalence[arm.id] > self.s.alpha
        return False

    def out_of_budget(self, arm: Arm) -> bool:
        return out_of_budget(arm.state, self.schedule, self.s)

    def close_out(self, arm: Arm) -> None:
        if arm.id in self._held:
            arm.state.note = self._held[arm.id]
            decide(arm.state, Verdict.UNTESTABLE)
            return
        close_out(arm.state, self.schedule, self.s, short_of_zero=arm.state.pending_zero)


def _skips(arm: Arm) -> Skips:
    """Every attempt of the arm's config, the search's before a promotion included: a change that
    hides the failure as skips does so in all of them."""
    ev = arm.seen
    return Skips(ev.skipped, ev.attempts, ev.first_skip)
