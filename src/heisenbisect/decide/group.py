"""Group screening: hundreds of candidate changes searched by noisy adaptive group testing.

Groups are for search; claims are made by sequential arms exactly as in `decide.screening`,
by the rules of `decide.sequential` (looks on a geometric schedule, weighted Bonferroni over
looks, exact Clopper-Pearson bound for a zero, Holm across the family, the run as the unit).
The arms and the result are records of `decide.group_records`; `decide.group_result` builds
the result. docs/group-screening.md has the reasoning and the literature. In short:

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
  a set it stands on asked again on fresh runs before refining it further, a budget of probes) to a smallest stopping combination, which a sequential arm confirms on
  fresh runs, and the rest goes into a new clearing group. A search group that stops while every half keeps
  failing is re-checked on fresh runs and reduced the same way, and so are the single changes that reduce
  when none eliminates. A clearing group lower than the baseline is first probed with the single changes
  that reduce without stopping: an OR pair the search separated stops together (`_partner_wait`).
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
from typing import Mapping

from heisenbisect.decide import stats
from heisenbisect.decide.combinations import Change, Reduction, partition
from heisenbisect.decide.group_records import CLAIMS, PARTNER, SET_ASIDE, UNTESTABLE, Arm, GroupResult, GroupSettings, Role
from heisenbisect.decide.group_result import SearchState, build_result
from heisenbisect.decide.sequential import (
    ArmState, ZeroTest, calibrated, calibration_wants, claim_difference, close_out, decide, equivalence_pvalue,
    far_below, look_at_difference, never_failed, out_of_budget, rate_floor, spend, zero_bound,
)
from heisenbisect.decide.strategy import fill_slots
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict


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


class GroupScreening:
    """The group-screening `Strategy`: pure, deterministic given the order of observations.

    ``variables``: each env factor's variable, to tell ``not_applied`` (`decide.reach`).
    """

    def __init__(
        self, baseline: Config, candidates: list[Change], settings: GroupSettings, variables: Mapping[str, str] | None = None
    ):
        self.settings = settings
        self.variables = dict(variables or {})
        self.s = settings.screening
        self.schedule = self.s.schedule  # computed once: read per trial
        self.baseline = ArmState(baseline)
        self.candidates = list(candidates)
        self.arms: list[Arm] = []
        self._by_config: dict[Config, Arm] = {}
        self._cannot_reproduce = False
        self._started = False
        self.reductions: list[tuple[int, Reduction]] = []  # (arm the search started from, its ddmin)
        self.combinations: list[tuple[int, str]] = []  # (combination arm, where it came from)
        self._reducer_probe: int | None = None
        self._reducers_tried = False
        self._partners: dict[int, int] = {}  # clearing group lower than the baseline -> its partner probe (-1: none)
        self._stop_rule = 0  # clean_runs_needed() at the last review
        self._open_arms: list[Arm] = []  # as of the last review
        size = settings.group_size or hwang_group_size(len(candidates), settings.expected_effects)
        self.group_size = size
        self._initial = initial_groups(self.candidates, size)

    # -- Strategy ------------------------------------------------------------------------

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config == self.baseline.config:
            self.baseline.evidence.add(outcome)
            if self._started and self._stop_rule == self._wide_above() and not any(
                self._look_due(a) for a in self._open_arms if self._looks_at(a)
            ):
                return  # nothing the review reads has changed: no look due, the same stop rule
        else:
            arm = self._by_config.get(config)
            if arm is None:
                return  # a config of an older spec revision, or of a search not taken on replay
            before = self.status(arm)
            arm.state.evidence.add(outcome)
            if arm.search_evidence is not None:
                arm.search_evidence.add(outcome)
            if outcome.status is not TrialStatus.OK:
                arm.problem = (outcome.log_path, outcome.detail)
            quiet = not arm.open or not (self._looks_at(arm) and self._look_due(arm)) and not self._out_of_budget(arm)
            if self._started and quiet and self.status(arm) == before:
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
        return self._started and not self._open_arms and not self.reductions

    # -- scheduling ----------------------------------------------------------------------

    def _next(self, planned: Mapping[Config, int]) -> Config | None:
        base = self.baseline
        base_planned = base.evidence.runs + (planned.get(base.config, 0) if planned else 0)
        if not self._started:
            if self._cannot_reproduce or not calibration_wants(base.evidence, planned.get(base.config, 0), self.s):
                return None
            return base.config
        open_arms = self._open_arms
        if not open_arms:
            return None
        count = (lambda config: planned.get(config, 0)) if planned else (lambda config: 0)  # configs hash slowly
        # fewest runs first; the baseline counts its runs since the newest open arm was added, so
        # each arm's looks compare with baseline runs interleaved with its own; the search and
        # its probes compare with no baseline runs, so they do not ask for any
        testing = [a for a in open_arms if self._looks_at(a)]
        best, best_load = None, math.inf
        if testing:
            base_load = min(base_planned - a.offset for a in testing)
            if base_planned < max(a.offset + self._target(a) for a in testing):
                best, best_load = base.config, base_load
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
        return self.schedule.target(arm.state.looks_done)

    def baseline_rate(self) -> float:
        ev = self.baseline.evidence
        return ev.failed_runs / ev.runs if ev.runs else 0.5

    def _baseline_floor(self) -> float:
        """The baseline's exact lower bound: what "far below the baseline" is measured against. Its point
        estimate after calibration can run high by chance (5 of 15 runs for a true 15%), which once made an
        inert single look far below it (1 failed of 31) and gave it a claim arm of its own."""
        ev = self.baseline.evidence
        return rate_floor(ev.failed_runs, ev.runs, self.s.confidence)

    def _strict_above(self) -> float:
        """The strict test's alternative: twice zero_rate, so that a change failing in 8% of runs at a
        zero_rate of 5% is not taken for one that stops the failure (nor one failing in 2% for one that does not)."""
        zero = self.s.zero_rate
        return min(2.0 * zero, (1.0 + zero) / 2.0)

    def _wide_above(self) -> float:
        """A search group's alternative: the baseline's rate (a group holding nothing), at its exact
        lower bound so that an inert group is not taken to stop because the calibration ran high,
        floored to a percent so that a baseline run changes it (and wakes the review) only now and then."""
        return max(self._strict_above(), min(math.floor(100 * self._baseline_floor()) / 100, 0.99))

    def zero_test(self, arm: Arm) -> ZeroTest:
        """The search's test of an arm: rate below zero_rate, or above it (`sequential.ZeroTest`).

        A rate inside the indifference zone (between zero_rate and the alternative: an OR pair's
        member alone at 7.8% under a 15% baseline) keeps the test undecided for about a thousand
        runs, so every test is capped at twice the clean runs that show a zero at miss_rate (180 at
        zero_rate 0.05): a set with no failure stops long before, and one near zero mostly does."""
        cap = self._cap()
        if not self._strict(arm):
            return ZeroTest(self.s.zero_rate, self._wide_above(), self.settings.miss_rate, cap)
        # a single change that stops only earns its own claim arm; a set that stops starts or steers a reduction
        single = arm.role is Role.GROUP and len(arm.changes) == 1 and not arm.recheck
        stop_miss = self.settings.miss_rate if single else self.settings.stop_miss_rate
        test = ZeroTest(self.s.zero_rate, self._strict_above(), self.settings.miss_rate, cap, stop_miss)
        if test.answer(0, cap) != "stops":  # max_trials leaves no room for the stricter stop: the plain one
            test = ZeroTest(self.s.zero_rate, self._strict_above(), self.settings.miss_rate, cap)
        return test

    def _cap(self) -> int:
        """Twice the clean runs that show a zero at miss_rate (180 at zero_rate 0.05), within max_trials."""
        zero_runs = math.ceil(math.log(self.settings.miss_rate) / math.log(1.0 - self.s.zero_rate))
        return min(self.s.max_trials, 2 * zero_runs)

    @staticmethod
    def _strict(arm: Arm) -> bool:
        """Arms whose stop is taken as a fact (a probe's answer, a masking, a candidate eliminator),
        not as a reason to look closer by splitting."""
        return arm.role in (Role.PROBE, Role.CLEAR) or arm.recheck or arm.role is Role.GROUP and len(arm.changes) == 1

    # -- the search ----------------------------------------------------------------------

    def _start(self) -> None:
        self._started = True
        for changes in self._initial:
            self._add(changes, Role.GROUP, None, offset=0)

    def _add(self, changes: tuple[Change, ...], role: Role, parent: int | None, offset: int | None = None) -> Arm:
        """The arm of ``changes``, created if new; an existing one takes the stronger role."""
        config = Config(changes=tuple(sorted(changes)))
        arm = self._by_config.get(config)
        if arm is None:
            base_runs = self.baseline.evidence.runs if offset is None else offset
            arm = Arm(len(self.arms), tuple(changes), role, ArmState(config), base_runs, parent)
            self.arms.append(arm)
            self._by_config[config] = arm
        elif role is Role.COMBINATION or (arm.role in (Role.PROBE, Role.GROUP) and role in (Role.SINGLE, Role.CLEAR)):
            self._promote(arm, role)  # a claim is wanted now: the arm runs on to its own verdict
        if parent is not None and arm.id not in self.arms[parent].children and arm.id != parent:
            self.arms[parent].children.append(arm.id)
            if arm.parent is None:
                arm.parent = parent
        return arm

    def _promote(self, arm: Arm, role: Role) -> None:
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
        floor, miss = self._baseline_floor(), self.settings.miss_rate
        if single and ev.failed_runs and far_below(ev.failed_runs, ev.runs, floor, self.s.min_reduction, miss):
            return "stops"  # a reducer failing far less often than the baseline: its own arm decides what it does
        if self._strict(arm):
            answer = self._scan(arm)
        else:
            answer = self.zero_test(arm).answer(ev.failed_runs, ev.runs)
        if answer == "fails" and single and rate_floor(ev.failed_runs, ev.runs, 1.0 - miss) < (1.0 - self.s.min_reduction) * floor:
            # above zero_rate, and perhaps far below the baseline (eager decoding under sharing, 10% against 35%):
            # not closed while that is open, up to the cap, where the failures so far decide
            answer = "undecided" if ev.runs >= self.zero_test(arm).cap else "pending"
        if answer == "undecided":  # neither shown within the cap: a rate near zero_rate
            low = ev.failed_runs < ev.runs * self.baseline_rate() * (1.0 - self.s.min_reduction)
            return "stops" if single and low else "fails"  # a single far below the baseline: its own arm decides
        return answer

    def _scan(self, arm: Arm) -> str:
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
                arm.stop_checked, arm.scan_from, runs, failed, answer = True, arm.scan_from + runs, 0, 0, "pending"
        arm.scan = (runs, failed, answer)
        return answer

    def _review(self) -> None:
        s = self.s
        if not self._started:
            base = self.baseline.evidence
            if never_failed(base, s):
                self._cannot_reproduce = True
            if not calibrated(base, s):
                return
            self._start()
        # to a fixed point, so that an observation which changes nothing the review reads can skip it
        shape = None
        while shape != (shape := self._shape()):
            self._take_looks()
            for arm in list(self.arms):
                self._search_rules(arm)
            for arm in self.arms:
                if arm.open and self._out_of_budget(arm):
                    self._close_out(arm)
            self._advance_reductions()
            self._clear_the_rest()
            self._maybe_combine_reducers()
        self._stop_rule = self._wide_above()
        self._open_arms = [a for a in self.arms if a.open]  # arms open or close only in a review

    def _shape(self) -> tuple:
        """What the review's rules can change: arms, their roles, answers and verdicts, the reductions."""
        return (
            len(self.arms), len(self.reductions), self._reducers_tried, self._reducer_probe, len(self._partners),
            tuple((a.role, a.answer, a.state.verdict, a.state.looks_done, a.recheck, len(a.children)) for a in self.arms),
        )

    def _take_looks(self) -> None:
        """Every look that is due, then Holm. An arm promoted with many runs takes all its due looks
        first: the weighted Bonferroni bound over looks holds for the minimum over all of them, and
        deciding at its first look would close it with the weakest p-value, which a family grown
        later could withdraw."""
        looked = False
        for arm in self.arms:
            while arm.open and self._looks_at(arm) and self._look_if_due(arm):
                looked = True
        if looked:
            self._apply_holm()

    @staticmethod
    def _looks_at(arm: Arm) -> bool:
        """Arms with sequential tests: the claims and the clearing groups (the search only counts clean runs)."""
        return arm.role in (Role.SINGLE, Role.COMBINATION, Role.CLEAR)

    def _search_rules(self, arm: Arm) -> None:
        status = self.status(arm)
        if status == UNTESTABLE and arm.open:
            arm.answer = status
            arm.closed = f"untestable: none of {arm.state.evidence.attempts} trials ran cleanly"
            decide(arm.state, Verdict.INCONCLUSIVE)
            if len(arm.changes) == 1 and arm.role is Role.GROUP:
                arm.role = Role.SINGLE  # a breaker: reported with its log
            elif arm.role in (Role.GROUP, Role.CLEAR):
                self._split(arm)
            return
        if arm.role is Role.PROBE:
            if arm.open and status in ("fails", "stops"):
                arm.answer, arm.closed = status, f"probe: {status}"
                if arm.asked_again:
                    runs, failed, _ = arm.scan
                    arm.closed = f"probe: stopped, then {status} when asked again ({failed} of {runs} fresh runs failed)"
                decide(arm.state, Verdict.INCONCLUSIVE)
            return
        if arm.recheck and arm.open:
            if status in ("fails", "stops"):
                arm.recheck = False
                runs, failed, _ = arm.scan
                arm.answer, arm.closed = status, f"split, then stopped on a second look ({failed} of {runs} fresh runs failed)"
                decide(arm.state, Verdict.INCONCLUSIVE)
                if status == "fails":
                    arm.closed = f"split, then failed on a second look ({failed} of {runs} fresh runs)"
                else:
                    arm.masking = True
                    self.reductions.append((arm.id, self._reduction(arm.changes)))
            return
        if arm.role is Role.GROUP and arm.open:
            self._search_group_rules(arm, status)
        elif arm.role is Role.CLEAR and not self._split_as_clear(arm) and not arm.answer:
            if status == "stops":
                arm.answer, arm.closed = status, f"stopped the failure: reduced to a smallest stopping subset (no failed run in {arm.state.evidence.runs})"
                decide(arm.state, Verdict.INCONCLUSIVE)
                self.reductions.append((arm.id, self._reduction(arm.changes)))
            elif arm.state.verdict is Verdict.REDUCES and self._partner_wait(arm):
                pass  # a single reducer and a change inside may be an OR pair: asked before any split
            elif arm.state.verdict in (Verdict.REDUCES, Verdict.INCREASES):
                self._split(arm)  # a change inside shifts the rate: find it

    def _search_group_rules(self, arm: Arm, status: str) -> None:
        """The Z channel: one failed run proves no eliminator inside; m clean runs say one is (split)."""
        ev = arm.state.evidence
        if status == "fails":
            arm.answer, arm.closed = status, (
                f"search: failed in {ev.failed_runs} of {ev.runs} runs, rate above zero_rate: holds no eliminator"
            )
            decide(arm.state, Verdict.INCONCLUSIVE)
        elif status == "stops" and len(arm.changes) == 1:
            self._promote(arm, Role.SINGLE)  # a candidate eliminator: its own arm decides
        elif status == "stops":
            arm.answer, arm.closed = status, f"split: rate shown below zero_rate ({ev.failed_runs} of {ev.runs} runs failed)"
            decide(arm.state, Verdict.INCONCLUSIVE)
            self._split(arm)

    def _split_as_clear(self, arm: Arm) -> bool:
        """Its halves are clearing groups or single arms. A search group taken up again as a clearing group
        (a half of a larger one) has the search's halves as children until then, and must still split:
        once, it sat `reduces` with a near-zero reducer and seven inert flags inside, all inconclusive."""
        return bool(arm.children) and all(self.arms[c].role in (Role.CLEAR, Role.SINGLE) for c in arm.children)

    def _partner_wait(self, group: Arm) -> bool:
        """A clearing group lower than the baseline beside single changes that reduce the failure without
        stopping it: one of them and a change in the group may be an OR pair whose members the search
        separated (one reached its own arm through a breaker's splits, the other was left). One probe of
        them together asks first: if it stops, a reduction finds the pair (about 2 000 runs at a 15%
        baseline) instead of halving the group level by level, each half an equivalence test (8 000 to
        9 000 runs, and the group's other changes inconclusive when a level runs out of looks).
        True while the probe is pending, or once it stopped and its reduction took the group's changes."""
        probe_id = self._partners.get(group.id)
        if probe_id is None:
            partial = self._partial_reducers(group)
            known = any(set(a.changes) <= set(partial) and self.status(a) == "stops" for a in self.arms)
            probe_id = self._add(partial + group.changes, Role.PROBE, None).id if partial and not known else -1
            self._partners[group.id] = probe_id  # -1: none to ask (or the reducers stop together already)
        if probe_id < 0:
            return False
        status = self.status(self.arms[probe_id])
        if status == "stops" and group.answer != PARTNER:
            group.answer, group.closed = PARTNER, (
                f"lower than the baseline; with the single reducers it stopped the failure (probe G{probe_id}): "
                "reduced to a smallest stopping combination"
            )
            self.reductions.append((probe_id, self._reduction(self.arms[probe_id].changes)))
        return status in ("pending", "stops")

    def _partial_reducers(self, group: Arm) -> tuple[Change, ...]:
        """Single changes (one per factor, none of the group's factors) that failed, less often than the
        baseline by half the least reduction of interest or more, and that the strict test does not show
        to stop; a single still running counts (an OR member alone needs ~960 runs to be claimed `reduces`
        at a 15% baseline, while the group's split would already run)."""
        test = ZeroTest(self.s.zero_rate, self._strict_above(), self.settings.miss_rate, self._cap())
        factors = {c[0] for c in group.changes}
        found: list[Change] = []
        for arm in self.arms:
            if arm.role is not Role.SINGLE or arm.answer == UNTESTABLE or arm.changes[0][0] in factors:
                continue
            ev = arm.seen
            if arm.state.verdict in (Verdict.INCREASES, Verdict.ELIMINATES) or not ev.failed_runs:
                continue  # no_effect stays: an OR member alone keeps ~52% of the failure, inside the margin
            low = ev.failed_runs / ev.runs <= self.baseline_rate() * (1.0 - self.s.min_reduction / 2)
            if low and test.answer(ev.failed_runs, ev.runs) != "stops":
                found.append(arm.changes[0])
                factors.add(arm.changes[0][0])
        return tuple(found)

    def _split(self, arm: Arm) -> None:
        for half in partition(arm.changes, 2):
            role = arm.role if arm.role is Role.GROUP or len(half) > 1 else Role.SINGLE
            self._add(half, role, arm.id)

    def _reduction(self, changes: tuple[Change, ...]) -> Reduction:
        return Reduction(changes, budget=self.settings.reduction_probes)

    def _clear_the_rest(self) -> None:
        """Once the search is quiet, every change it did not give an arm of its own goes into one
        clearing group (one per level rank): a single equivalence test clears them all."""
        if self.reductions or any(a.open and (a.role is Role.GROUP or a.recheck) for a in self.arms):
            return
        covered = set()
        for arm in self.arms:
            if arm.role is Role.SINGLE or (arm.role is Role.CLEAR and arm.answer not in SET_ASIDE):
                covered.update(arm.changes)
        rest = [c for c in self.candidates if c not in covered]
        for changes in initial_groups(rest, len(rest)) if rest else []:
            self._add(changes, Role.CLEAR if len(changes) > 1 else Role.SINGLE, None)

    def _advance_reductions(self) -> None:
        self._detect_masking()
        still = []
        for origin, reduction in self.reductions:
            while (probe := reduction.probe()) is not None:
                if reduction.asking_again:
                    status, known = self._ask_again(probe), ""
                else:
                    known = self._known(probe)
                    status = known or self.status(self._add(probe, Role.PROBE, None))
                if status == "pending":
                    break
                reduction.record(status == "stops", ran=not known)
            if reduction.probe() is None:
                self._finish_reduction(origin, reduction)
            else:
                still.append((origin, reduction))
        self.reductions = still

    def _ask_again(self, changes: tuple[Change, ...]) -> str:
        """The probe that showed ``changes`` to stop, reopened once to answer again from fresh runs only
        (`combinations.Reduction.asking_again`); an arm of another role keeps its answer."""
        arm = self._by_config[Config(changes=tuple(sorted(changes)))]
        if arm.role is Role.PROBE and not arm.asked_again:
            arm.asked_again = arm.stop_checked = True
            arm.scan, arm.scan_from = (0, 0, "pending"), len(arm.seen.fractions)
            arm.answer, arm.closed, arm.state.verdict, arm.state.decided_at = "", "", None, None
        return self.status(arm)

    def _known(self, probe: tuple[Change, ...]) -> str:
        """A probe's answer that earlier arms already imply under monotonicity: a superset of a set
        shown to stop (by the strict test) stops, a subset of a set shown above zero_rate fails. The
        probe's own arm is not one of them: its answer is the probe run, and counts against the budget
        (it once answered every probe as implied, so no reduction ever spent a probe of its budget)."""
        changes = set(probe)
        for arm in self.arms:
            if arm.role is Role.PROBE and set(arm.changes) == changes:
                continue
            if arm.answer == "stops" and self._strict(arm) and set(arm.changes) <= changes:
                return "stops"
            if arm.answer == "fails" and changes <= set(arm.changes):
                return "fails"
        return ""

    def _detect_masking(self) -> None:
        """A group that stopped the failure while every half keeps failing: search its combination."""
        for arm in self.arms:
            if arm.masking or arm.recheck or arm.role is not Role.GROUP or not arm.children or self.status(arm) != "stops":
                continue
            if any(self.arms[c].role in (Role.SINGLE, Role.COMBINATION) and self.arms[c].answer != UNTESTABLE for c in arm.children):
                continue  # a half's change has an arm of its own: it, not masking, explains the stop
            statuses = [self.status(self.arms[c]) for c in arm.children]
            if all(s in ("fails", UNTESTABLE) for s in statuses) and statuses.count("fails") >= 2 and not arm.open:
                # first a second look by the strict test on fresh runs, so that a chance run of clean runs
                # (a group holding one OR member at 7.8% looks clean now and then) is not taken for masking
                arm.recheck = True
                arm.scan, arm.scan_from = (0, 0, "pending"), len(arm.seen.fractions)
                arm.answer, arm.closed, arm.state.verdict, arm.state.decided_at = "", "", None, None

    def _maybe_combine_reducers(self) -> None:
        """Several single changes reduce the failure: do they stop it together (a second fix, or the only one)?"""
        if self._reducers_tried or any(a.open for a in self.arms) or self.reductions:
            return
        if self._reducer_probe is not None:
            self._reducers_tried = True
            probe = self.arms[self._reducer_probe]
            if self.status(probe) == "stops":
                self.reductions.append((probe.id, self._reduction(probe.changes)))
                self._advance_reductions()
            return
        singles = [a for a in self.arms if a.role is Role.SINGLE]
        reducers = [a.changes[0] for a in singles if a.state.verdict is Verdict.REDUCES]
        factors = {c[0] for c in reducers}
        if len(reducers) < 2 or len(factors) < len(reducers):
            self._reducers_tried = True
            return
        self._reducer_probe = self._add(tuple(reducers), Role.PROBE, None).id

    def _finish_reduction(self, origin: int, reduction: Reduction) -> None:
        changes = reduction.current
        group = next((g for g, probe in self._partners.items() if probe == origin), None)
        if group is not None and not set(changes) & set(self.arms[group].changes):
            # the stop came from the single reducers alone, not from a partner in the group: it splits as before
            self._partners[group] = -1
            self.arms[group].answer = self.arms[group].closed = ""
        for change in changes:
            self._add((change,), Role.SINGLE, None)
        if len(changes) > 1:
            if self.arms[origin].role is Role.CLEAR:
                self.arms[origin].masking = True  # it stopped the failure, and no single change of it does
            arm = self._add(changes, Role.COMBINATION, None)
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
        arm = self.arms[origin]
        group = next((g for g, probe in self._partners.items() if probe == origin), None)
        if group is not None:
            return (f"group G{group} of the changes the search left was lower than the baseline and, with the changes "
                    "that reduce the failure alone, stopped it")
        if arm.role is Role.CLEAR:
            return f"group G{arm.id} of the changes the search left stopped the failure; none of them alone does"
        if arm.masking:
            return f"group G{arm.id} stopped the failure while none of its halves did"
        return "the changes that reduce the failure, together"

    # -- deciding (decide.sequential's rules, each arm with its own baseline window) ------

    def _look_due(self, arm: Arm) -> bool:
        look = self.schedule.next(arm.state.looks_done)
        if look is None:
            return False
        return arm.state.evidence.runs >= look.size and self.baseline.evidence.runs >= arm.offset + look.size

    def _look_pending(self, arm: Arm) -> bool:
        """The arm has the runs for its next look and waits for the baseline's: it decides after it,
        not on an earlier, weaker look (an arm promoted from the search arrives with many runs)."""
        look = self.schedule.next(arm.state.looks_done)
        return look is not None and arm.state.evidence.runs >= look.size

    def _look_if_due(self, arm: Arm) -> bool:
        state = arm.state
        look = self.schedule.next(state.looks_done)
        if look is None or not self._look_due(arm):
            return False
        arm_y = state.evidence.array()[: look.size]
        base_y = self.baseline.evidence.array()[arm.offset : arm.offset + look.size]
        look_at_difference(state, arm_y, base_y, look.weight, stream=arm.id)
        equivalence = equivalence_pvalue(arm_y, base_y, self.s.min_reduction)
        if arm.role is Role.CLEAR:
            arm.equivalence_p = spend(arm.equivalence_p, equivalence, look.weight)
        elif equivalence <= look.level(self.s.alpha):
            decide(state, Verdict.NO_EFFECT)  # the one-at-a-time rule for a single arm
        return True

    def family(self) -> tuple[list[Arm], list[Arm]]:
        """The Holm family: the difference tests of single changes and combinations (the claims
        about what a change does) and the equivalence tests of clearing groups (the claims that
        clear their members). The search groups and probes only steer the search: no claims; nor
        do breakers, which never ran."""
        claims = [a for a in self.arms if a.role in (Role.SINGLE, Role.COMBINATION) and a.answer != UNTESTABLE]
        return claims, [a for a in self.arms if a.role is Role.CLEAR]

    def _holm(self) -> tuple[dict[int, float], dict[int, float]]:
        tested, groups = self.family()
        adjusted = stats.holm_adjust([a.state.sequential_p for a in tested] + [a.equivalence_p for a in groups])
        difference = {a.id: p for a, p in zip(tested, adjusted)}
        return difference, {a.id: p for a, p in zip(groups, adjusted[len(tested) :])}

    def _apply_holm(self) -> None:
        difference, equivalence = self._holm()
        for arm in self.arms:
            state = arm.state
            if self._withdrawn(arm, difference, equivalence):
                state.verdict, state.decided_at = None, None  # the grown family needs more evidence: run on
            revisable = state.verdict is Verdict.INCONCLUSIVE and not state.note and not arm.closed
            if state.verdict is not None and not revisable or not self._looks_at(arm) or self._look_pending(arm):
                continue
            # a clearing group's difference steers the search at the arm's own sequential level
            p = difference[arm.id] if arm.id in difference else state.sequential_p
            if p <= self.s.alpha:
                self._claim(arm)
            elif equivalence.get(arm.id, 1.0) <= self.s.alpha and state.verdict is None:
                decide(state, Verdict.NO_EFFECT)

    def _claim(self, arm: Arm) -> None:
        """`sequential.claim_difference` on the arm's fresh runs; ``eliminates`` also needs every run of its
        config, the search's before the promotion included, to bound the rate below zero_rate. A near-zero
        reducer at 8% that failed 2 of its 18 search runs then showed 0 of 60 fresh (a 0.7% chance) and
        was claimed to eliminate; an extra condition on a claim can only make it rarer, never wrong."""
        state = arm.state
        claim_difference(state, self.s)
        if state.verdict is Verdict.ELIMINATES and (
            arm.role is Role.CLEAR or zero_bound(arm.seen, self.s.confidence) >= self.s.zero_rate
        ):
            # a clearing group stops the failure only by the strict test (108 clean runs at 0.3%), which
            # starts its reduction: read from 0 of 60 runs, an 8% reducer's group once sent ddmin after a
            # 126-change set that does not stop (51 184 trials)
            state.verdict, state.decided_at, state.pending_zero = None, None, True  # runs on to its next look

    def _withdrawn(self, arm: Arm, difference: dict[int, float], equivalence: dict[int, float]) -> bool:
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

    def _out_of_budget(self, arm: Arm) -> bool:
        return out_of_budget(arm.state, self.schedule, self.s)

    def _close_out(self, arm: Arm) -> None:
        close_out(arm.state, self.schedule, self.s, short_of_zero=arm.state.pending_zero)

    # -- results -------------------------------------------------------------------------

    def result(self) -> GroupResult:
        difference, equivalence = self._holm()
        return build_result(
            SearchState(
                settings=self.settings,
                baseline=self.baseline,
                arms=tuple(self.arms),
                candidates=tuple(self.candidates),
                combinations=tuple(self.combinations),
                variables=self.variables,
                stopped=frozenset(a.id for a in self.arms if self.status(a) == "stops"),
                difference=difference,
                equivalence=equivalence,
                cannot_reproduce=self._cannot_reproduce,
                finished=self.finished(),
            )
        )

    def in_progress(self) -> list[tuple[str, int, int, str | None]]:
        """Rows for a live display: the baseline, the open arms, and one summary row."""
        rows = [("baseline", self.baseline.evidence.runs, self.baseline.evidence.failed_runs, None)]
        for arm in self.arms:
            if arm.open:
                rows.append((self.arm_label(arm), arm.state.evidence.runs, arm.state.evidence.failed_runs, None))
        decided = [a for a in self.arms if not a.open]
        counts: dict[str, int] = {}
        for arm in decided:
            key = arm.closed.split(":")[0] if arm.closed else arm.state.verdict.value
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
