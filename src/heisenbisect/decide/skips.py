"""Skipped runs are evidence: a change whose runs skip more (or less) than the baseline's is not
judged on the runs that happened to end cleanly.

A run that ends in a could-not-run traceback, or exits 125, is skipped: it leaves the failure
statistics. When the target's own flaky failure is such a traceback (a lazily imported module
that is sometimes missing, a temp-file race raising FileNotFoundError at run time), the skips
take the failures with them, and the runs left over can make a change look as if it drove the
failure to zero. So each arm's skip share is compared with the baseline's: Fisher's exact test
on the 2x2 table of skipped and not-skipped attempts, Holm across the family of arms; an arm
most of whose attempts skipped (over `SKIP_BOUND`) is judged on a selected few runs whatever
the test says; and a zero claim by an arm that skipped at all needs its skips beyond the
baseline's bounded below ``zero_rate`` (were every one of them a hidden failure, the rate would
still be below it). Such an arm cannot be ``eliminates`` or ``no_effect``: it is
``untestable``, and says why. `benchmarks/skips_calibration.py` measures that a skip-made
``eliminates`` stays at most alpha, and what the rule costs when skips do not depend on the
change.
Pure: counts in, decisions out.
"""

from __future__ import annotations

from collections.abc import Sequence
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
class SkipCheck:
    """An arm's skips against the baseline's: the Holm-adjusted p-value, the decision, and the
    most the arm's skips exceed the baseline's (an upper bound at the study's confidence)."""

    arm: Skips
    baseline: Skips
    p_value: float
    untestable: bool
    excess_upper: float = 0.0

    def hides_zero(self, zero_rate: float) -> bool:
        """Whether skips beyond the baseline's may hide failures at ``zero_rate`` or more: a
        zero claim holds only if they cannot (an arm that never skipped hides nothing)."""
        return self.arm.skipped > 0 and self.excess_upper >= zero_rate

    def note(self, zero_rate: float | None = None) -> str:
        """Why the arm is untestable: the two skip shares, the first traceback, the way out."""
        first = self.arm.first or self.baseline.first
        if self.arm.share > SKIP_BOUND:
            why = f"most of its runs were skipped: {self.arm.text()}"
        elif self.untestable:
            why = (
                f"its runs were skipped at another rate than the baseline's: {self.arm.text()} "
                f"against {self.baseline.text()} (Fisher, Holm-adjusted p = {self.p_value:.2g})"
            )
        else:
            why = (
                f"its skipped runs, {self.arm.text()} against the baseline's "
                f"{self.baseline.text()}, may hide failures at up to {self.excess_upper:.0%} of "
                f"its runs, not below zero_rate {zero_rate:g}"
            )
        return "; ".join(
            filter(None, (why, f"first skipped run: {first}" if first else "", hint(first)))
        )


def hint(first: str) -> str:
    """The way out a skip's reason suggests: a traceback may be the failure."""
    return TRACEBACK_HINT if "could not run" in first or "Error" in first else ""


def skip_checks(baseline: Skips, arms: Sequence[Skips], alpha: float) -> list[SkipCheck]:
    """One check per arm, Holm across the arms: untestable when the skip shares differ
    significantly (two-sided) or the arm's share is over `SKIP_BOUND`."""
    raw = [_pvalue(arm, baseline) for arm in arms]
    adjusted = stats.holm_adjust(raw) if raw else []
    return [
        SkipCheck(
            arm, baseline, p, p <= alpha or arm.share > SKIP_BOUND, _excess(arm, baseline, alpha)
        )
        for arm, p in zip(arms, adjusted)
    ]


def _excess(arm: Skips, baseline: Skips, alpha: float) -> float:
    """An upper bound on the arm's skip rate minus the baseline's, at confidence 1 - alpha: the
    arm's exact upper bound less the baseline's exact lower bound, alpha/2 each (Bonferroni)."""
    high = stats.clopper_pearson_interval(arm.skipped, arm.attempts, 1 - alpha)[1]
    low = stats.clopper_pearson_interval(baseline.skipped, baseline.attempts, 1 - alpha)[0]
    return max(0.0, high - low)


def _pvalue(arm: Skips, baseline: Skips) -> float:
    if not (arm.skipped or baseline.skipped) or not (arm.attempts and baseline.attempts):
        return 1.0
    from scipy.stats import fisher_exact  # scipy loads after the first trial starts (issue 24)

    table = [
        [arm.skipped, arm.attempts - arm.skipped],
        [baseline.skipped, baseline.attempts - baseline.skipped],
    ]
    return float(fisher_exact(table).pvalue)


def guarded(verdict: Verdict, check: SkipCheck | None, zero_rate: float) -> tuple[Verdict, str]:
    """``verdict`` unless skips could have made it: then ``untestable`` and the reason. A zero
    claim also needs the arm's excess skips bounded below ``zero_rate`` (`SkipCheck.hides_zero`)."""
    if check is None or verdict not in GUARDED:
        return verdict, ""
    hidden = verdict is Verdict.ELIMINATES and check.hides_zero(zero_rate)
    if not (check.untestable or hidden):
        return verdict, ""
    return Verdict.UNTESTABLE, f"untestable rather than {verdict.value}: {check.note(zero_rate)}"


def baseline_hidden(baseline: Skips) -> str:
    """What to say of a baseline that never failed while some of its runs were skipped: its
    failure may be the traceback that skipped them (not "cannot reproduce")."""
    first = f" (first: {baseline.first})" if baseline.first else ""
    return f"the baseline never failed, but {baseline.text()} of its runs were skipped{first}; " + (
        hint(baseline.first) or "a skipped run may hide the failure"
    )
