"""Culprit verification: fresh interleaved runs at a named culprit and the commit (or version)
just before it, until a sequential test says the culprit fails more often, or that it does not.

Trusted culprit finders re-check before they blame (LUCI Bisection reruns the suspect and its
parent; syzbot and Findit re-test): a posterior computed from the very runs that chose the
culprit is not a second opinion. The rules, in the order they are read round by round:

- **verified**: `decide.paired`'s test says the culprit's rate is above its predecessor's, at
  level ``1 - confidence`` (Ville's bound: whenever it stops);
- **not verified**: the same test's lower boundary (the predecessor fails as often), or the
  culprit's own runs fit a good commit's rate (`decide.sprt`, Wald's test of p against q: a
  culprit that stopped failing), or ``max_rounds`` rounds without a decision, or a side whose
  runs keep failing to run.

With a third side (the bad end with the culprit reverted) the same paired test, culprit against
the revert, is read at the round the verification stopped: "the revert fixes it" when it says
the culprit fails more often. It never decides the verification; it is reported beside it.

`VerifyStrategy` drives it on the engine (`studies.commits.verify`); `verify_runs` drives it
with one callable per side, for a study whose candidates are not commits (`bisect versions`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from heisenbisect.decide.paired import Paired, PairedTest, scan, theta_for
from heisenbisect.decide.sprt import Decision, SequentialTest
from heisenbisect.decide.strategy import fewest_runs_first
from heisenbisect.records import Config, Outcome, TrialStatus

Run = bool | None  # True failed, False passed, None did not run cleanly (error, timeout, skip)


class VerifyState(str, enum.Enum):
    RUNNING = "running"
    VERIFIED = "verified"
    NOT_VERIFIED = "not_verified"


@dataclass(frozen=True)
class VerifySettings:
    """The rates the search settled on (given, or its posterior means) and the test's limits."""

    p_bad: float
    p_good: float
    confidence: float = 0.95
    max_rounds: int = 150
    max_errors: int = 3  # runs of one side that did not run cleanly before it gives up
    unit: str = "commit"  # what the candidates are, as the reasons name them ("version")

    @property
    def miss(self) -> float:
        """The chance each way of ending "not verified" at a true culprit: a fifth of the
        alpha, since a true culprit's verification is then missed by either of two tests
        (at 1 - confidence each, 9-10% of true culprits went unverified in simulation)."""
        return (1.0 - self.confidence) / 5.0

    def paired(self) -> PairedTest:
        error = 1.0 - self.confidence
        return PairedTest(theta_for(self.p_bad, self.p_good), alpha=error, beta=self.miss)

    def culprit_alone(self) -> SequentialTest:
        """Wald's test of the culprit's own runs: failing at p (bad) or at q (good); only its
        "good" answer is read, which it gives a bad commit with chance about `miss`."""
        q = min(max(self.p_good, 0.0), 0.5)
        p = min(max(self.p_bad, 2.0 * q, 0.02), 1.0)
        return SequentialTest(p_bad=p, p_good=q, confidence=1.0 - self.miss)


@dataclass(frozen=True)
class Side:
    """One side's verification runs: ``runs`` ran cleanly, ``failed`` of them failed."""

    runs: int = 0
    failed: int = 0
    errors: int = 0

    @property
    def rate(self) -> float:
        return self.failed / self.runs if self.runs else 0.0

    def text(self) -> str:
        errors = f", {self.errors} did not run" if self.errors else ""
        return f"{self.failed} of {self.runs} runs failed ({self.rate:.3f}){errors}"


@dataclass(frozen=True)
class Verification:
    """What the verification found: its state, each side's runs, and why it stopped."""

    state: VerifyState
    culprit: Side
    before: Side
    revert: Side | None  # the bad end with the culprit reverted; None when it was not run
    revert_fixes: bool | None  # the culprit fails more often than the revert; None: undecided
    rounds: int  # rounds read when it stopped
    runs: int  # every verification run, on every side, errors included
    reason: str

    @property
    def verified(self) -> bool:
        return self.state is VerifyState.VERIFIED


