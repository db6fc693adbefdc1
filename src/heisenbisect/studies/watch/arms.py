"""The lines a spec's watch follows: the baseline, and each arm the last ``bisect run`` decided
``eliminates`` or ``reduces``, read from the screening's store.

A decided arm is a claim about the code it ran on: "with this change the failure is gone" or
"rarer". A later commit can break it while the baseline stays as it was (the fix stops working),
so each such arm is watched under its own config as a line of steps of its own. Its first step
holds the new head to the screening's runs of the arm (for an eliminator: n runs, none failed),
plus fresh runs of the arm at the baseline's last known good; later steps to its own last good.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Verdict
from heisenbisect.store import Store
from heisenbisect.studies.commits.prepare import parse_config
from heisenbisect.studies.common import REPORT_TOLERATES
from heisenbisect.studies.identity import RULE, spec_identity
from heisenbisect.studies.screening import screening_kind

WAY_OUT = "the arms are read from the last `bisect run` of this spec: run it again first"
WATCHED_VERDICTS = (Verdict.ELIMINATES.value, Verdict.REDUCES.value)


@dataclass(frozen=True)
class Line:
    """One config the watch follows: its claim and what the screening measured of it."""

    config: Config
    claim: str = "baseline"  # or the arm's verdict: eliminates, reduces
    recorded: tuple[int, int] = (0, 0)  # the screening's (runs, failed runs) of the arm

    @property
    def key(self) -> str:
        return self.config.key

    @property
    def assignments(self) -> list[str]:
        """The config as ``--config FACTOR=LEVEL`` words, for the arm's bisection."""
        return [f"{name}={label}" for name, label in self.config.changes]


BASELINE = Line(Config())


def decided_arms(spec: Spec, spec_dir: Path, screening: Path | None) -> list[Line]:
    """The arms the screening store at ``screening`` decided eliminates or reduces; none without
    factors or without a store (the watch then follows the baseline alone)."""
    if screening is None or not spec.factors or not screening.exists():
        return []
    kind = screening_kind(spec)
    with Store(screening) as store:
        # the verdicts must be this spec's: a store of other factors or another target is
        # refused as `bisect report` refuses it (a target's files edited since are tolerated)
        store.bind(spec_identity(spec, spec_dir), "spec", (REPORT_TOLERATES,), WAY_OUT, rule=RULE)
        result = kind.replayed(spec, store).result()
    _, verdicts = kind.verdicts(result)
    lines = []
    for arm in verdicts:
        if arm.verdict not in WATCHED_VERDICTS:
            continue
        config = parse_config(spec, arm.change.split(", "))
        recorded = (arm.runs or 0, arm.failed_runs or 0)
        lines.append(Line(config, arm.verdict, recorded))
    return lines
