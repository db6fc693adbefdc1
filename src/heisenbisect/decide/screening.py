"""Screening: which single-factor changes drive the failure to zero, suppress it, or do nothing.

Protocol (all arms against one shared baseline, runs as the unit of evidence; the sequential
rules of steps 2 to 5 are `decide.sequential`'s, shared with group screening and amplify):

1. Calibrate: run the baseline until it has ``first_look`` runs and at least one failed
   run; if it never fails within ``max_trials``, every arm is ``cannot_reproduce``.
2. Each arm is looked at when its run count reaches a point of a fixed geometric
   schedule (first_look, 2x, 4x, ... max_trials). At look k the arm's per-run failure
   fractions are compared with the baseline's (exact permutation test, its t
   approximation for large samples). A weighted Bonferroni split of alpha over the looks,
   weight w_k proportional to the look's run count (late looks, where small effects
   become visible, get most), makes min_k p_k / w_k a valid p-value whenever the arm stops.
3. Holm across arms on those p-values. A significantly lower arm with no failed run
   ``eliminates`` once the one-sided Clopper-Pearson bound on its run-failure rate is
   below ``zero_rate`` (no look correction is needed for that bound: zero failures at a
   later look implies zero at the first look where the bound was already below); with
   failures it ``reduces``; significantly higher ``increases``.
4. ``no_effect`` is an equivalence claim (two one-sided Welch tests at level alpha w_k):
   the arm keeps its rate within [1 - min_reduction, 1 / (1 - min_reduction)] x baseline.
5. Out of budget undecided: ``inconclusive``; an arm that never failed but has too few runs
   to bound its rate below ``zero_rate`` is ``inconclusive`` too, with the runs it would need.
6. An env factor's arm that is ``no_effect`` or ``inconclusive`` while no Python process of
   its runs ever read its variable is ``not_applied`` (`decide.reach` has the rule).
7. Skipped runs are evidence, inside the stopping rule: an ``eliminates`` or ``no_effect`` claim
   whose skips at that look could have made it (the arm's skip share differs from the
   baseline's, is over half, or may hide failures at zero_rate: `decide.skips` has the rule,
   alpha w_k in each tail) is held, and the arm runs on to its next look; a claim still held
   when its budget ends is ``untestable``. A baseline that never failed while some of its runs
   skipped is ``untestable``, not ``cannot_reproduce``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from heisenbisect.decide import stats
from heisenbisect.decide.reach import Reach, applied_verdict, reach_of
from heisenbisect.decide.sequential import (
    ArmRuns,
    ArmState,
    Schedule,
    calibrated,
    calibration_wants,
    claim_difference,
    close_out,
    decide,
    equivalence_pvalue,
    geometric_looks,
    look_at_difference,
    never_failed,
    out_of_budget,
    spent,
    zero_bound,
)
from heisenbisect.decide.skips import Skips, SkipTest, baseline_hidden, skip_test
from heisenbisect.decide.strategy import fill_slots
from heisenbisect.records import Config, Outcome, Verdict


@dataclass(frozen=True)
class ScreeningSettings:
    confidence: float = 0.95
    zero_rate: float = 0.05
    min_reduction: float = 0.5
    max_trials: int = 400
    first_look: int = 10

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def looks(self) -> tuple[int, ...]:
        """The run counts at which an arm is examined: geometric, ending at max_trials."""
        return geometric_looks(self.first_look, self.max_trials)

    @property
    def schedule(self) -> Schedule:
        """The looks and the share of alpha each spends."""
        return Schedule.geometric(self.first_look, self.max_trials)

    @property
    def max_attempts(self) -> int:
        """Trials of any status an arm may use: errors and skips are not free forever."""
        return 2 * self.max_trials


@dataclass(frozen=True)
class ArmResult:
    """The decided state of one arm, for reports."""

    config: Config
    verdict: Verdict
    runs: int
    failed_runs: int
    failures: int
    sessions: int
    rate: float
    run_interval: tuple[float, float]
    zero_bound: float
    p_value: float
    decided_at: int | None
    statuses: Mapping[str, int]
    metrics: Mapping[str, float]
    note: str
    reach: Reach | None = None  # an env factor's: whether its variable reached the target
    fractions: tuple[
        float, ...
    ] = ()  # each ok run's failure fraction, in arrival order: what the looks read

    @property
    def run_rate(self) -> float:
        """Share of runs with at least one failure."""
        return self.failed_runs / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class ScreeningResult:
    baseline: ArmResult
    arms: tuple[ArmResult, ...]
    settings: ScreeningSettings
    finished: bool

    @property
    def cannot_reproduce(self) -> bool:
        return self.baseline.verdict is Verdict.CANNOT_REPRODUCE


class Screening:
    """The screening `Strategy`: pure, deterministic given the order of observations.

    ``variables``: each env factor's variable, to tell ``not_applied`` (`decide.reach`).
    """

    def __init__(
        self,
        baseline: Config,
        arms: list[Config],
        settings: ScreeningSettings,
        variables: Mapping[str, str] | None = None,
    ):
        self.settings = settings
        self.schedule = settings.schedule
        self.variables = dict(variables or {})
        self.baseline = ArmState(baseline)
        self.arms = [ArmState(config) for config in arms]
        self._by_config = {state.config: state for state in [self.baseline, *self.arms]}
        self._cannot_reproduce = False
        self._skip_tests: dict[Config, SkipTest] = {}  # each arm's, at its latest look
        self._held: dict[Config, str] = {}  # claims its skips hold back: why

    # -- Strategy ------------------------------------------------------------------------

    def observe(self, config: Config, outcome: Outcome) -> None:
        state = self._by_config.get(config)
        if state is None:
            return  # a config of an older spec revision: not part of this screening
        state.evidence.add(outcome)
        self._review()

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        return fill_slots(self._next, in_flight, slots)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        done = [s.config for s in self.arms if s.verdict is not None]
        if self.finished():
            done.append(self.baseline.config)
        return [c for c in done if in_flight.get(c)]

    def finished(self) -> bool:
        return self._cannot_reproduce or (self._calibrated and all(s.verdict for s in self.arms))

    # -- scheduling ----------------------------------------------------------------------

    @property
    def _calibrated(self) -> bool:
        return calibrated(self.baseline.evidence, self.settings)

    def _next(self, planned: Mapping[Config, int]) -> Config | None:
        base = self.baseline
        if not self._calibrated:
            if self._cannot_reproduce or not calibration_wants(
                base.evidence, planned.get(base.config, 0), self.settings
            ):
                return None
            return base.config
        # round-robin over the baseline and the open arms, fewest runs first, so that every
        # config samples the same stretch of time: a rate that drifts with load (a real race
        # does) then cannot masquerade as an effect
        open_arms = [s for s in self.arms if s.verdict is None]
        targets = {s.config: self._target(s) for s in open_arms}
        targets[base.config] = min(self.settings.max_trials, max(targets.values(), default=0))
        best, best_load = None, math.inf
        for state in [base, *open_arms]:
            have = state.evidence.runs + planned.get(state.config, 0)
            attempts = state.evidence.attempts + planned.get(state.config, 0)
            if (
                have < targets[state.config]
                and attempts < self.settings.max_attempts
                and have < best_load
            ):
                best, best_load = state.config, have
        return best

    def _target(self, state: ArmState) -> int:
        return self.schedule.target(state.looks_done)

    # -- deciding ------------------------------------------------------------------------

    def _review(self) -> None:
        s = self.settings
        base = self.baseline.evidence
        if not self._calibrated:
            if never_failed(base, s):
                self._cannot_reproduce = True
            return
        looked = [
            self._look_if_due(i, state)
            for i, state in enumerate(self.arms)
            if state.verdict is None
        ]
        if any(looked):
            self._apply_holm()  # p-values change only at looks
        for state in self.arms:
            if state.verdict is None and out_of_budget(state, self.schedule, self.settings):
                self._close_out(state)

    def _look_if_due(self, index: int, state: ArmState) -> bool:
        """Examine the arm if it reached its next look (and the baseline did too)."""
        look = self.schedule.next(state.looks_done)
        base = self.baseline.evidence
        if look is None or state.evidence.runs < look.size:
            return False
        if base.runs < look.size and not spent(base, self.settings):
            return False  # wait for the baseline to catch up to this look
        # the first `size` runs of each, in arrival order: sample sizes fixed in advance, so
        # the test stays exact however far the shared baseline ran ahead for other arms
        arm_y, base_y = state.evidence.array()[: look.size], base.array()[: look.size]
        look_at_difference(state, arm_y, base_y, look.weight, stream=index)
        level = look.level(self.settings.alpha)
        self._skip_tests[state.config] = skip_test(skips_of(state), skips_of(self.baseline), level)
        self._held.pop(state.config, None)  # each look judges its claims afresh
        if equivalence_pvalue(arm_y, base_y, self.settings.min_reduction) <= level:
            decide(state, Verdict.NO_EFFECT)
            self._hold_if_skipped(state)
        return True

    def _apply_holm(self) -> None:
        adjusted = stats.holm_adjust([s.sequential_p for s in self.arms])
        for state, p in zip(self.arms, adjusted):
            # an arm closed out of budget may still become significant as others decide
            revisable = state.verdict is Verdict.INCONCLUSIVE and not state.note
            if (state.verdict is not None and not revisable) or p > self.settings.alpha:
                continue
            claim_difference(state, self.settings)
            self._hold_if_skipped(state)

    def _hold_if_skipped(self, state: ArmState) -> None:
        """Take back a claim the arm's skips at its latest look could have made: it runs on to its
        next look, and is ``untestable`` only if the claim is still held when its budget ends."""
        test, claim = self._skip_tests.get(state.config), state.verdict
        why = test.holds(claim, self.settings.zero_rate) if test and claim else ""
        if claim and why:
            self._held[state.config] = f"untestable rather than {claim.value}: {why}"
            state.verdict, state.decided_at = None, None  # out of budget: `_review` closes it out

    def _close_out(self, state: ArmState) -> None:
        if state.config in self._held:
            state.note = self._held[state.config]
            decide(state, Verdict.UNTESTABLE)
            return
        ev, s = state.evidence, self.settings
        short_of_zero = (
            ev.failed_runs == 0 and ev.runs > 0 and zero_bound(ev, s.confidence) >= s.zero_rate
        )
        close_out(state, self.schedule, s, short_of_zero)

    # -- results -------------------------------------------------------------------------

    def result(self) -> ScreeningResult:
        # a baseline that never failed while runs of it were skipped: its failure may be the
        # traceback that skipped them, so nothing is "cannot reproduce" (`decide.skips`)
        hidden = self._cannot_reproduce and self.baseline.evidence.skipped > 0
        never = Verdict.UNTESTABLE if hidden else Verdict.CANNOT_REPRODUCE
        base_verdict = never if self._cannot_reproduce else Verdict.NO_EFFECT
        base_note = baseline_hidden(skips_of(self.baseline)) if hidden else self.baseline.note
        baseline = arm_result(self.baseline, base_verdict, 1.0, self.settings.confidence, base_note)
        adjusted = stats.holm_adjust([s.sequential_p for s in self.arms])
        arms = []
        for state, p in zip(self.arms, adjusted):
            verdict = state.verdict or Verdict.INCONCLUSIVE
            if self._cannot_reproduce:
                verdict = never
            reach = self._reach(state)
            verdict, why = applied_verdict(verdict, reach, self._effect_seen(state))
            note = "; ".join(filter(None, (state.note, why)))
            arms.append(arm_result(state, verdict, p, self.settings.confidence, note, reach))
        return ScreeningResult(baseline, tuple(arms), self.settings, self.finished())

    def _reach(self, state: ArmState) -> Reach | None:
        """Whether the arm's env variable reached the target (None: not an env factor's arm)."""
        variables = [self.variables[f] for f, _ in state.config.changes if f in self.variables]
        return reach_of(variables[0], [state.evidence.reads]) if len(variables) == 1 else None

    def _effect_seen(self, state: ArmState) -> bool:
        """The arm's own sequential test saw a difference, before the correction across arms."""
        return state.pending_zero or state.sequential_p <= self.settings.alpha

    def in_progress(self) -> list[tuple[Config, ArmRuns, Verdict | None]]:
        """Per-config evidence and verdict so far, for a live display."""
        shown = [(self.baseline.config, self.baseline.evidence, self.baseline.verdict)]
        for s in self.arms:
            verdict = (
                s.verdict and applied_verdict(s.verdict, self._reach(s), self._effect_seen(s))[0]
            )
            shown.append((s.config, s.evidence, verdict))
        return shown


def skips_of(state: ArmState) -> Skips:
    """An arm's skipped attempts, for `decide.skips`."""
    ev = state.evidence
    return Skips(ev.skipped, ev.attempts, ev.first_skip)


def arm_result(
    state: ArmState,
    verdict: Verdict,
    p_value: float,
    confidence: float,
    note: str,
    reach: Reach | None = None,
) -> ArmResult:
    """An arm's decided state for reports, with its exact interval and zero bound."""
    ev = state.evidence
    return ArmResult(
        config=state.config,
        verdict=verdict,
        runs=ev.runs,
        failed_runs=ev.failed_runs,
        failures=ev.failures,
        sessions=ev.sessions,
        rate=ev.rate,
        run_interval=stats.clopper_pearson_interval(ev.failed_runs, ev.runs, confidence),
        zero_bound=zero_bound(ev, confidence),
        p_value=p_value,
        decided_at=state.decided_at,
        statuses=dict(ev.statuses),
        metrics={name: float(np.mean(values)) for name, values in ev.metrics.items()},
        note=note,
        reach=reach,
        fractions=tuple(ev.fractions),
    )
