"""Screening: which single-factor changes drive the failure to zero, suppress it, or do nothing.

Protocol (all arms against one shared baseline, runs as the unit of evidence):

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from heisenbisect.decide import stats
from heisenbisect.decide.budget import runs_to_claim_zero
from heisenbisect.decide.reach import Reach, ReadTally, applied_verdict, reach_of
from heisenbisect.decide.strategy import fill_slots
from heisenbisect.records import Config, Outcome, TrialStatus, Verdict

MIN_FAILING_FOR_EQUIVALENCE = 5


def geometric_looks(first: int, last: int) -> tuple[int, ...]:
    """Run counts at which a sequential test looks: first, 2x, 4x, ... and finally ``last``."""
    points, n = [], first
    while n < last:
        points.append(n)
        n *= 2
    return (*points, last)


def look_weights(looks: tuple[int, ...]) -> tuple[float, ...]:
    """Share of alpha spent at each look: proportional to its run count, summing to 1."""
    total = sum(looks)
    return tuple(n / total for n in looks)


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
    def look_weights(self) -> tuple[float, ...]:
        return look_weights(self.looks)

    @property
    def max_attempts(self) -> int:
        """Trials of any status an arm may use: errors and skips are not free forever."""
        return 2 * self.max_trials


def too_few_for_zero(runs: int, settings: ScreeningSettings) -> str:
    """Why an arm with no failed run stays inconclusive: it cannot yet bound its rate below zero_rate."""
    needed = runs_to_claim_zero(settings.zero_rate, settings.confidence)
    return (
        f"no failed run in {runs}, too few to bound the rate below {settings.zero_rate:g}: "
        f"{needed} runs without failure are needed (raise statistics.max_trials to at least {needed})"
    )


@dataclass
class ArmEvidence:
    """Everything observed for one config; ``fractions`` holds one entry per ok run."""

    fractions: list[float] = field(default_factory=list)
    failed_runs: int = 0
    failures_fraction_sum: float = 0.0
    failures: int = 0
    sessions: int = 0
    attempts: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    reads: ReadTally = field(default_factory=ReadTally)  # every trial's, whatever its status

    def add(self, outcome: Outcome) -> None:
        self.attempts += 1
        self.statuses[outcome.status.value] = self.statuses.get(outcome.status.value, 0) + 1
        self.reads.add(outcome.env_reads, has_result=outcome.status is TrialStatus.OK)
        if outcome.status is not TrialStatus.OK:
            return
        self.fractions.append(outcome.failure_fraction)
        self.failed_runs += outcome.failures > 0
        self.failures_fraction_sum += outcome.failure_fraction
        self.failures += outcome.failures
        self.sessions += outcome.total
        for name, value in outcome.metrics.items():
            self.metrics.setdefault(name, []).append(value)

    @property
    def runs(self) -> int:
        return len(self.fractions)

    @property
    def rate(self) -> float:
        """Mean per-run failure fraction: the session failure rate, runs weighted equally."""
        return self.failures_fraction_sum / self.runs if self.fractions else 0.0

    def array(self) -> np.ndarray:
        return np.asarray(self.fractions, dtype=float)

    def mean_metric(self, name: str) -> float | None:
        values = self.metrics.get(name)
        return float(np.mean(values)) if values else None


@dataclass
class ArmState:
    config: Config
    evidence: ArmEvidence = field(default_factory=ArmEvidence)
    looks_done: int = 0
    sequential_p: float = 1.0  # min over looks of p_k / w_k (capped at 1)
    lower: bool = True  # direction of the difference at the look that set sequential_p
    verdict: Verdict | None = None
    decided_at: int | None = None
    note: str = ""
    pending_zero: bool = False  # significantly lower with no failures, bound not yet below zero_rate


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
        self, baseline: Config, arms: list[Config], settings: ScreeningSettings, variables: Mapping[str, str] | None = None
    ):
        self.settings = settings
        self.variables = dict(variables or {})
        self.baseline = ArmState(baseline)
        self.arms = [ArmState(config) for config in arms]
        self._by_config = {state.config: state for state in [self.baseline, *self.arms]}
        self._cannot_reproduce = False

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
        ev = self.baseline.evidence
        return ev.runs >= self.settings.first_look and ev.failed_runs > 0

    def _next(self, planned: Mapping[Config, int]) -> Config | None:
        base = self.baseline
        if not self._calibrated:
            base_planned = base.evidence.runs + planned.get(base.config, 0)
            # doubling batches: a baseline that fails early does not leave a long queue behind
            batch = min(self.settings.max_trials, max(self.settings.first_look, 2 * base.evidence.runs))
            if self._cannot_reproduce or base_planned >= batch:
                return None
            if base.evidence.attempts + planned.get(base.config, 0) >= self.settings.max_attempts:
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
            if have < targets[state.config] and attempts < self.settings.max_attempts and have < best_load:
                best, best_load = state.config, have
        return best

    def _target(self, state: ArmState) -> int:
        looks = self.settings.looks
        return looks[min(state.looks_done, len(looks) - 1)]

    # -- deciding ------------------------------------------------------------------------

    def _review(self) -> None:
        s = self.settings
        base = self.baseline.evidence
        if not self._calibrated:
            if base.failed_runs == 0 and (base.runs >= s.max_trials or base.attempts >= s.max_attempts):
                self._cannot_reproduce = True
            return
        looked = [self._look_if_due(i, state) for i, state in enumerate(self.arms) if state.verdict is None]
        if any(looked):
            self._apply_holm()  # p-values change only at looks
        for state in self.arms:
            if state.verdict is None and self._out_of_budget(state):
                self._close_out(state)

    def _look_if_due(self, index: int, state: ArmState) -> bool:
        """Examine the arm if it reached its next look (and the baseline did too)."""
        looks = self.settings.looks
        n = state.evidence.runs
        base = self.baseline.evidence
        if state.looks_done >= len(looks) or n < looks[state.looks_done]:
            return False
        if base.runs < looks[state.looks_done] and not self._base_exhausted():
            return False  # wait for the baseline to catch up to this look
        size = looks[state.looks_done]
        weight = self.settings.look_weights[state.looks_done]
        state.looks_done += 1
        # the first `size` runs of each, in arrival order: sample sizes fixed in advance, so
        # the test stays exact however far the shared baseline ran ahead for other arms
        arm_y, base_y = state.evidence.array()[:size], base.array()[:size]
        p = stats.difference_pvalue(arm_y, base_y, seed=1000 * index + state.looks_done)
        if p / weight < state.sequential_p:
            state.sequential_p = min(p / weight, 1.0)
            state.lower = arm_y.mean() < base_y.mean()
        if self._equivalent(arm_y, base_y, self.settings.alpha * weight):
            self._decide(state, Verdict.NO_EFFECT)
        return True

    def _equivalent(self, arm_y: np.ndarray, base_y: np.ndarray, level: float) -> bool:
        if min(np.count_nonzero(arm_y), np.count_nonzero(base_y)) < MIN_FAILING_FOR_EQUIVALENCE:
            return False
        low = 1.0 - self.settings.min_reduction
        keeps_rate = stats.not_reduced_pvalue(arm_y, base_y, low) <= level
        not_raised = stats.not_reduced_pvalue(base_y, arm_y, low) <= level
        return keeps_rate and not_raised

    def _apply_holm(self) -> None:
        adjusted = stats.holm_adjust([s.sequential_p for s in self.arms])
        for state, p in zip(self.arms, adjusted):
            # an arm closed out of budget may still become significant as others decide
            revisable = state.verdict is Verdict.INCONCLUSIVE and not state.note
            if (state.verdict is not None and not revisable) or p > self.settings.alpha:
                continue
            if not state.lower:
                self._decide(state, Verdict.INCREASES)
            elif state.evidence.failed_runs > 0:
                self._decide(state, Verdict.REDUCES)
            elif self._zero_bound(state) < self.settings.zero_rate:
                self._decide(state, Verdict.ELIMINATES)
            else:
                state.pending_zero = True  # lower with no failure, too few runs to claim zero yet

    def _zero_bound(self, state: ArmState) -> float:
        ev = state.evidence
        return stats.clopper_pearson_upper(ev.failed_runs, ev.runs, self.settings.confidence)

    def _out_of_budget(self, state: ArmState) -> bool:
        ev, s = state.evidence, self.settings
        looks_exhausted = state.looks_done >= len(s.looks)
        return looks_exhausted or ev.attempts >= s.max_attempts

    def _base_exhausted(self) -> bool:
        base, s = self.baseline.evidence, self.settings
        return base.runs >= s.max_trials or base.attempts >= s.max_attempts

    def _close_out(self, state: ArmState) -> None:
        ev, s = state.evidence, self.settings
        if ev.failed_runs == 0 and ev.runs and self._zero_bound(state) >= s.zero_rate:
            # no failure is not zero: never "reduces" (that claims failures), never "eliminates" yet
            state.note = too_few_for_zero(ev.runs, s)
            self._decide(state, Verdict.INCONCLUSIVE)
        else:
            if state.evidence.attempts >= self.settings.max_attempts and state.looks_done < len(self.settings.looks):
                state.note = f"{state.evidence.attempts - state.evidence.runs} trials did not run cleanly"
            self._decide(state, Verdict.INCONCLUSIVE)

    def _decide(self, state: ArmState, verdict: Verdict) -> None:
        state.verdict = verdict
        state.decided_at = state.evidence.runs

    # -- results -------------------------------------------------------------------------

    def result(self) -> ScreeningResult:
        base_verdict = Verdict.CANNOT_REPRODUCE if self._cannot_reproduce else Verdict.NO_EFFECT
        baseline = self._arm_result(self.baseline, base_verdict, p_value=1.0)
        adjusted = stats.holm_adjust([s.sequential_p for s in self.arms])
        arms = []
        for state, p in zip(self.arms, adjusted):
            verdict = state.verdict or Verdict.INCONCLUSIVE
            if self._cannot_reproduce:
                verdict = Verdict.CANNOT_REPRODUCE
            reach = self._reach(state)
            verdict, why = applied_verdict(verdict, reach, self._effect_seen(state))
            note = "; ".join(filter(None, (state.note, why)))
            arms.append(arm_result(state, verdict, p, self.settings.confidence, note, reach))
        return ScreeningResult(baseline, tuple(arms), self.settings, self.finished())

    def _arm_result(self, state: ArmState, verdict: Verdict, p_value: float) -> ArmResult:
        return arm_result(state, verdict, p_value, self.settings.confidence, state.note)

    def _reach(self, state: ArmState) -> Reach | None:
        """Whether the arm's env variable reached the target (None: not an env factor's arm)."""
        variables = [self.variables[f] for f, _ in state.config.changes if f in self.variables]
        return reach_of(variables[0], [state.evidence.reads]) if len(variables) == 1 else None

    def _effect_seen(self, state: ArmState) -> bool:
        """The arm's own sequential test saw a difference, before the correction across arms."""
        return state.pending_zero or state.sequential_p <= self.settings.alpha

    def in_progress(self) -> list[tuple[Config, ArmEvidence, Verdict | None]]:
        """Per-config evidence and verdict so far, for a live display."""
        shown = [(self.baseline.config, self.baseline.evidence, self.baseline.verdict)]
        for s in self.arms:
            verdict = s.verdict and applied_verdict(s.verdict, self._reach(s), self._effect_seen(s))[0]
            shown.append((s.config, s.evidence, verdict))
        return shown


def arm_result(
    state: ArmState, verdict: Verdict, p_value: float, confidence: float, note: str, reach: Reach | None = None
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
        zero_bound=stats.clopper_pearson_upper(ev.failed_runs, ev.runs, confidence),
        p_value=p_value,
        decided_at=state.decided_at,
        statuses=dict(ev.statuses),
        metrics={name: float(np.mean(values)) for name, values in ev.metrics.items()},
        note=note,
        reach=reach,
    )
