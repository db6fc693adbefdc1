"""Sequential tests: the rules by which screening, group screening and amplify's confirmation claim.

One place for them, so that every claim the tool prints is made the same way:

- **Calibration.** Screening's baseline runs alone, in doubling batches, until it has the first
  look's runs and a failed run; one that spends its budget without failing cannot reproduce.
- **Looks.** A test is examined when its arm's run count reaches a point of a fixed geometric
  schedule (first, 2x, 4x, ... last). A look reads the first n runs of each side, in arrival
  order: sample sizes fixed in advance keep each look's test exact however far one side ran ahead.
- **Alpha spending.** A weighted Bonferroni split of alpha over the looks, weight w_k
  proportional to the look's run count (late looks, where small effects become visible, get
  most): look k tests at alpha w_k, and min_k p_k / w_k is a valid p-value whenever the test stops.
- **Holm across the family**, on those p-values (`stats.holm_adjust`, checked against statsmodels).
  A significantly lower arm with failed runs ``reduces``; higher, ``increases``.
- **The zero bound.** A significantly lower arm with no failed run ``eliminates`` once the exact
  one-sided Clopper-Pearson bound on its run-failure rate is below ``zero_rate``. No look
  correction is needed: zero failures at a later look implies zero at the first look where the
  bound was already below.
- **Equivalence.** ``no_effect`` is two one-sided Welch tests at the look's level: the arm keeps
  its rate within [1 - min_reduction, 1 / (1 - min_reduction)] x baseline, with at least
  MIN_FAILING_FOR_EQUIVALENCE failed runs on each side.
- **Close-out.** An arm out of looks (or of attempts: errors are not free forever) undecided is
  ``inconclusive``; an arm with no failed run says how many runs a zero would need, one whose
  trials kept failing to run says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import numpy as np

from heisenbisect.decide import stats
from heisenbisect.decide.budget import runs_to_claim_zero
from heisenbisect.decide.reach import ReadTally
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
class Look:
    size: int  # runs of each side it compares: the first ``size``
    weight: float  # its share of alpha

    def level(self, alpha: float) -> float:
        """The level this look tests at."""
        return alpha * self.weight


@dataclass(frozen=True)
class Schedule:
    """The looks of a sequential test and what each spends."""

    sizes: tuple[int, ...]
    weights: tuple[float, ...]

    @classmethod
    def geometric(cls, first: int, last: int) -> Schedule:
        sizes = geometric_looks(first, last)
        return cls(sizes, look_weights(sizes))

    def __len__(self) -> int:
        return len(self.sizes)

    def next(self, looks_done: int) -> Look | None:
        """The look after ``looks_done`` of them; None once all are spent."""
        if looks_done >= len(self.sizes):
            return None
        return Look(self.sizes[looks_done], self.weights[looks_done])

    def target(self, looks_done: int) -> int:
        """The run count an arm works towards: its next look's, or the last one's once all are spent."""
        return self.sizes[min(looks_done, len(self.sizes) - 1)]


def spend(sequential_p: float, p: float, weight: float) -> float:
    """The test's p-value after one more look: min over the looks of p_k / w_k, capped at 1."""
    return min(sequential_p, p / weight, 1.0)


class Rules(Protocol):
    """What the rules read from a study's settings (`ScreeningSettings` has it all)."""

    @property
    def confidence(self) -> float: ...

    @property
    def first_look(self) -> int: ...

    @property
    def max_trials(self) -> int: ...

    @property
    def zero_rate(self) -> float: ...

    @property
    def max_attempts(self) -> int: ...


@dataclass
class ArmRuns:
    """Every trial of one config: ``fractions`` holds each ok run's failure fraction, in arrival order."""

    fractions: list[float] = field(default_factory=list)
    failed_runs: int = 0
    failures_fraction_sum: float = 0.0
    failures: int = 0
    sessions: int = 0
    attempts: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    reads: ReadTally = field(default_factory=ReadTally)  # every trial's, whatever its status
    first_skip: str = ""  # the first skipped run's reason (`decide.skips`)

    def add(self, outcome: Outcome) -> None:
        self.attempts += 1
        if outcome.status is TrialStatus.SKIP and not self.first_skip:
            self.first_skip = outcome.detail or "skipped"
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
    def skipped(self) -> int:
        return self.statuses.get(TrialStatus.SKIP.value, 0)

    @property
    def rate(self) -> float:
        """Mean per-run failure fraction: the session failure rate, runs weighted equally."""
        return self.failures_fraction_sum / self.runs if self.fractions else 0.0

    def array(self) -> np.ndarray:
        return np.asarray(self.fractions, dtype=float)


