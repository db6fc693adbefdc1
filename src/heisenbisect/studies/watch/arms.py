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

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Verdict
from heisenbisect.store import Store
from heisenbisect.studies.commits.study import parse_config
from heisenbisect.studies.screening import screening_kind

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


def decided_arms(spec: Spec, screening: Path | None) -> list[Line]:
    """The arms the screening store at ``screening`` decided eliminates or reduces; none without
    factors or without a store (the watch then follows the baseline alone)."""
    if screening is None or not spec.factors or not screening.exists():
        return []
    kind = screening_kind(spec)
    try:
        with Store(screening) as store:
            result = kind.replayed(spec, store).result()
    except (KeyError, ValueError) as exc:
        raise HeisenbisectError(
            f"{screening}: its trials are not of this spec's factors ({exc}); "
            "run `bisect run` again, or watch without the arms (--out elsewhere)"
        ) from None
    _, verdicts = kind.verdicts(result)
    lines = []
    for arm in verdicts:
        if arm.verdict not in WATCHED_VERDICTS:
            continue
        config = parse_config(spec, arm.change.split(", "))
        recorded = (arm.runs or 0, arm.failed_runs or 0)
        lines.append(Line(config, arm.verdict, recorded))
    return lines