def judge(
    culprit: Sequence[Run],
    before: Sequence[Run],
    settings: VerifySettings,
    revert: Sequence[Run] | None = None,
) -> Verification:
    """The verification's state after these runs (each side in the order its runs were
    submitted); rounds past the decision never change it."""
    a = [r for r in culprit if r is not None]
    b = [r for r in before if r is not None]
    sides = [culprit, before, *([revert] if revert is not None else [])]
    runs = sum(len(s) for s in sides)
    test = settings.paired()
    alone = settings.culprit_alone()
    a_only = b_only = rounds = 0
    state, reason = VerifyState.RUNNING, ""
    for failed_a, failed_b in zip(a, b, strict=False):
        if rounds >= settings.max_rounds:
            break
        rounds += 1
        a_only += failed_a and not failed_b
        b_only += failed_b and not failed_a
        decided = test.decision(a_only, b_only)
        if decided is Paired.ABOVE:
            state, reason = VerifyState.VERIFIED, "the culprit fails more often than before it"
        elif decided is Paired.NOT_ABOVE:
            state = VerifyState.NOT_VERIFIED
            reason = f"the {settings.unit} before the culprit fails as often as the culprit"
        elif alone.update(failed_a) is Decision.GOOD:
            state = VerifyState.NOT_VERIFIED
            reason = f"the culprit's fresh runs fit a good {settings.unit}'s failure rate"
        if state is not VerifyState.RUNNING:
            break
    if state is VerifyState.RUNNING:
        if rounds >= settings.max_rounds:
            state = VerifyState.NOT_VERIFIED
            reason = f"no decision in {rounds} rounds (at most {settings.max_rounds})"
        elif any(s.count(None) >= settings.max_errors for s in sides):
            state = VerifyState.NOT_VERIFIED
            reason = f"a side did not run cleanly {settings.max_errors} times"
    shown = slice(0, rounds)
    fixes = None
    if revert is not None:
        r = [x for x in revert if x is not None]
        reverted = scan(test, a[shown], r[shown], rounds).decision
        fixes = {Paired.ABOVE: True, Paired.NOT_ABOVE: False}.get(reverted)
    return Verification(
        state=state,
        culprit=_side(a[shown], culprit),
        before=_side(b[shown], before),
        revert=None if revert is None else _side(_clean(revert)[shown], revert),
        revert_fixes=fixes,
        rounds=rounds,
        runs=runs,
        reason=reason,
    )


def _clean(runs: Sequence[Run]) -> list[bool]:
    return [r for r in runs if r is not None]


def _side(read: Sequence[bool], every: Sequence[Run]) -> Side:
    return Side(runs=len(read), failed=sum(read), errors=sum(r is None for r in every))


def verify_runs(
    run_culprit: Callable[[], Run],
    run_before: Callable[[], Run],
    settings: VerifySettings,
    run_revert: Callable[[], Run] | None = None,
) -> Verification:
    """Verify with one callable per side (each runs the target once: True failed, False passed,
    None did not run cleanly), called in interleaved rounds until `judge` decides."""
    sides: list[list[Run]] = [[], [], *([[]] if run_revert is not None else [])]
    calls = [run_culprit, run_before, *([run_revert] if run_revert is not None else [])]
    while True:
        found = judge(sides[0], sides[1], settings, sides[2] if run_revert is not None else None)
        if found.state is not VerifyState.RUNNING:
            return found
        for runs, call in zip(sides, calls, strict=True):
            runs.append(call())


@dataclass
class VerifyStrategy:
    """`judge` as a `Strategy`: the culprit, its predecessor and (optionally) the revert, kept
    level run for run; outcomes are placed by trial index, so a replay judges the same runs."""

    culprit: Config
    before: Config
    settings: VerifySettings
    revert: Config | None = None
    _runs: dict[Config, dict[int, Run]] = field(default_factory=dict)

    def configs(self) -> list[Config]:
        """The sides in the order a round runs them: the revert before the predecessor, whose
        run completes the pair the decision reads, so the revert is never a round short."""
        return [self.culprit, *([self.revert] if self.revert is not None else []), self.before]

    def observe(self, config: Config, outcome: Outcome) -> None:
        if config not in self.configs():
            return
        run = outcome.failed if outcome.status is TrialStatus.OK else None
        self._runs.setdefault(config, {})[outcome.index] = run

    def runs_of(self, config: Config) -> list[Run]:
        by_index = self._runs.get(config, {})
        return [by_index[i] for i in sorted(by_index)]

    def result(self) -> Verification:
        revert = None if self.revert is None else self.runs_of(self.revert)
        return judge(self.runs_of(self.culprit), self.runs_of(self.before), self.settings, revert)

    def propose(self, in_flight: Mapping[Config, int], slots: int) -> list[Config]:
        if self.finished():
            return []
        configs = self.configs()
        done = {c: len(self.runs_of(c)) for c in configs}
        cap = self.settings.max_rounds + self.settings.max_errors
        return fewest_runs_first(configs, done, in_flight, slots, cap)

    def obsolete(self, in_flight: Mapping[Config, int]) -> list[Config]:
        return list(in_flight) if self.finished() else []

    def finished(self) -> bool:
        return self.result().state is not VerifyState.RUNNING
