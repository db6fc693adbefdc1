"""Amplification: which stress settings make a flaky failure give the most evidence per second.

The objective. A noisy bisection over N commits costs about log2(N) / C(p) runs (with given
rates the real strategy needs 1.08-1.12x that, docs/bisection.md), where

    C(p) = log2(1 + p (1 - p)^((1 - p) / p))

is the capacity in bits of one run seen as a channel: a run of a bad commit fails with
probability p, one of a good commit never (a Z-channel). Its hours are that times the mean
run duration d. So the settings to look for maximize ``C(p) / d``, bits about the culprit per
second of run; `bisect run`'s screening cost scales the same way (its arms stop after a
number of runs that falls as the baseline fails more often).

Three pure pieces, no I/O:

- `TimedRuns` and `estimate`: one candidate's runs as a Jeffreys Beta posterior on p and a
  mean duration; the objective's posterior mean and interval.
- `Search`: the repeat logic around a sampler. Each candidate (a config proposed by the
  caller, an Optuna trial) gets ``first_runs`` runs; while it could still beat the best so
  far (its optimistic bound exceeds the incumbent's estimate) its runs double, up to
  ``max_candidate_runs``. Most candidates are dropped after a few runs; the contenders get
  enough runs that the winner is not the luckiest noisy estimate.
- `Confirmation`: the best settings against the current ones, runs interleaved, a one-sided
  test of "more bits per second" at looks first_look, 2x, 4x, ... max_runs with a weighted
  Bonferroni split of alpha (`decide.sequential`, as screening), on fresh runs: never the search's own.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats
from scipy.special import betaincinv

from heisenbisect.decide.sequential import Schedule, spend
from heisenbisect.records import Config, Outcome, TrialStatus

# Beta(1/2, 1/2), Jeffreys' prior: a run-failure rate with no other knowledge
PRIOR_A = PRIOR_B = 0.5
# quantiles of the rate's posterior over which C(p) is averaged (a midpoint rule)
GRID = (np.arange(64) + 0.5) / 64
# a candidate keeps getting runs while P(its objective > the incumbent's) is at least this
# much, judged by its rate's upper quantile at 1 - KEEP_PROBABILITY
KEEP_PROBABILITY = 0.2


def capacity(p: np.ndarray | float) -> np.ndarray:
    """Bits per run: capacity of the Z-channel "bad fails with p, good never fails"."""
    p = np.clip(np.asarray(p, dtype=float), 1e-12, 1.0)
    with np.errstate(under="ignore"):
        passes = np.exp((1.0 - p) / p * np.log1p(-np.minimum(p, 1.0 - 1e-16)))  # (1-p)^((1-p)/p)
    return np.log2(1.0 + p * passes)


def capacity_slope(p: float) -> float:
    """dC/dp, numerically (central difference, kept inside (0, 1))."""
    h = 1e-6 * max(p, 1e-6)
    lo, hi = max(p - h, 1e-12), min(p + h, 1.0)
    return float((capacity(hi) - capacity(lo)) / (hi - lo))


@dataclass
class TimedRuns:
    """The runs of one config: failed or not, and how long each took, in arrival order."""

    failed: list[bool] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    attempts: int = 0  # every finished trial, errors and skips included

    def add(self, outcome: Outcome) -> None:
        self.attempts += 1
        if outcome.status is TrialStatus.OK:
            self.failed.append(outcome.failed)
            self.durations.append(float(outcome.duration_s))

    @property
    def runs(self) -> int:
        return len(self.failed)

    @property
    def failed_runs(self) -> int:
        return sum(self.failed)

    @property
    def seconds(self) -> float:
        return float(sum(self.durations))

    def first(self, n: int) -> TimedRuns:
        return TimedRuns(self.failed[:n], self.durations[:n], min(self.attempts, n))


@dataclass(frozen=True)
class Estimate:
    """One config's objective (bits per second) with its rate and speed, each with an interval."""

    runs: int
    failed_runs: int
    seconds: float
    value: float  # posterior mean of C(p) / mean duration
    interval: tuple[float, float]
    rate: float  # posterior mean of p
    rate_interval: tuple[float, float]
    duration: float  # mean seconds per run
    runs_per_s: float
    runs_per_s_interval: tuple[float, float]


def rate_quantiles(evidence: TimedRuns, q: np.ndarray | float) -> np.ndarray:
    """Quantiles of p's posterior Beta(1/2 + f, 1/2 + n - f) (scipy.special: a frozen
    scipy.stats.beta costs milliseconds to build, and the search asks thousands of times)."""
    f, n = evidence.failed_runs, evidence.runs
    return betaincinv(PRIOR_A + f, PRIOR_B + n - f, q)


