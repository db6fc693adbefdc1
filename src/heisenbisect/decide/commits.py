"""Noisy commit bisection as a `Strategy`: probe where the culprit is least known, stop when sure.

Pure: it sees configs (a commit each) and outcomes, never git or processes, so replaying
the store rebuilds the same state. When the spec leaves a failure rate out, runs teach it:
first runs at the known-bad end for p, and runs at the known-good end for q whenever
information gain asks for them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv

from heisenbisect.decide.hidden_skips import SkipReading, failing, read_skips
from heisenbisect.decide.posterior import (
    Posterior,
    RatePrior,
    RunCounts,
    culprit_posterior,
    rate_priors,
    skip_groups,
)
from heisenbisect.decide.probes import GOOD_END, choose_probes, splitting_commit
from heisenbisect.records import Config, Outcome, TrialStatus

# a commit whose runs error out (crash) this often is treated as untestable; a timeout is
# costlier (a hang waits the whole timeout each time), so one makes it untestable unless
# Settings.retry_timeouts allows more (issue 35: three 600 s hangs at one commit took 30 minutes)
MAX_ERRORS = 3
RUNNERS_UP = 5
MIN_SKIPS = 2  # one skipped run may be the flaky failure itself (a run-time traceback)


def mostly_skipped(skips: int, runs: int) -> bool:
    """Whether a commit is untestable by its skips: most of its runs skipped, two at least.

    A single skip does not make it so: when the target's flaky failure is a could-not-run
    traceback raised at run time, a bad commit skips now and then, and calling it untestable at
    its first skip loses the culprit. A commit that cannot run at all skips every probe: it is
    untestable at its second, one run later than before."""
    return skips >= MIN_SKIPS and skips > runs


@dataclass(frozen=True)
class Settings:
    """The knobs of one bisection (``commits:`` in the spec)."""

    p_bad: float | None = None
    p_good: float | None = None
    confidence: float = 0.95
    max_trials: int = 2000
    bad_end_trials: int = 10  # runs at the bad end before probing, when p_bad is learned
    # runs (and failed runs) already stored at the bad end by another study: evidence about a learned p
    stored_bad_runs: int = 0
    stored_bad_failures: int = 0
    retry_timeouts: int = 0  # timeouts at a commit beyond the first before it is untestable

    def __post_init__(self) -> None:
        if self.p_bad is not None and self.p_good is not None and not self.p_bad > self.p_good:
            raise ValueError(f"p_bad must exceed p_good, got {self.p_bad} <= {self.p_good}")


class State(str, enum.Enum):
    """Why a bisection stands where it does."""

    RUNNING = "running"
    FOUND = "found"  # one commit holds the confidence
    SKIPPED = "skipped"  # a set of commits holds it, but untestable ones keep them apart
    BUDGET = "budget"  # max_trials spent before reaching the confidence
    EXHAUSTED = "exhausted"  # no testable commit left whose runs split the posterior
    CONTRADICTION = "contradiction"  # the evidence is impossible under the given rates


@dataclass(frozen=True)
class Result:
    """What is known about the culprit: indices into the candidate list."""

    state: State
    culprit: int  # the most probable candidate
    probability: float  # its posterior
    group: tuple[int, ...]  # the candidates no probe can tell apart from it (itself, if testable)
    group_probability: float
    runners_up: tuple[tuple[int, float], ...]
    mean_p_bad: float
    mean_p_good: float
    trials: int  # every finished trial, endpoints and errors included
    # the commit just before the group whose skips are not yet read (decide.hidden_skips): the
    # answer waits for its runs, and a budget spent on them leaves it undecided
    held_by: int | None = None


class CommitStrategy:
    """Bayesian bisection over ``candidates`` (oldest first; the last is the known-bad end)."""

    def __init__(
        self,
        candidates: Sequence[str],
        good: str,
        settings: Settings,
        base: Config = Config(),
        prior: Sequence[float]
        | np.ndarray
        | None = None,  # soft per-candidate weights (commits.priors); None: uniform
    ):
        if not candidates:
            raise ValueError("no candidate commits")
        self.candidates = list(candidates)
        self.prior = None if prior is None else np.asarray(prior, dtype=float)
        self.good = good
        self.settings = settings
        self.base = base
        self._index = {sha: i for i, sha in enumerate(self.candidates)}
        n = len(self.candidates)
        self.trials = np.zeros(n, dtype=np.int64)
        self.failures = np.zeros(n, dtype=np.int64)
        self.errors = np.zeros(n, dtype=np.int64)
        self.skips = np.zeros(n, dtype=np.int64)
        self.timeouts = np.zeros(n, dtype=np.int64)
        self.unrunnable = np.zeros(n, dtype=bool)  # errors, timeouts, mostly skips
        self.good_skips = 0
        self.good_trials = 0
        self.good_failures = 0
        self.good_attempts = 0  # every finished run at the good end, errors included
        self.good_untestable = False
        self.finished_trials = 0
        self._bad_prior, self._good_prior = rate_priors(
            settings.p_bad,
            settings.p_good,
            (settings.stored_bad_runs, settings.stored_bad_failures),
        )
        self._posterior: Posterior | None = None
        self._result: Result | None = None
        self._skip_reading: SkipReading | None = None

    # -- Strategy --------------------------------------------------------------------------

    def config_for(self, commit: str) -> Config:
        return Config(changes=self.base.changes, commit=commit)

    def observe(self, config: Config, outcome: Outcome) -> None:
        self.finished_trials += 1
        self._posterior = None
        self._result = None
        self._skip_reading = None
        if config.commit == self.good:
            self._observe_good(outcome)
            return
        i = self._index.get(config.commit or "")
        if i is None:
            return  # not a candidate of this range: cannot happen with a bound store
        if outcome.status is TrialStatus.OK:
            self.trials[i] += 1
            self.failures[i] += outcome.failed
        elif outcome.status is TrialStatus.SKIP:
            self.skips[i] += 1
        else:
            self.errors[i] += 1
            self.timeouts[i] += outcome.status is TrialStatus.TIMEOUT
        self.unrunnable[i] = (
            self.errors[i] >= MAX_ERRORS
            or self.timeouts[i] > self.settings.retry_timeouts
            or mostly_skipped(int(self.skips[i]), int(self.trials[i]))
        )

    def _observe_good(self, outcome: Outcome) -> None:
        self.good_attempts += 1
        if outcome.status is TrialStatus.OK:
            self.good_trials += 1
            self.good_failures += outcome.failed
        elif outcome.status is TrialStatus.SKIP:
            self.good_skips += 1
        self.good_untestable = mostly_skipped(self.good_skips, self.good_trials)

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        budget = self.settings.max_trials - self.finished_trials - sum(in_flight.values())
        slots = min(slots, budget)
        if slots <= 0:
            return []
        pending = self._pending(in_flight)
        chosen = self._bad_end_runs(pending, slots) or self._held_runs(pending, slots)
        probes = choose_probes(
            self.posterior(),
            ~self.untestable,
            pending,
            slots - len(chosen),
            self._good_end_open(),
            (self._bad_prior, self._good_prior),
        )
        return chosen + [
            self.config_for(self.good if i == GOOD_END else self.candidates[i]) for i in probes
        ]

    def _good_end_open(self) -> bool:
        """Whether runs at the good end can still teach something: q is learned and it runs."""
        return self.settings.p_good is None and not self.good_untestable

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return list(in_flight) if self.finished() else []

    def finished(self) -> bool:
        return self.result().state is not State.RUNNING

    # -- state -----------------------------------------------------------------------------

    @property
    def skip_reading(self) -> SkipReading:
        """Which commits' skips may be the failure (`decide.hidden_skips`), read from the counts."""
        if self._skip_reading is None:
            self._skip_reading = read_skips(
                self.trials, self.failures, self.skips, self.settings.confidence
            )
        return self._skip_reading

    @property
    def hiding(self) -> np.ndarray:
        """Runnable commits whose skips read as the failure."""
        return self.skip_reading.hiding & ~self.unrunnable

    @property
    def untestable(self) -> np.ndarray:
        """Unrunnable or hiding: no probe goes there."""
        return self.unrunnable | self.hiding

    def posterior(self) -> Posterior:
        if self._posterior is None:
            self._posterior = culprit_posterior(
                self._evidence(), self._bad_prior, self._good_prior, self.prior
            )
        return self._posterior

    def _evidence(self) -> RunCounts:
        """The runs the posterior reads: none of a commit whose skips may hide its failures."""
        counted = ~self.skip_reading.hiding
        return RunCounts(
            self.trials * counted, self.failures * counted, self.good_trials, self.good_failures
        )

    def result(self) -> Result:
        if self._result is None:
            self._result = self._summarize()
        return self._result

    def _summarize(self) -> Result:
        post = self.posterior()
        groups = skip_groups(self.untestable)
        masses = np.bincount(groups, weights=post.probs)
        best_group = np.flatnonzero(groups == int(np.argmax(masses)))
        culprit = int(np.argmax(post.probs))
        top = np.argpartition(-post.probs, min(RUNNERS_UP, len(post.probs) - 1))[: RUNNERS_UP + 1]
        order = top[np.lexsort((top, -post.probs[top]))]
        runners_up = tuple((int(j), float(post.probs[j])) for j in order if j != culprit)[
            :RUNNERS_UP
        ]
        group_mass = float(masses.max())
        sure = group_mass >= self.settings.confidence and self._holds_at_a_low_p(best_group)
        held_by = self._held_by(best_group) if sure else None
        return Result(
            state=self._state(post, best_group, sure, held_by),
            culprit=culprit,
            probability=float(post.probs[culprit]),
            group=tuple(int(j) for j in best_group),
            group_probability=group_mass,
            runners_up=runners_up,
            mean_p_bad=post.mean_p_bad,
            mean_p_good=post.mean_p_good,
            trials=self.finished_trials,
            held_by=held_by,
        )

    def _held_by(self, group: np.ndarray) -> int | None:
        """The commit just before ``group``, if its skips may yet be the failure."""
        before = int(group[0]) - 1
        return before if before >= 0 and self.skip_reading.unread[before] else None

    def _state(self, post: Posterior, group: np.ndarray, sure: bool, held_by: int | None) -> State:
        if not post.consistent:
            return State.CONTRADICTION
        if sure and held_by is None:
            return State.FOUND if len(group) == 1 else State.SKIPPED
        if self.finished_trials >= self.settings.max_trials:
            return State.BUDGET
        if sure:
            return State.RUNNING  # its probes go to ``held_by``
        if splitting_commit(post, ~self.untestable) is None:
            return State.EXHAUSTED
        return State.RUNNING

    def _holds_at_a_low_p(self, group: np.ndarray) -> bool:
        """Whether the culprit keeps the confidence if a bad commit fails as rarely as its runs allow.

        The integrated posterior leans on p: a learned p that came out high (40 stored runs at
        p = 0.05 hold 3 or more failures a third of the time; failures that happen to cluster near
        the bad end) reads passes at a truly bad commit as proof that it is good, and a "95%"
        culprit after the true one was right 0.88-0.92 of the time (docs/bisection.md,
        "Calibration"). So whenever p is learned the culprit must also hold with p fixed at the
        lower ``1 - confidence`` quantile of its posterior from the runs the claim calls bad (the
        group's first commit onwards, and the stored ones). This used to apply only once a
        good-side run had failed; a search whose good side never failed stopped on the integrated
        posterior alone, and that is the traced wrong answer of issue 27.
        """
        if self.settings.p_bad is not None:
            return True
        first = int(group[0])
        evidence = self._evidence()
        failed = float(evidence.failures[first:].sum())
        passed = float(evidence.trials[first:].sum()) - failed
        low_p = float(
            betaincinv(
                self._bad_prior.a + failed,
                self._bad_prior.b + passed,
                1.0 - self.settings.confidence,
            )
        )
        cautious = culprit_posterior(evidence, RatePrior(known=low_p), self._good_prior, self.prior)
        return float(cautious.probs[group].sum()) >= self.settings.confidence

    def _pending(self, in_flight: Mapping[Config, int]) -> list[int]:
        pending: list[int] = []
        for config, count in in_flight.items():
            i = GOOD_END if config.commit == self.good else self._index.get(config.commit or "")
            if i is not None:
                pending += [i] * count
        return pending

    def _held_runs(self, pending: list[int], slots: int) -> list[Config]:
        """The free slots while unread skips hold the answer, appended to ``pending``: to the
        commit that holds it, and to the nearest testable commit that fails while the failing
        commits have had fewer runs, so that both skip shares it is read by are known."""
        held_by = self.result().held_by
        if held_by is None:
            return []
        showing = failing(self.failures)
        testable = np.flatnonzero(showing & ~self.untestable)
        after = testable[testable > held_by]  # the nearest failing commit past it, if any
        chosen: list[Config] = []
        for _ in range(slots):
            held = self.trials[held_by] + self.skips[held_by] + pending.count(held_by)
            compared = (self.trials + self.skips)[showing].sum() + sum(
                pending.count(int(j)) for j in testable
            )
            i = int(after[0]) if after.size and compared < held else held_by
            pending.append(i)
            chosen.append(self.config_for(self.candidates[i]))
        return chosen

    def _bad_end_runs(self, pending: list[int], slots: int) -> list[Config]:
        """First runs at the bad end when p_bad is learned; appended to ``pending``.

        They give p a start before the search leans on it. The good end gets no such quota:
        information gain asks for its runs once q matters (simulated, that took 8% fewer
        trials than 10 fixed runs there, and was more often right at q = 0.03).
        """
        last = len(self.candidates) - 1
        if self.settings.p_bad is None and not self.untestable[last]:
            done = (
                self.trials[last]
                + self.errors[last]
                + pending.count(last)
                + self.settings.stored_bad_runs
            )
            missing = max(0, min(self.settings.bad_end_trials - int(done), slots))
            pending += [last] * missing
            return [self.config_for(self.candidates[last])] * missing
        return []
