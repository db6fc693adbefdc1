"""Before a bisection names anything: does its failing end fail, and more often than the other end?

A range with its ends swapped (a fix bisected as a regression), or whose bad end does not
reproduce the failure, has no culprit; searched anyway, a learned p_bad below p_good can still
put 0.96 on the fix (issue 35). So runs at the failing end come first, interleaved with runs
at the passing end when its rate is learned, read in rounds (`decide.paired`):

- **sound** when a sequential test says the failing end fails more often than the passing
  end: the paired test (theta1 = `THETA1`) when q is learned; with q given, Wald's test of the
  failing end's runs, p (given, or `P1` when learned) against q (`decide.sprt`);
- **reversed** when the paired test says the passing end fails more often;
- **does not fail** when a given p is rejected by Wald's test (its runs fit q), or after
  ``end_runs`` runs at the failing end without one failure;
- after ``end_runs`` rounds otherwise undecided: reversed when the failing end failed fewer
  runs than the passing end, does not fail when it never failed; else the search goes on
  (failures were seen there, and the bisection learns the rates: `reversed_rates` refuses a
  learned p_bad below p_good before any culprit is printed).

Pure, and replayed from the store like the strategy: each end's runs are read in trial-index
order, and runs past the decision never change it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from heisenbisect.decide.commits import CommitStrategy, State
from heisenbisect.decide.paired import Paired, PairedTest, scan
from heisenbisect.decide.sprt import Decision, SequentialTest
from heisenbisect.decide.strategy import fewest_runs_first
from heisenbisect.records import Config, Outcome, TrialStatus

END_RUNS = 30  # runs at each end before an undecided check lets the search go on
THETA1 = 0.9  # a failing end fails in 9 of 10 rounds where only one end failed
P1 = 0.15  # a learned p's alternative when q is given: the smallest rate worth a bisection
MAX_ERRORS = 3  # runs at an end that did not run cleanly before the check stands aside


class RangeState(str, enum.Enum):
    PENDING = "pending"
    SOUND = "sound"  # the failing end fails more often than the passing end
    PLAUSIBLE = "plausible"  # undecided at end_runs, with failures at the failing end
    DOES_NOT_FAIL = "does_not_fail"
    REVERSED = "reversed"
    UNTESTABLE = "untestable"  # an end keeps failing to run: the bisection reports it as before

    @property
    def refused(self) -> bool:
        return self in (RangeState.DOES_NOT_FAIL, RangeState.REVERSED)


@dataclass(frozen=True)
class RangeSettings:
    p_bad: float | None = None
    p_good: float | None = None
    confidence: float = 0.95
    end_runs: int = END_RUNS

    @property
    def both_ends(self) -> bool:
        """Whether the passing end runs too: its rate is learned."""
        return self.p_good is None


@dataclass(frozen=True)
class RangeCheck:
    """The check's state and the runs it read at each end (runs, failed)."""

    state: RangeState
    failing: tuple[int, int]
    passing: tuple[int, int]

    def message(self, words: Wording) -> str:
        """The refusal's sentence (empty unless refused)."""
        f_runs, f_failed = self.failing
        p_runs, p_failed = self.passing
        passing = f"; the other end: {p_failed} of {p_runs}" if p_runs else ""
        seen = f"{f_failed} of {f_runs} runs at the {words.failing_end} failed{passing}"
        if self.state is RangeState.DOES_NOT_FAIL:
            return (
                f"the {words.failing_end} does not fail: {seen}. Check the range and the command; "
                f"a failure rarer than about 1 in 10 runs needs more runs there ({words.more_runs}) "
                "or amplifying first (bisect amplify)"
            )
        if self.state is RangeState.REVERSED:
            return f"the range looks reversed: {words.reversed_advice} ({seen})"
        return ""

    def refusal(self, words: Wording) -> Refusal | None:
        """The check's refusal, if it refused."""
        if not self.state.refused:
            return None
        return Refusal(self.state, self.message(words), self)


@dataclass(frozen=True)
class Refusal:
    """Why no culprit is named: the range check's state, its counts, and the sentence."""

    state: RangeState
    message: str
    check: RangeCheck


@dataclass(frozen=True)
class Wording:
    """How a refusal names things in a bisection's terms (commits or versions)."""

    failing_end: str = "bad end"
    more_runs: str = "commits.end_runs"  # where more runs at the ends are asked for
    reversed_advice: str = "rerun with --fix"
    unit: str = "commit"  # what a candidate is