def duration_interval(durations: Sequence[float], confidence: float) -> tuple[float, float]:
    """A t interval on the mean duration; a point with fewer than two runs."""
    d = np.asarray(durations, dtype=float)
    mean = float(d.mean())
    if len(d) < 2 or np.ptp(d) == 0:
        return mean, mean
    half = stats.t.ppf(0.5 + confidence / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return max(mean - half, 1e-9), mean + half


def estimate(evidence: TimedRuns, confidence: float = 0.95) -> Estimate:
    """The objective and its parts; a config without a clean run is worth 0 (it cannot bisect)."""
    if evidence.runs == 0:
        return Estimate(0, 0, 0.0, 0.0, (0.0, 0.0), 0.0, (0.0, 1.0), math.inf, 0.0, (0.0, 0.0))
    duration = float(np.mean(evidence.durations))
    d_low, d_high = duration_interval(evidence.durations, confidence)
    tail = (1 - confidence) / 2
    p_low, p_high = (float(x) for x in rate_quantiles(evidence, np.array([tail, 1 - tail])))
    value = float(np.mean(capacity(rate_quantiles(evidence, GRID)))) / duration
    return Estimate(
        runs=evidence.runs,
        failed_runs=evidence.failed_runs,
        seconds=evidence.seconds,
        value=value,
        interval=(float(capacity(p_low)) / d_high, float(capacity(p_high)) / d_low),
        rate=(PRIOR_A + evidence.failed_runs) / (PRIOR_A + PRIOR_B + evidence.runs),
        rate_interval=(p_low, p_high),
        duration=duration,
        runs_per_s=1.0 / duration,
        runs_per_s_interval=(1.0 / d_high, 1.0 / d_low),
    )


def optimistic_value(evidence: TimedRuns) -> float:
    """The objective at the rate's upper ``1 - KEEP_PROBABILITY`` quantile: could it still win?"""
    if evidence.runs == 0:
        return 0.0
    p_high = float(rate_quantiles(evidence, 1 - KEEP_PROBABILITY))
    return float(capacity(p_high)) / float(np.mean(evidence.durations))


# -- the search -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchSettings:
    max_runs: int = 300  # every run of the search, the current settings' included
    first_runs: int = 2
    max_candidate_runs: int = 24
    confidence: float = 0.95
    final_share: float = 0.15  # of max_runs, kept for the final race between the leaders
    finalists: int = 3

    def __post_init__(self) -> None:
        if not 1 <= self.first_runs <= self.max_candidate_runs <= self.max_runs:
            raise ValueError("need 1 <= first_runs <= max_candidate_runs <= max_runs")
        if not 0 <= self.final_share < 1 or self.finalists < 1:
            raise ValueError("need 0 <= final_share < 1 and finalists >= 1")

    @property
    def reserve(self) -> int:
        return int(self.final_share * self.max_runs)


@dataclass
class Candidate:
    """A config under evaluation; ``openings`` are the caller's tokens (Optuna trials) for it."""

    config: Config
    evidence: TimedRuns = field(default_factory=TimedRuns)
    target: int = 0  # attempts wanted so far
    active: bool = True
    openings: list[Hashable] = field(default_factory=list)
    _estimate: tuple[int, Estimate] | None = (
        None  # (attempts, estimate): scipy's quantiles are slow
    )

    def estimate(self, confidence: float) -> Estimate:
        if self._estimate is None or self._estimate[0] != self.evidence.attempts:
            self._estimate = (self.evidence.attempts, estimate(self.evidence, confidence))
        return self._estimate[1]


# the candidates' values as a model that pools neighbouring settings' runs sees them
Ranker = Callable[[Mapping[Config, TimedRuns]], Mapping[Config, float]]


class Search:
    """Which runs the candidates get, and when a candidate is done; the caller brings candidates.

    Pure and deterministic given the order of `add` and `observe` calls, so a resumed search
    that replays them in the same order reaches the same state. The finalists and the winner
    are ranked by ``ranker`` when one is given (a deterministic function of the runs, such as
    `decide.surrogate`'s posterior), else by each candidate's own estimate.
    """

    def __init__(self, current: Config, settings: SearchSettings, ranker: Ranker | None = None):
        self.settings = settings
        self.current = current
        self.ranker = ranker
        self.candidates: dict[Config, Candidate] = {}
        self._closed: list[tuple[Config, Hashable]] = []
        self.final = False  # the exploration is over: the leaders race for the rest of the budget
        self.add(current, None)

    # -- what the caller does ----------------------------------------------------------------

    def add(self, config: Config, token: Hashable) -> None:
        """A new candidate, or another look at a known one (the sampler proposed it again)."""
        cand = self.candidates.get(config)
        if cand is None:
            cand = self.candidates[config] = Candidate(config)
        cand.openings.append(token)
        cand.active = True
        cand.target = min(
            max(cand.target, cand.evidence.attempts) + self.settings.first_runs,
            cand.evidence.attempts + self._unplanned(),
        )
        if cand.target <= cand.evidence.attempts:
            self._close(cand)
        self._maybe_start_final()

    def observe(self, config: Config, outcome: Outcome) -> None:
        cand = self.candidates.get(config)
        if cand is None:
            return  # a run of a config this search never proposed: not evidence here
        cand.evidence.add(outcome)
        if cand.active and cand.evidence.attempts >= cand.target:
            self._review(cand)
        self._maybe_start_final()

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        """Runs the active candidates still want, fewest planned first."""
        chosen: list[Config] = []
        planned = dict(in_flight)
        for _ in range(max(0, slots)):
            open_ = [
                c
                for c in self.candidates.values()
                if c.active and c.evidence.attempts + planned.get(c.config, 0) < c.target
            ]
            if not open_:
                break
            pick = min(open_, key=lambda c: c.evidence.attempts + planned.get(c.config, 0))
            chosen.append(pick.config)
            planned[pick.config] = planned.get(pick.config, 0) + 1
        return chosen

    def wants_candidate(self, in_flight: Mapping[Config, int]) -> bool:
        """True when a free slot has nothing to run and the budget allows a new candidate."""
        busy = any(
            c.active and c.evidence.attempts + in_flight.get(c.config, 0) < c.target
            for c in self.candidates.values()
        )
        return not busy and not self.final and self._unplanned() > 0

    def pop_closed(self) -> list[tuple[Config, Hashable]]:
        """Candidates closed since the last call, with the token of the opening they close."""
        closed, self._closed = self._closed, []
        return closed

    def finished(self) -> bool:
        return self.final and not any(c.active for c in self.candidates.values())

    # -- results -------------------------------------------------------------------------------

    @property
    def used(self) -> int:
        return sum(c.evidence.attempts for c in self.candidates.values())

    def estimates(self) -> dict[Config, Estimate]:
        return {c.config: c.estimate(self.settings.confidence) for c in self.candidates.values()}

    def values(self) -> dict[Config, float]:
        """Each candidate's value as the search ranks it: the ranker's where it has one, else
        the candidate's own estimate."""
        own = {c: e.value for c, e in self.estimates().items()}
        if self.ranker is None:
            return own
        ranked = self.ranker(
            {c: cand.evidence for c, cand in self.candidates.items() if cand.evidence.runs}
        )
        return {c: float(ranked.get(c, v)) for c, v in own.items()}

    def best(self) -> Config:
        """The highest value among the well-measured candidates (at least half the most runs
        a candidate may get), or among all when none is: never a lucky few runs."""
        ests, values = self.estimates(), self.values()
        measured = [c for c, e in ests.items() if e.runs >= self.settings.max_candidate_runs // 2]
        pool = measured or list(ests)
        return max(pool, key=lambda c: (values[c], c == self.current))

    def never_failed(self) -> bool:
        return all(c.evidence.failed_runs == 0 for c in self.candidates.values())

    # -- deciding ------------------------------------------------------------------------------

    def _unplanned(self) -> int:
        """Runs of the budget not yet promised to a candidate (the final race's reserve apart)."""
        promised = sum(max(c.target, c.evidence.attempts) for c in self.candidates.values())
        return self.settings.max_runs - (0 if self.final else self.settings.reserve) - promised

    def _maybe_start_final(self) -> None:
        """Once exploring is over, share what is left among the leaders: the winner of the
        search is then chosen on many runs, not on the luckiest few."""
        if self.final or self._unplanned() > 0 or any(c.active for c in self.candidates.values()):
            return
        self.final = True
        ests, values = self.estimates(), self.values()
        ranked = sorted((c for c in ests if ests[c].runs > 0), key=lambda c: -values[c])
        leaders = ranked[: self.settings.finalists]
        left = self._unplanned()
        for i, config in enumerate(leaders):
            cand = self.candidates[config]
            share = left // len(leaders) + (i < left % len(leaders))
            if share > 0:
                cand.active = True
                cand.target = cand.evidence.attempts + share

    def _review(self, cand: Candidate) -> None:
        """A candidate reached its runs: double them while it could still be the best."""
        s = self.settings
        if self.final:
            self._close(cand)
            return
        others = [e.value for c, e in self.estimates().items() if c != cand.config and e.runs > 0]
        incumbent = max(others, default=math.inf)
        could_win = optimistic_value(cand.evidence) >= incumbent
        more = min(2 * cand.evidence.attempts, s.max_candidate_runs) - cand.evidence.attempts
        more = min(more, self._unplanned())
        if could_win and more > 0:
            cand.target = cand.evidence.attempts + more
        else:
            self._close(cand)

    def _close(self, cand: Candidate) -> None:
        cand.active = False
        cand.target = cand.evidence.attempts
        self._closed.append((cand.config, cand.openings[-1]))


# -- confirmation ---------------------------------------------------------------------------


class Claim(str, enum.Enum):
    RUNNING = "running"
    CONFIRMED = "confirmed"  # the best settings give significantly more bits per second
    NOT_CONFIRMED = "not_confirmed"  # the budget ran out first


@dataclass(frozen=True)
class ConfirmSettings:
    confidence: float = 0.95
    first_look: int = 10
    max_runs: int = 200  # per arm

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def schedule(self) -> Schedule:
        """The looks at first_look, 2x, 4x, ... max_runs, and the share of alpha each spends."""
        return Schedule.geometric(self.first_look, self.max_runs)


def log_objective(evidence: TimedRuns) -> tuple[float, float]:
    """log(C(p) / d) and its variance by the delta method, p estimated as (f + 1/2) / (n + 1)."""
    n = evidence.runs
    p = (evidence.failed_runs + 0.5) / (n + 1)
    c = float(capacity(p))
    d = np.asarray(evidence.durations, dtype=float)
    mean = float(d.mean())
    var_rate = (capacity_slope(p) / c) ** 2 * p * (1 - p) / n
    var_duration = float(d.var(ddof=1)) / (n * mean**2) if n > 1 else 0.0
    return math.log(c) - math.log(mean), var_rate + var_duration


def improvement_pvalue(best: TimedRuns, current: TimedRuns) -> float:
    """One-sided p-value against "best gives at most the current's bits per second"."""
    if best.runs < 2 or current.runs < 2:
        return 1.0
    lb, vb = log_objective(best)
    lc, vc = log_objective(current)
    return float(stats.norm.sf((lb - lc) / math.sqrt(vb + vc)))


@dataclass(frozen=True)
class ConfirmResult:
    claim: Claim
    p_value: float  # min over looks of p_k / w_k, capped at 1
    looks_done: int
    best: Estimate
    current: Estimate

    @property
    def speedup(self) -> float:
        """Estimated ratio of bits per second, best over current."""
        return self.best.value / self.current.value if self.current.value > 0 else math.inf


class Confirmation:
    """A `Strategy`: interleaved runs of ``best`` and ``current`` until the claim is decided."""

    def __init__(self, best: Config, current: Config, settings: ConfirmSettings):
        if best == current:
            raise ValueError("nothing to confirm: the best settings are the current ones")
        self.best, self.current, self.settings = best, current, settings
        self.schedule = settings.schedule
        self.evidence = {best: TimedRuns(), current: TimedRuns()}
        self.looks_done = 0
        self.sequential_p = 1.0
        self.claim = Claim.RUNNING

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config in self.evidence:
            self.evidence[config].add(outcome)
            self._look()

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        """Runs up to the next look for both arms, alternating, the arm with fewer first."""
        if self.finished():
            return []
        chosen: list[Config] = []
        planned = {c: in_flight.get(c, 0) for c in self.evidence}
        for _ in range(max(0, slots)):
            room = [c for c, ev in self.evidence.items() if self._wants(ev, planned[c])]
            if not room:
                break
            config = min(
                room, key=lambda c: (self.evidence[c].attempts + planned[c], c != self.current)
            )
            chosen.append(config)
            planned[config] += 1
        return chosen

    def _wants(self, evidence: TimedRuns, planned: int) -> bool:
        cap = 2 * self.settings.max_runs  # errors are not free forever
        return evidence.runs + planned < self._next_look() and evidence.attempts + planned < cap

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return [c for c in in_flight if in_flight[c]] if self.finished() else []

    def finished(self) -> bool:
        return self.claim is not Claim.RUNNING

    def _next_look(self) -> int:
        return self.schedule.target(self.looks_done)

    def _look(self) -> None:
        s = self.settings
        best, current = self.evidence[self.best], self.evidence[self.current]
        while (
            self.claim is Claim.RUNNING
            and (look := self.schedule.next(self.looks_done)) is not None
        ):
            short = [ev for ev in (best, current) if ev.runs < look.size]
            if any(ev.attempts >= 2 * s.max_runs for ev in short):
                break  # an arm errors too often to reach this look: the claim cannot be made
            if short:
                return
            self.looks_done += 1
            p = improvement_pvalue(best.first(look.size), current.first(look.size))
            self.sequential_p = spend(self.sequential_p, p, look.weight)
            if p <= look.level(s.alpha):
                self.claim = Claim.CONFIRMED
        if self.claim is Claim.RUNNING:
            self.claim = Claim.NOT_CONFIRMED

    def result(self) -> ConfirmResult:
        conf = self.settings.confidence
        return ConfirmResult(
            claim=self.claim,
            p_value=self.sequential_p,
            looks_done=self.looks_done,
            best=estimate(self.evidence[self.best], conf),
            current=estimate(self.evidence[self.current], conf),
        )
