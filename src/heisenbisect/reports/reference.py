"""The reference answers' section of report.md and paste.md: per config, what the passes cost,
how many near-ties were set aside, and which layer broke (`checks.reference_layers`)."""

from __future__ import annotations

from collections.abc import Iterable

from heisenbisect.checks.reference_layers import findings
from heisenbisect.decide.screening import ArmResult


def markdown_lines(arms: Iterable[tuple[str, ArmResult]]) -> list[str]:
    """A heading and, per labelled config whose runs compared answers, its findings; none when
    no run of the study had the reference check on."""
    lines: list[str] = []
    for label, arm in arms:
        if "reference_requests" not in arm.metrics:
            continue
        # an arm's metrics are means over its runs: the counts of all its runs are mean x runs
        summed = {name: value * arm.runs for name, value in arm.metrics.items()}
        summed["reference_logprobs"] = float(arm.metrics.get("reference_logprobs", 0) > 0)
        lines += [f"- `{label}` ({arm.runs} runs):"]
        lines += [f"  - {sentence}" for sentence in findings(summed)]
    if not lines:
        return []
    return ["## Reference answers: which layer broke", "", *lines, ""]