@dataclass
class ArmState:
    """One arm's sequential comparison with the baseline, and its verdict once decided."""

    config: Config
    evidence: ArmRuns = field(default_factory=ArmRuns)
    looks_done: int = 0
    sequential_p: float = 1.0  # min over looks of p_k / w_k (capped at 1)
    lower: bool = True  # direction of the difference at the look that set sequential_p
    verdict: Verdict | None = None
    decided_at: int | None = None
    note: str = ""
    pending_zero: bool = (
        False  # significantly lower with no failures, bound not yet below zero_rate
    )


def calibrated(baseline: ArmRuns, rules: Rules) -> bool:
    """The baseline has the first look's runs and a failed run among them: the arms may start."""
    return baseline.runs >= rules.first_look and baseline.failed_runs > 0


def spent(runs: ArmRuns, rules: Rules) -> bool:
    """Runs or attempts at their limit."""
    return runs.runs >= rules.max_trials or runs.attempts >= rules.max_attempts


def never_failed(baseline: ArmRuns, rules: Rules) -> bool:
    """The baseline spent its budget without a failed run: the failure cannot be reproduced."""
    return baseline.failed_runs == 0 and spent(baseline, rules)


def calibration_wants(baseline: ArmRuns, planned: int, rules: Rules) -> bool:
    """Whether the calibrating baseline takes another run, ``planned`` already on their way: in
    doubling batches (a baseline that fails early leaves no long queue behind), within its attempts."""
    batch = min(rules.max_trials, max(rules.first_look, 2 * baseline.runs))
    return baseline.runs + planned < batch and baseline.attempts + planned < rules.max_attempts


def look_at_difference(
    state: ArmState, arm_y: np.ndarray, base_y: np.ndarray, weight: float, stream: int
) -> None:
    """One look's two-sided difference test (`stats.difference_pvalue`) spent at ``weight``.

    ``stream`` numbers the arm: its permutation test at look k draws from seed 1000 stream + k,
    so a replay draws the same resamples.
    """
    state.looks_done += 1
    p = stats.difference_pvalue(arm_y, base_y, seed=1000 * stream + state.looks_done)
    if p / weight < state.sequential_p:
        state.lower = arm_y.mean() < base_y.mean()
    state.sequential_p = spend(state.sequential_p, p, weight)


def equivalence_pvalue(arm_y: np.ndarray, base_y: np.ndarray, min_reduction: float) -> float:
    """p-value against "the arm's rate is outside [1 - r, 1 / (1 - r)] x baseline" (two one-sided
    Welch tests); 1 with fewer than MIN_FAILING_FOR_EQUIVALENCE failed runs on either side."""
    if min(np.count_nonzero(arm_y), np.count_nonzero(base_y)) < MIN_FAILING_FOR_EQUIVALENCE:
        return 1.0
    low = 1.0 - min_reduction
    return max(
        stats.not_reduced_pvalue(arm_y, base_y, low), stats.not_reduced_pvalue(base_y, arm_y, low)
    )


def zero_bound(runs: ArmRuns, confidence: float) -> float:
    """The exact one-sided upper bound on the arm's run-failure rate."""
    return stats.clopper_pearson_upper(runs.failed_runs, runs.runs, confidence)


def decide(state: ArmState, verdict: Verdict) -> None:
    state.verdict = verdict
    state.decided_at = state.evidence.runs


def claim_difference(state: ArmState, rules: Rules) -> None:
    """The claim of a difference significant after Holm: ``increases``, ``reduces`` (failures seen),
    ``eliminates`` once the zero bound is below zero_rate; else it waits for runs (``pending_zero``)."""
    if not state.lower:
        decide(state, Verdict.INCREASES)
    elif state.evidence.failed_runs > 0:
        decide(state, Verdict.REDUCES)
    elif zero_bound(state.evidence, rules.confidence) < rules.zero_rate:
        decide(state, Verdict.ELIMINATES)
    else:
        state.pending_zero = True  # lower with no failure, too few runs to claim zero yet


def out_of_budget(state: ArmState, schedule: Schedule, rules: Rules) -> bool:
    return state.looks_done >= len(schedule) or state.evidence.attempts >= rules.max_attempts