def check_range(
    failing: Sequence[bool], passing: Sequence[bool], settings: RangeSettings, errors: int = 0
) -> RangeCheck:
    """The check after these runs (True: failed), each end in trial-index order."""
    n = settings.end_runs
    if settings.both_ends:
        rounds = min(len(failing), len(passing), n)
        test = PairedTest(THETA1, alpha=1 - settings.confidence, beta=1 - settings.confidence)
        forward = _first_decision(test, failing, passing, n)
        backward = _first_decision(test, passing, failing, n)
        if forward is not None and (backward is None or forward <= backward):
            state, rounds = RangeState.SOUND, forward
        elif backward is not None:
            state, rounds = RangeState.REVERSED, backward
        else:
            state = RangeState.PENDING
        read_failing, read_passing = failing[:rounds], passing[:rounds]
    else:
        state, read_failing = _one_end(failing, settings)
        read_passing = []
    if state is RangeState.PENDING and len(read_failing) >= n:
        if sum(read_failing) < sum(read_passing):
            state = RangeState.REVERSED  # undecided, but the failing end failed less often
        elif not any(read_failing):
            state = RangeState.DOES_NOT_FAIL
        else:
            state = RangeState.PLAUSIBLE
    if state is RangeState.PENDING and errors >= MAX_ERRORS:
        state = RangeState.UNTESTABLE
    return RangeCheck(
        state, (len(read_failing), sum(read_failing)), (len(read_passing), sum(read_passing))
    )


def _first_decision(
    test: PairedTest, a: Sequence[bool], b: Sequence[bool], max_rounds: int
) -> int | None:
    """The round at which ``test`` first says A fails more often than B (None: not by then)."""
    found = scan(test, a, b, max_rounds, stop_below=False)
    return found.rounds if found.decision is Paired.ABOVE else None


def _one_end(failing: Sequence[bool], settings: RangeSettings) -> tuple[RangeState, list[bool]]:
    """q given: Wald's test of the failing end's runs, p against q, read in order."""
    q = settings.p_good or 0.0
    p = settings.p_bad if settings.p_bad is not None else max(P1, min(2.0 * q, 1.0))
    if not p > q:
        return RangeState.PENDING, list(failing[: settings.end_runs])
    test = SequentialTest(p_bad=p, p_good=q, confidence=settings.confidence)
    read: list[bool] = []
    for failed in failing[: settings.end_runs]:
        read.append(failed)
        decided = test.update(failed)
        if decided is Decision.BAD:
            return RangeState.SOUND, read
        if decided is Decision.GOOD and settings.p_bad is not None:
            return RangeState.DOES_NOT_FAIL, read  # a learned p's zero-failure rule is below
    return RangeState.PENDING, read


@dataclass
class RangeCheckStrategy:
    """`check_range` as a `Strategy` over the two ends' configs, in interleaved rounds."""

    failing: Config
    passing: Config
    settings: RangeSettings
    _runs: dict[Config, dict[int, bool | None]] = field(default_factory=dict)

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config in (self.failing, self.passing):
            run = outcome.failed if outcome.status is TrialStatus.OK else None
            self._runs.setdefault(config, {})[outcome.index] = run

    def _clean(self, config: Config) -> list[bool]:
        by_index = self._runs.get(config, {})
        return [r for i in sorted(by_index) if (r := by_index[i]) is not None]

    def result(self) -> RangeCheck:
        errors = max(
            sum(r is None for r in self._runs.get(c, {}).values())
            for c in (self.failing, self.passing)
        )
        return check_range(
            self._clean(self.failing), self._clean(self.passing), self.settings, errors
        )

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        ends = [self.failing, *([self.passing] if self.settings.both_ends else [])]
        done = {c: len(self._runs.get(c, {})) for c in ends}
        return fewest_runs_first(ends, done, in_flight, slots, self.settings.end_runs + MAX_ERRORS)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return list(in_flight) if self.finished() else []

    def finished(self) -> bool:
        return self.result().state is not RangeState.PENDING


def reversed_rates(
    p_bad: float | None, p_good: float | None, mean_bad: float, mean_good: float
) -> bool:
    """Whether a bisection whose rates were learned believes bad commits fail *less* often than
    good ones: the model's culprit is then a fix, and naming it would blame the wrong change."""
    if p_bad is not None and p_good is not None:
        return False
    return mean_bad <= mean_good


def reversed_rates_refusal(
    strategy: CommitStrategy, check: RangeCheck, words: Wording
) -> Refusal | None:
    """A finished search whose learned rates put a bad candidate's below a good one's names a
    change in the other direction: refused, whatever its posterior says (`reversed_rates`)."""
    result = strategy.result()
    s = strategy.settings
    if result.state is State.RUNNING:
        return None
    if not reversed_rates(s.p_bad, s.p_good, result.mean_p_bad, result.mean_p_good):
        return None
    message = (
        f"the range looks reversed: {words.reversed_advice} (learned: a bad {words.unit} fails "
        f"in {result.mean_p_bad:.3f} of runs, a good one in {result.mean_p_good:.3f})"
    )
    return Refusal(RangeState.REVERSED, message, check)
