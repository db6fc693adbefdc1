"""What the report says about launches: a server target with ``trials_per_launch`` > 1 is a mixed
design, so the report says whether a launch's runs looked independent, as `decide.launches`
tested them."""

from __future__ import annotations

from heisenbisect.decide.launches import ALPHA, LaunchCheck


def launch_note(check: LaunchCheck | None) -> str | None:
    """A paragraph on launch independence, or None when no run named its launch (one launch per trial)."""
    if check is None:
        return None
    head = (
        f"**Launches.** Up to {check.most_per_launch} runs per server launch ({check.runs} runs on "
        f"{check.launches} launches): launches are nested in configs, and the verdicts count runs as independent."
    )
    if check.p_value is None:
        return (
            f"{head} Whether a launch's runs are alike could not be tested (no config had two "
            "launches and both outcomes)."
        )
    if check.dependent:
        return (
            f"{head} **Runs of one launch are alike** (launch heterogeneity, permutation test p = "
            f"{check.p_value:.3g} < {ALPHA:g}): the failure is decided per launch, so the verdicts may be "
            "overconfident. Rerun with `trials_per_launch: 1` (one launch per trial), which makes the launch "
            "the unit."
        )
    return (
        f"{head} No sign that a launch's runs are alike (launch heterogeneity, permutation test p = "
        f"{check.p_value:.3g}); with few launches this test sees only strong per-launch effects "
        "(benchmarks/results/launch_independence.md)."
    )