def close_out(state: ArmState, schedule: Schedule, rules: Rules, short_of_zero: bool) -> None:
    """Out of budget undecided: ``inconclusive``. ``short_of_zero``: no failed run, too few runs to
    bound the rate below zero_rate (never "reduces", which claims failures; not "eliminates" yet)."""
    ev = state.evidence
    if short_of_zero:
        state.note = too_few_for_zero(ev.runs, rules)
    elif ev.attempts >= rules.max_attempts and state.looks_done < len(schedule):
        state.note = f"{ev.attempts - ev.runs} trials did not run cleanly"
    decide(state, Verdict.INCONCLUSIVE)


def too_few_for_zero(runs: int, rules: Rules) -> str:
    """Why an arm with no failed run stays inconclusive: it cannot yet bound its rate below zero_rate."""
    needed = runs_to_claim_zero(rules.zero_rate, rules.confidence)
    return (
        f"no failed run in {runs}, too few to bound the rate below {rules.zero_rate:g}: "
        f"{needed} runs without failure are needed (raise statistics.max_trials to at least {needed})"
    )


# -- the search's test: is a set's run-failure rate below zero_rate, or above it? --------------


@dataclass(frozen=True)
class ZeroTest:
    """Wald's SPRT between "the run-failure rate is ``zero_rate``" and "it is ``above``".

    The question every search answer of group screening asks, in the claims' own terms: an
    eliminator is a change whose rate is below ``zero_rate``. ``fails`` (rate shown above it)
    comes with chance at most ``miss_rate`` for a set failing at ``zero_rate`` or less, so a
    set holding a near-zero reducer is not closed as "holds no eliminator" on one failed run;
    ``stops`` with chance at most ``stop_miss`` (``miss_rate`` unless given) for a set failing at
    ``above`` or more (Wald's bounds). Rates between the two may be answered either way (the
    indifference zone); ``cap`` runs without an answer end it as ``undecided``.
    """

    zero_rate: float
    above: float
    miss_rate: float
    cap: int
    stop_miss: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.zero_rate < self.above < 1.0:
            raise ValueError(f"need 0 < zero_rate < above < 1, got {self.zero_rate}, {self.above}")

    def log_ratio(self, failed: int, runs: int) -> float:
        """log P(runs | above) - log P(runs | zero_rate): the binomial likelihood ratio."""
        clean = runs - failed
        return failed * math.log(self.above / self.zero_rate) + clean * (
            math.log1p(-self.above) - math.log1p(-self.zero_rate)
        )

    def answer(self, failed: int, runs: int) -> str:
        """``fails``, ``stops``, ``undecided`` (at the cap) or ``pending``."""
        stop_miss = self.miss_rate if self.stop_miss is None else self.stop_miss
        ratio = self.log_ratio(failed, runs)
        if ratio >= math.log((1.0 - stop_miss) / self.miss_rate):
            return "fails"
        if ratio <= math.log(stop_miss / (1.0 - self.miss_rate)):
            return "stops"
        return "undecided" if runs >= self.cap else "pending"


def far_below(
    failed: int, runs: int, baseline_rate: float, min_reduction: float, miss_rate: float
) -> bool:
    """The set's exact upper bound (at 1 - ``miss_rate``) is below (1 - min_reduction) x the baseline's
    rate: far below it, whether or not provably below zero_rate, so it earns a claim arm of its own."""
    return runs > 0 and _upper(failed, runs, 1.0 - miss_rate) < baseline_rate * (
        1.0 - min_reduction
    )


def rate_floor(failed: int, runs: int, confidence: float) -> float:
    """The exact one-sided lower bound on a rate: what the search takes the baseline's rate to be
    at least. The baseline takes no runs while only the search runs, so its rate stays as the
    calibration left it: 5 of 15 runs failing for a true 15% made inert groups look like reducers."""
    if runs == 0 or failed == 0:
        return 0.0
    return _lower(failed, runs, confidence)


def rate_ceiling(failed: int, runs: int, confidence: float) -> float:
    """The exact one-sided upper bound on a rate (1 before any run): what a rate may still be."""
    return _upper(failed, runs, confidence) if runs else 1.0


@lru_cache(maxsize=4096)
def _lower(failed: int, runs: int, confidence: float) -> float:
    return stats.clopper_pearson_interval(failed, runs, 2.0 * confidence - 1.0)[0]


@lru_cache(maxsize=65536)
def _upper(failed: int, runs: int, confidence: float) -> float:
    """`stats.clopper_pearson_upper`, cached: the search asks it of the same counts at every review."""
    return stats.clopper_pearson_upper(failed, runs, confidence)
