"""Skipped runs are evidence: a change whose runs skip more (or less) than the baseline's is not
judged on the runs that happened to end cleanly.

A run that ends in a could-not-run traceback, or exits 125, is skipped: it leaves the failure
statistics. When the target's own flaky failure is such a traceback (a lazily imported module
that is sometimes missing, a temp-file race raising FileNotFoundError at run time), the skips
take the failures with them, and the runs left over can make a change look as if it drove the
failure to zero.

So the skip rule is part of the stopping rule. At each of an arm's looks its skip share is
compared with the baseline's: Newcombe's interval on the difference, from exact Clopper-Pearson
bounds, with the look's share of alpha (alpha w_k, the screening's own split) in each tail. An
``eliminates`` or ``no_effect`` claim made at that look is *held*, and the arm runs on to its next
look, when the interval excludes zero (the change acts on its skips), when most of the arm's
attempts skipped (over `SKIP_BOUND`: the runs left are a selected few), or, for ``eliminates`` by
an arm that skipped at all, when the interval's upper end reaches ``zero_rate`` (were its extra
skips hidden failures, the rate could be that high). A false ``eliminates`` needs the upper end
below the true excess at some look: at most alpha w_k each, alpha in all. Only a claim still held
when the arm's budget ends is ``untestable``, and says why. `benchmarks/skips_calibration.py`
measures both sides: a skip-made ``eliminates`` stays at most alpha, and benign skips cost
little power. One-at-a-time screening (`decide.screening`) and group screening's claim arms
(`decide.group.claims`) both apply it.
Pure: counts in, decisions out.
"""

from __future__ import annotations

from dataclasses import dataclass

from heisenbisect.decide import stats
from heisenbisect.records import Verdict

SKIP_BOUND = 0.5  # most of an arm's attempts skipped: the runs left are not the arm's runs
GUARDED = (Verdict.ELIMINATES, Verdict.NO_EFFECT)  # the claims skips could fake
TRACEBACK_HINT = (
    "if that traceback is the failure itself, give the target `traceback_is_failure: true` and "
    "`result: exit` (`bisect trial --traceback-is-failure`), then rerun with --fresh"
)


@dataclass(frozen=True)
class Skips:
    """One config's attempts, how many were skipped, and the first skip's reason."""

    skipped: int
    attempts: int
    first: str = ""

    @property
    def share(self) -> float:
        return self.skipped / self.attempts if self.attempts else 0.0

    def text(self) -> str:
        return f"{self.share:.0%} ({self.skipped}/{self.attempts})"


@dataclass(frozen=True)
class SkipTest:
    """One look's comparison of an arm's skips with the baseline's: the interval on the arm's
    skip share minus the baseline's, with ``tail`` (the look's alpha w_k) in each tail."""

    arm: Skips
    baseline: Skips
    tail: float
    low: float
    high: float

    def holds(self, claim: Verdict, zero_rate: float) -> str:
        """Why skips could have made ``claim`` at this look ("" when they could not)."""
        if claim not in GUARDED:
            return ""
        if self.arm.share > SKIP_BOUND:
            why = f"most of its runs were skipped: {self.arm.text()}"
        elif self.low > 0.0 or self.high < 0.0:
            why = (
                f"its runs were skipped at another rate than the baseline's: {self.arm.text()} "
                f"against {self.baseline.text()} ({self._interval()})"
            )
        elif claim is Verdict.ELIMINATES and self.arm.skipped and self.high >= zero_rate:
            why = (
                f"its skipped runs, {self.arm.text()} against the baseline's "
                f"{self.baseline.text()}, may hide failures at up to {self.high:.0%} of its runs, "
                f"not below zero_rate {zero_rate:g} ({self._interval()})"
            )
        else:
            return ""
        first = self.arm.first or self.baseline.first
        return "; ".join(
            filter(None, (why, f"first skipped run: {first}" if first else "", hint(first)))
        )

    def _interval(self) -> str:
        confidence = 1.0 - 2.0 * self.tail
        return (
            f"difference {self.low:+.0%} to {self.high:+.0%} at {confidence:.1%}, "
            "Newcombe with Clopper-Pearson bounds"
        )


def skip_test(arm: Skips, baseline: Skips, tail: float) -> SkipTest:
    """The arm's skips against the baseline's at a look spending ``tail`` in each tail."""
    low, high = stats.newcombe_difference_interval(
        arm.skipped, arm.attempts, baseline.skipped, baseline.attempts, 1.0 - 2.0 * tail
    )
    return SkipTest(arm, baseline, tail, low, high)


def hint(first: str) -> str:
    """The way out a skip's reason suggests: a traceback may be the failure."""
    return TRACEBACK_HINT if "could not run" in first or "Error" in first else ""


def baseline_hidden(baseline: Skips) -> str:
    """What to say of a baseline that never failed while some of its runs were skipped: its
    failure may be the traceback that skipped them (not "cannot reproduce")."""
    first = f" (first: {baseline.first})" if baseline.first else ""
    return f"the baseline never failed, but {baseline.text()} of its runs were skipped{first}; " + (
        hint(baseline.first) or "a skipped run may hide the failure"
    )
