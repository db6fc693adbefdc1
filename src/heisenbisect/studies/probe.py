"""The probe behind `bisect validate --probe FILE`: run the baseline once and say, per factor,
whether it reached the target.

A misspelt variable passes every static check and then makes a study of nothing: the arm
runs, its factor never reaches the target, and only the full study says ``not_applied``.
One baseline run with the env-read tracker (`targets.env_reads`) tells it in seconds.

Exit codes: 0 every env factor's variable was read (or could have been: the environment was
copied whole, or no Python process ran to tell), 1 some variable was never read by any Python
process of the run, 2 bad input: a target that cannot run, or a run that ended in an error
(no result, a server that would not start): its factor lines would say nothing.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.decide.reach import ReadTally, reach_of
from heisenbisect.exit_codes import ExitCode
from heisenbisect.hypotheses import Spec
from heisenbisect.hypotheses.model import Factor
from heisenbisect.records import EnvReads, Outcome, TrialStatus, trial_seed
from heisenbisect.studies.common import trial_factory
from heisenbisect.targets.registry import make_target


@dataclass(frozen=True)
class ProbeResult:
    """What the one baseline run says: how it ran, a line per factor, the exit code."""

    summary: str
    factor_lines: list[tuple[str, str]]  # (factor name, what the run says of it)
    exit_code: ExitCode


def probe(spec: Spec, spec_path: Path) -> ProbeResult:
    """Run the baseline once and read each factor's reach; see the module doc for the exit code."""
    if spec.target.sglang is not None:
        summary = (
            "the sglang target's launch arguments are read back from each server it starts "
            "(docs/sglang.md); its env factors are not tracked"
        )
        return ProbeResult(summary, [], ExitCode.DECIDED)
    target = make_target(spec, spec_path.parent)
    trial = trial_factory(spec)(spec.baseline, 0, trial_seed(spec.study, spec.baseline.key, 0))
    with tempfile.TemporaryDirectory(prefix="heisenbisect-probe-") as folder:
        outcome = target.execute(trial, Path(folder) / "probe.log", threading.Event())
    summary = f"ran the baseline once: {_ending(outcome)}; {_processes(outcome.env_reads)}"
    if outcome.status is TrialStatus.ERROR:  # it could not run: what it read says nothing
        return ProbeResult(summary, [], ExitCode.USAGE)
    lines, unread = [], False
    for factor in spec.factors:
        line, never_read = factor_line(factor, outcome.env_reads)
        unread |= never_read
        lines.append((factor.name, line))
    return ProbeResult(summary, lines, ExitCode.UNDECIDED if unread else ExitCode.DECIDED)


def factor_line(factor: Factor, reads: EnvReads | None) -> tuple[str, bool]:
    """What one run says of one factor's variable, and whether it was never read."""
    if factor.kind != "env":
        return "an arg factor: arguments are not tracked", False
    var = factor.env_var
    if reads is None:
        return f"{var}: not tracked: no Python process ran", False
    tally = ReadTally()
    tally.add(reads)
    reach = reach_of(var, [tally])
    if var in reads.names:
        count = reads.names[var]
        return f"{var}: read by {count} Python process{'es' if count != 1 else ''}", False
    if reach.copied_in:
        return (
            f"{var}: not read by name, but the environment was copied whole at {reads.copied_at[0]}: "
            "it may have been read from the copy"
        ), False
    return f"{var}: never read{reach.did_you_mean()}", True


def _ending(outcome: Outcome) -> str:
    text = outcome.status.value
    if outcome.status is TrialStatus.OK:
        text += f" ({outcome.failures}/{outcome.total} failed)"
    return text + (f": {outcome.detail}" if outcome.detail else "")


def _processes(reads: EnvReads | None) -> str:
    if reads is None:
        return "no Python process started"
    return f"{reads.processes} Python process{'es' if reads.processes != 1 else ''} tracked"
