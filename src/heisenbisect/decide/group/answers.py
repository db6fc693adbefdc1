"""The search's answer for one arm of a group screening: does its set stop the failure?

Every answer asks the claims' own question, "is the run-failure rate below zero_rate?", by Wald's
SPRT (`sequential.ZeroTest`): a search group's alternative is the baseline's rate (the wide test:
a group holding nothing fails as the baseline does); a single change of the search, a probe, a
clearing group and a masking re-check are asked with twice zero_rate as the alternative (the
strict test), since their "stops" is taken as a fact rather than as a reason to split. Apart from
the strategy (`decide.group`) so that the search tree, the reductions and the clearing groups all
read one answer, and from the claims, which never read it.
"""

from __future__ import annotations

import math

from heisenbisect.decide import stats
from heisenbisect.decide.group.records import LOWER, SEARCHED, UNTESTABLE, Arm, GroupSettings, Role
from heisenbisect.decide.sequential import (
    ArmState,
    ZeroTest,
    far_below,
    rate_ceiling,
    rate_floor,
)
from heisenbisect.records import Verdict

LEVELS_CONFIDENCE = 0.8  # the baseline's bounds that say whether the level test is asked, or may be


class SearchAnswers:
    """``status(arm)``: fails (rate shown above zero_rate), stops (below it, or for a single change of
    the search, far below the baseline's), lower (a search group far below the baseline's rate),
    untestable, undecided or pending; measured against the baseline's runs as they stand."""

    def __init__(self, settings: GroupSettings, baseline: ArmState, arms: list[Arm]):
        self.settings = settings
        self.s = settings.screening
        self.baseline = baseline
        self.arms = arms  # the search tree's, shared: a group's parent is read from it

    def baseline_rate(self) -> float:
        ev = self.baseline.evidence
        return ev.failed_runs / ev.runs if ev.runs else 0.5

    def baseline_floor(self) -> float:
        """The baseline's exact lower bound: what "far below the baseline" is measured against. Its point
        estimate after calibration can run high by chance (5 of 15 runs for a true 15%), which once made an
        inert single look far below it (1 failed of 31) and gave it a claim arm of its own."""
        ev = self.baseline.evidence
        return rate_floor(ev.failed_runs, ev.runs, self.s.confidence)

    def strict_above(self) -> float:
        """The strict test's alternative: twice zero_rate, so that a change failing in 8% of runs at a
        zero_rate of 5% is not taken for one that stops the failure (nor one failing in 2% for one that does not)."""
        zero = self.s.zero_rate
        return min(2.0 * zero, (1.0 + zero) / 2.0)

    def wide_above(self) -> float:
        """A search group's alternative: the baseline's rate (a group holding nothing), at its exact
        lower bound so that an inert group is not taken to stop because the calibration ran high,
        floored to a percent so that a baseline run changes it (and wakes the review) only now and then."""
        return max(self.strict_above(), min(math.floor(100 * self.baseline_floor()) / 100, 0.99))

    def zero_test(self, arm: Arm) -> ZeroTest:
        """The search's test of an arm: rate below zero_rate, or above it (`sequential.ZeroTest`).

        A rate inside the indifference zone (between zero_rate and the alternative: an OR pair's
        member alone at 7.8% under a 15% baseline) keeps the test undecided for about a thousand
        runs, so every test is capped at twice the clean runs that show a zero at miss_rate (180 at
        zero_rate 0.05): a set with no failure stops long before, and one near zero mostly does."""
        cap = self.cap()
        if not self.strict(arm):
            return ZeroTest(self.s.zero_rate, self.wide_above(), self.settings.miss_rate, cap)
        # a single change that stops only earns its own claim arm; a set that stops starts or steers a reduction
        single = arm.role is Role.GROUP and len(arm.changes) == 1 and not arm.recheck
        stop_miss = self.settings.miss_rate if single else self.settings.stop_miss_rate
        test = ZeroTest(
            self.s.zero_rate, self.strict_above(), self.settings.miss_rate, cap, stop_miss
        )
        if (
            test.answer(0, cap) != "stops"
        ):  # max_trials leaves no room for the stricter stop: the plain one
            test = ZeroTest(self.s.zero_rate, self.strict_above(), self.settings.miss_rate, cap)
        return test

    def level_test(self) -> ZeroTest:
        """A search group's second question, once it may be above zero_rate: does it fail as the baseline
        does, or far less often (a reducer inside)? Wald's SPRT between (1 - min_reduction) x the
        baseline's rate ("lower") and the baseline's rate, read at its point estimate (the baseline keeps
        pace with the groups that ask: `GroupScreening._next`). A missed reducer is still found by the
        clearing group's own test, at a higher cost; a wrong "lower" only splits an inert group."""
        base = min(max(self.baseline_rate(), self.strict_above()), 0.99)
        low = max((1.0 - self.s.min_reduction) * base, self.s.zero_rate / 2)
        return ZeroTest(
            low, base, self.settings.level_miss_rate, self.cap(), self.settings.lower_miss_rate
        )

    def levels(self) -> bool:
        """Whether the level test is asked: a rate far below the baseline's is above the strict test's
        alternative (the baseline's rate above 20% at zero_rate 0.05, by its lower bound at 80% over
        twice first_look runs or more). Below, a change far below the baseline fails near twice
        zero_rate, where the zero tests' own rules already give it an arm of its own, and telling 7.5%
        from 15% would cost every inert group about 90 more runs (a baseline read high at 15% once had
        inert singles taken for lower, each a hypothesis more)."""
        ev = self.baseline.evidence
        return (
            ev.runs >= 2 * self.s.first_look
            and (1.0 - self.s.min_reduction)
            * rate_floor(ev.failed_runs, ev.runs, LEVELS_CONFIDENCE)
            >= self.strict_above()
        )

    def may_level(self) -> bool:
        """The baseline's upper bound (at LEVELS_CONFIDENCE) would have the level test asked: worth baseline
        runs to tell. By its point estimate (under 20%: a 30% baseline reads so after 1 of 10 or 2 of 11
        runs in about a sixth of studies) the baseline took no run for the whole search, no level test was
        asked, and the reducer went into the clearing group, halved level by level (3 000-5 000 trials more)."""
        ev = self.baseline.evidence
        upper = rate_ceiling(ev.failed_runs, ev.runs, LEVELS_CONFIDENCE)
        return (1.0 - self.s.min_reduction) * upper >= self.strict_above()

    def level(self, arm: Arm) -> str:
        """``lower`` (far below the baseline's rate), ``base`` (at it), or ``pending``. ``lower`` also
        needs the group's exact upper bound below (1 - min_reduction / 2) x the baseline's rate: the test
        reads the baseline at its point estimate, which can run high (4 of 15 runs for a true 15%), and
        an inert group taken for lower is split, each half run again (at a 15% baseline, 90 runs each)."""
        ev = arm.seen
        answer = self.level_test().answer(ev.failed_runs, ev.runs)
        if answer == "stops":
            # a single's "lower" gives it a claim arm: at 1 - miss_rate, since an inert single with an arm
            # of its own is a hypothesis more (4 of 41 runs failed under a 30% baseline was one)
            single = len(arm.changes) == 1
            level = 1.0 - self.settings.miss_rate if single else self.s.confidence
            bound = stats.clopper_pearson_upper(ev.failed_runs, ev.runs, level)
            below = bound < (1.0 - self.s.min_reduction / 2) * self.baseline_rate()
            return "lower" if below else "pending"
        return {"fails": "base", "undecided": "base"}.get(answer, "pending")

    def unexplained(self, arm: Arm) -> bool:
        """A half of a group shown far below the baseline's rate (or of a clearing group lower than it, searched
        again) while no half was shown so: the reducer is in one of them, so a half that fails above the
        baseline's rate on its first runs (4 of 9 for a group at 12% under 30%) waits for its level test
        before it closes, rather than take the reducer into the clearing group, which is then halved
        level by level (3 000 trials more). A half found far below clears its siblings' wait (`awaits_level`)."""
        parent = self.arms[arm.parent] if arm.parent is not None else None
        return parent is not None and parent.answer in (LOWER, SEARCHED)

    def cap(self) -> int:
        """Twice the clean runs that show a zero at miss_rate (180 at zero_rate 0.05), within max_trials."""
        zero_runs = math.ceil(math.log(self.settings.miss_rate) / math.log(1.0 - self.s.zero_rate))
        return min(self.s.max_trials, 2 * zero_runs)

    def strict(self, arm: Arm) -> bool:
        """Arms whose stop is taken as a fact (a probe's answer, a masking, a candidate eliminator),
        not as a reason to look closer by splitting."""
        if arm.role is Role.GROUP and len(arm.changes) == 1 and not arm.recheck:
            # a single change of the search: by the wide test where it is wider (about 27 clean runs to stop
            # at a 30% baseline, 2 at 94%, against 85), since its stop only earns it a claim arm, which
            # decides from fresh runs; by the strict one where they are the same (a 15% baseline)
            return self.wide_above() <= self.strict_above()
        return arm.role in (Role.PROBE, Role.CLEAR) or arm.recheck

    def status(self, arm: Arm) -> str:
        """The search's answer for an arm: fails (its rate shown above zero_rate), stops (below it, or
        for a single change of the search, far below the baseline's), untestable, or pending."""
        ev = arm.seen
        if arm.answer:
            return arm.answer
        if arm.state.verdict is Verdict.ELIMINATES:
            return "stops"
        if not arm.open:
            return "fails"  # closed without stopping: it will not run again
        if ev.runs == 0 and ev.attempts >= self.settings.untestable_attempts:
            return UNTESTABLE
        single = arm.role is Role.GROUP and len(arm.changes) == 1
        floor, miss = self.baseline_floor(), self.settings.miss_rate
        if (
            single
            and ev.failed_runs
            and far_below(ev.failed_runs, ev.runs, floor, self.s.min_reduction, miss)
        ):
            return "stops"  # a reducer failing far less often than the baseline: its own arm decides what it does
        if self.strict(arm):
            answer = self.scan(arm)
        else:
            answer = self.zero_test(arm).answer(ev.failed_runs, ev.runs)
            if (
                answer != "stops"
                and arm.role is Role.GROUP
                and not arm.recheck
                and ev.failed_runs
                and self.levels()
            ):
                # above zero_rate or not yet known: a group far below the baseline holds a reducer, and is
                # split as soon as that is known (one at 9% under 30% ran to the cap, then its changes
                # went to a clearing group, which was halved level by level: 3 500 trials)
                level = self.level(arm)
                if level == "lower":
                    return "stops" if single else LOWER  # a single: its own arm decides
                below = ev.failed_runs < ev.runs * self.baseline_rate()
                if (
                    answer == "fails"
                    and level == "pending"
                    and arm.awaits_level
                    and (below or self.unexplained(arm))
                ):
                    # failing less often than the baseline so far, or holding the reducer its parent's rate
                    # says is there: the level test answers before it closes
                    return "pending"
        if (
            answer == "fails"
            and single
            and rate_floor(ev.failed_runs, ev.runs, 1.0 - miss)
            < (1.0 - self.s.min_reduction) * floor
        ):
            # above zero_rate, and perhaps far below the baseline (eager decoding under sharing, 10% against 35%):
            # not closed while that is open, up to the cap, where the failures so far decide
            answer = "undecided" if ev.runs >= self.zero_test(arm).cap else "pending"
        if answer == "undecided":  # neither shown within the cap: a rate near zero_rate
            low = ev.failed_runs < ev.runs * self.baseline_rate() * (1.0 - self.s.min_reduction)
            return (
                "stops" if single and low else "fails"
            )  # a single far below the baseline: its own arm decides
        return answer

    def scan(self, arm: Arm) -> str:
        """The strict test's first answer over the arm's runs in arrival order: an arm that runs on
        after it (a clearing group's looks, a claim) keeps the answer the test stopped at."""
        runs, failed, answer = arm.scan
        test = self.zero_test(arm)
        fractions = arm.seen.fractions
        single = arm.role is Role.GROUP and len(arm.changes) == 1 and not arm.recheck
        while answer == "pending" and arm.scan_from + runs < len(fractions):
            failed += fractions[arm.scan_from + runs] > 0
            runs += 1
            answer = test.answer(failed, runs)
            if answer == "stops" and failed and not single and not arm.stop_checked:
                # a set that stopped with failed runs among them: asked again on fresh runs. An OR pair's
                # member alone (7.8%) stops now and then this way, and one such probe sent ddmin after a
                # combination without the other member (36 161 trials); a set with no failure stops at once
                arm.stop_checked, arm.scan_from, runs, failed, answer = (
                    True,
                    arm.scan_from + runs,
                    0,
                    0,
                    "pending",
                )
        arm.scan = (runs, failed, answer)
        return answer
