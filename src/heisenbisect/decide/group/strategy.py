"""Group screening: hundreds of candidate changes searched by noisy adaptive group testing.

Groups are for search; claims are made by sequential arms exactly as in `decide.screening`,
by the rules of `decide.sequential` (looks on a geometric schedule, weighted Bonferroni over
looks, exact Clopper-Pearson bound for a zero, Holm across the family, the run as the unit).
The arms and the result are records of `decide.group.records`; `decide.group.result` builds
the result. The strategy is made of modules with one job each: the search tree
(`decide.group.tree`), the search's answers (`decide.group.answers`), the claims
(`decide.group.claims`), the reductions (`decide.group.reductions`) and the clearing groups
(`decide.group.clearing`); this one schedules trials and runs the review.
docs/group-screening.md has the reasoning and the literature. In short:

- Candidates (one per non-baseline level of each factor) are cut into groups of Hwang's
  generalized-binary-splitting size for ``expected_effects`` effects. A group arm sets all its
  changes at once.
- Step 1, locate (search groups): every search answer is the claims' own question, "is the rate
  below zero_rate?", asked by Wald's SPRT between zero_rate and a higher rate
  (`sequential.ZeroTest`; the baseline's rate for a search group, twice zero_rate for the strict
  test of single changes, probes, clearing groups and masking rechecks). Shown above zero_rate, a
  group holds no eliminator and closes; shown below, it is split in halves. One failed run decides
  nothing: a change failing 1.4% of runs is an eliminator by the tool's definition. A single change
  that stops, that stays undecided at the strict test's cap, or whose failures are far below the
  baseline's (`sequential.far_below`) becomes a claim arm, so a near-zero reducer never goes into
  a clearing group. Search groups compare with no baseline and make no claim.
- A group whose trials all fail to run (exit 125, startup failure) is split until the
  breakers are single changes, reported untestable with their logs.
- Step 2, clear: once the search is quiet, every change without an arm of its own goes into one
  clearing group. Shown equivalent to the baseline (in the Holm family) it clears them all;
  significantly lower or higher it is split in halves (a reducer or raiser inside); stopping
  the failure (an OR pair: changes that mask each other) it is reduced by ddmin
  (`decide.combinations`; each probe by the strict test, answers implied by earlier probes reused,
  a set it stands on asked again on fresh runs before refining it further, a budget of probes)
  to a smallest stopping combination, which a sequential arm confirms on
  fresh runs, and the rest goes into a new clearing group. A search group that stops while every half keeps
  failing is re-checked on fresh runs and reduced the same way, and so are the single changes that reduce
  when none eliminates. A clearing group lower than the baseline is first probed with the single changes
  that reduce without stopping: an OR pair the search separated stops together
  (`clearing.Clearing.partner_wait`).
- Claims decided while the family was smaller reopen when the grown family no longer supports
  them, while they have looks left.
- Every arm compares with the baseline runs that came after it was added (``offset``), so a
  late arm is interleaved in time with its own baseline, as in one-at-a-time screening.
- The strategy is pure and deterministic given the order of observations: replaying the
  store after a crash rebuilds the same tree.
- A change left ``no_effect`` or ``inconclusive`` (by its own arm, or cleared by a group) whose
  variable no Python process read in any run with it applied is ``not_applied`` (`decide.reach`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from heisenbisect.decide.combinations import Change
from heisenbisect.decide.group.answers import SearchAnswers
from heisenbisect.decide.group.claims import Claims, looks_at
from heisenbisect.decide.group.clearing import Clearing
from heisenbisect.decide.group.records import (
    LOWER,
    UNTESTABLE,
    Arm,
    GroupResult,
    GroupSettings,
    Role,
)
from heisenbisect.decide.group.reductions import Reductions
from heisenbisect.decide.group.result import SearchState, build_result
from heisenbisect.decide.group.tree import SearchTree, hwang_group_size, initial_groups
from heisenbisect.decide.sequential import (
    ArmState,
    calibrated,
    calibration_wants,
    decide,
    never_failed,
)
from heisenbisect.decide.strategy import fill_slots
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict


class GroupScreening:
    """The group-screening `Strategy`: pure, deterministic given the order of observations.

    Made of one search tree (`decide.group.tree`) that the search's answers
    (`decide.group.answers`), the claims (`decide.group.claims`), the reductions
    (`decide.group.reductions`) and the clearing groups (`decide.group.clearing`) share; this class
    schedules trials, feeds observations in, and runs the review's rules to a fixed point.
    ``variables``: each env factor's variable, to tell ``not_applied`` (`decide.reach`).
    """

    def __init__(
        self,
        baseline: Config,
        candidates: list[Change],
        settings: GroupSettings,
        variables: Mapping[str, str] | None = None,
    ):
        self.settings = settings
        self.variables = dict(variables or {})
        self.s = settings.screening
        self.baseline = ArmState(baseline)
        self.candidates = list(candidates)
        self.tree = SearchTree(self.baseline)
        self.arms: list[Arm] = self.tree.arms
        self.answers = SearchAnswers(settings, self.baseline, self.arms)
        self.claims = Claims(self.s, self.baseline, self.arms, settings.miss_rate)
        self.reductions = Reductions(settings, self.tree, self.answers)
        self.clearing = Clearing(settings, self.tree, self.answers, self.reductions)
        self.combinations = self.reductions.combinations  # (combination arm, where it came from)
        self._cannot_reproduce = False
        self._started = False
        self._stop_rule = (0.0, 0.0)  # the search tests' baseline rates at the last review
        self._paced: list[Arm] = []  # search groups whose level test reads the baseline's rate
        self._open_arms: list[Arm] = []  # as of the last review
        self.group_size = settings.group_size or hwang_group_size(
            len(candidates), settings.expected_effects
        )
        self._initial = initial_groups(self.candidates, self.group_size)

    # -- Strategy ------------------------------------------------------------------------

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config == self.baseline.config:
            self.baseline.evidence.add(outcome)
            if (
                self._started
                and self._stop_rule == self._search_rates()
                and not any(self.claims.look_due(a) for a in self._open_arms if looks_at(a))
            ):
                return  # nothing the review reads has changed: no look due, the same stop rule
        else:
            arm = self.tree.arm_of(config)
            if arm is None:
                return  # a config of an older spec revision, or of a search not taken on replay
            before = self.answers.status(arm)
            arm.state.evidence.add(outcome)
            if arm.search_evidence is not None:
                arm.search_evidence.add(outcome)
            if outcome.status is not TrialStatus.OK:
                arm.problem = (outcome.log_path, outcome.detail)
            quiet = (
                not arm.open
                or not (looks_at(arm) and self.claims.look_due(arm))
                and not self.claims.out_of_budget(arm)
            )
            if self._started and quiet and self.answers.status(arm) == before:
                return  # the review would change nothing: it reads this arm only through these
        self._review()

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        return fill_slots(self._next, in_flight, slots)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        done = [a.state.config for a in self.arms if not a.open]
        if self.finished():
            done.append(self.baseline.config)
        return [c for c in done if in_flight.get(c)]

    def finished(self) -> bool:
        if self._cannot_reproduce:
            return True
        return self._started and not self._open_arms and not self.reductions.under_way

    # -- scheduling ----------------------------------------------------------------------

    def _next(self, planned: Mapping[Config, int]) -> Config | None:
        base = self.baseline
        base_planned = base.evidence.runs + (planned.get(base.config, 0) if planned else 0)
        if not self._started:
            if self._cannot_reproduce or not calibration_wants(
                base.evidence, planned.get(base.config, 0), self.s
            ):
                return None
            return base.config
        open_arms = self._open_arms
        if not open_arms:
            return None
        count = (
            (lambda config: planned.get(config, 0)) if planned else (lambda config: 0)
        )  # configs hash slowly
        # fewest runs first; the baseline counts its runs since the newest open arm was added, so
        # each arm's looks compare with baseline runs interleaved with its own; the search and
        # its probes compare with no baseline runs, so they do not ask for any
        testing = [a for a in open_arms if looks_at(a)]
        best, best_load = None, math.inf
        if testing:
            base_load = min(base_planned - a.offset for a in testing)
            if base_planned < max(a.offset + self._target(a) for a in testing):
                best, best_load = base.config, base_load
        # the level tests read the baseline's rate: it has at least the runs of the group furthest along
        pace = max((a.seen.runs for a in self._paced), default=0)
        if (
            not self.answers.levels()
        ):  # enough to tell whether the level test is asked, if it may be
            pace = min(pace, 4 * self.s.first_look) if self.answers.may_level() else 0
        if base_planned < min(pace, self.answers.cap()) and base_planned < best_load:
            best, best_load = base.config, base_planned
        for arm in open_arms:
            queued = count(arm.state.config)
            have = arm.state.evidence.runs + queued
            attempts = arm.state.evidence.attempts + queued
            if have < self._target(arm) and attempts < self.s.max_attempts and have < best_load:
                best, best_load = arm.state.config, have
        return best

    def _target(self, arm: Arm) -> int:
        if arm.role in (Role.GROUP, Role.PROBE):
            # the search and probes take no looks: they run until their test answers, or to its cap
            return self.s.max_trials
        return self.claims.schedule.target(arm.state.looks_done)

    # -- the review ----------------------------------------------------------------------

    def _start(self) -> None:
        self._started = True
        for changes in self._initial:
            self.tree.add(changes, Role.GROUP, None, offset=0)

    def _review(self) -> None:
        s = self.s
        if not self._started:
            base = self.baseline.evidence
            if never_failed(base, s):
                self._cannot_reproduce = True
            if not calibrated(base, s):
                return
            self._start()
        # to a fixed point, so that an observation which changes nothing it reads can skip it
        shape = None
        while shape != (shape := self._shape()):
            self.claims.take_looks()
            for arm in list(self.arms):
                self._search_rules(arm)
            for arm in self.arms:
                if arm.open and self.claims.out_of_budget(arm):
                    self.claims.close_out(arm)
            self.reductions.advance()
            self.clearing.clear_the_rest(self.candidates)
            self.reductions.combine_reducers()
        self._stop_rule = self._search_rates()
        self._open_arms = [a for a in self.arms if a.open]  # arms open or close only in a review
        self._paced = [a for a in self._open_arms if self._asks_level(a)]

    def _search_rates(self) -> tuple[float, float]:
        """What the search's tests read of the baseline, rounded so that a baseline run changes them
        (and wakes the review) only now and then: the wide test's alternative, the level test's rate."""
        return self.answers.wide_above(), math.floor(100 * self.answers.baseline_rate()) / 100

    def _asks_level(self, arm: Arm) -> bool:
        """A search arm that failed, so that its level test (far below the baseline?) reads the
        baseline's rate: the baseline keeps pace with it, its runs shared by every such test."""
        return arm.role is Role.GROUP and not arm.recheck and arm.seen.failed_runs > 0

    def _shape(self) -> tuple:
        """What the review's rules can change: arms, their roles, answers and verdicts, the reductions."""
        r = self.reductions
        return (
            len(self.arms),
            len(r.under_way),
            r.reducers_tried,
            r.reducer_probe,
            sum(a.partner is not None for a in self.arms),
            tuple(
                (a.role, a.answer, a.state.verdict, a.state.looks_done, a.recheck, len(a.children))
                for a in self.arms
            ),
        )

    def _search_rules(self, arm: Arm) -> None:
        """What the search's answer for an arm leads to, by the arm's role."""
        status = self.answers.status(arm)
        if status == UNTESTABLE and arm.open:
            arm.answer = status
            arm.closed = f"untestable: none of {arm.state.evidence.attempts} trials ran cleanly"
            decide(arm.state, Verdict.INCONCLUSIVE)
            if len(arm.changes) == 1 and arm.role is Role.GROUP:
                arm.role = Role.SINGLE  # a breaker: reported with its log
            elif arm.role in (Role.GROUP, Role.CLEAR):
                self.tree.split(arm)
            return
        if arm.role is Role.PROBE:
            self.reductions.probe_rules(arm, status)
            return
        if arm.recheck and arm.open:
            self.reductions.recheck_rules(arm, status)
            return
        if arm.role is Role.GROUP and arm.open:
            self._search_group_rules(arm, status)
        elif arm.role is Role.CLEAR:
            self.clearing.rules(arm, status)

    def _search_group_rules(self, arm: Arm, status: str) -> None:
        """Shown above zero_rate: no eliminator inside, closed; shown below: split, or a single
        change's own claim arm."""
        ev = arm.state.evidence
        if status == "fails":
            arm.answer, arm.closed = (
                status,
                (
                    f"search: failed in {ev.failed_runs} of {ev.runs} runs, rate above zero_rate: holds no eliminator"
                ),
            )
            decide(arm.state, Verdict.INCONCLUSIVE)
        elif status == "stops" and len(arm.changes) == 1:
            # a candidate eliminator, or a reducer far below the baseline: its own arm decides
            arm.lowered = self.answers.levels() and self.answers.level(arm) == "lower"
            self.tree.promote(arm, Role.SINGLE)
        elif status == "stops":
            arm.answer, arm.closed = (
                status,
                f"split: rate shown below zero_rate ({ev.failed_runs} of {ev.runs} runs failed)",
            )
            decide(arm.state, Verdict.INCONCLUSIVE)
            self.tree.split(arm)
        elif status == LOWER:
            arm.answer, arm.closed = (
                status,
                f"split: rate far below the baseline's ({ev.failed_runs} of {ev.runs} runs failed): "
                "a reducer inside",
            )
            decide(arm.state, Verdict.INCONCLUSIVE)
            parent = self.arms[arm.parent] if arm.parent is not None else None
            if parent is not None and parent.answer == LOWER:
                for sibling in parent.children:  # the reducer found here explains the parent's rate
                    self.arms[sibling].awaits_level = False
            self.tree.split(arm)

    # -- results -------------------------------------------------------------------------

    def result(self) -> GroupResult:
        difference, equivalence = self.claims.holm()
        return build_result(
            SearchState(
                settings=self.settings,
                baseline=self.baseline,
                arms=tuple(self.arms),
                candidates=tuple(self.candidates),
                combinations=tuple(self.combinations),
                variables=self.variables,
                stopped=frozenset(a.id for a in self.arms if self.answers.status(a) == "stops"),
                difference=difference,
                equivalence=equivalence,
                cannot_reproduce=self._cannot_reproduce,
                finished=self.finished(),
            )
        )

    def in_progress(self) -> list[tuple[str, int, int, str | None]]:
        """Rows for a live display: the baseline, the open arms, the claims decided so far (a single
        change's, a combination's, a clearing group's), and one summary row of every decided arm."""
        rows: list[tuple[str, int, int, str | None]] = [
            ("baseline", self.baseline.evidence.runs, self.baseline.evidence.failed_runs, None)
        ]
        for arm in self.arms:
            if arm.open:
                rows.append(
                    (
                        self.arm_label(arm),
                        arm.state.evidence.runs,
                        arm.state.evidence.failed_runs,
                        None,
                    )
                )
        decided = [a for a in self.arms if not a.open]
        for arm in decided:  # the claims decided so far: few, and what a reader waits for
            if arm.role in (Role.SINGLE, Role.COMBINATION, Role.CLEAR) and not arm.closed:
                verdict = arm.state.verdict.value if arm.state.verdict else None
                rows.append(
                    (
                        self.arm_label(arm),
                        arm.state.evidence.runs,
                        arm.state.evidence.failed_runs,
                        verdict,
                    )
                )
        counts: dict[str, int] = {}
        for arm in decided:
            verdict = arm.state.verdict
            key = arm.closed.split(":")[0] if arm.closed else verdict.value if verdict else "open"
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none yet"
        runs = sum(a.state.evidence.runs for a in decided)
        failed = sum(a.state.evidence.failed_runs for a in decided)
        rows.append((f"{len(decided)} arms decided: {summary}", runs, failed, "done"))
        return rows

    @staticmethod
    def arm_label(arm: Arm) -> str:
        if len(arm.changes) == 1:
            return "{}={}".format(*arm.changes[0])
        head = ", ".join(f"{f}={v}" for f, v in arm.changes[:2])
        return f"G{arm.id} {arm.role.value} of {len(arm.changes)} ({head}, ...)"
