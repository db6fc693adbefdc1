"""What a screening report says beside its verdicts, as the study judged it
(`studies.judgement`): how good the evidence is, where the study ran, its cautions and the
launch-independence test. The reports only word it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.cautions import Cautions
from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.launches import LaunchCheck
from heisenbisect.reports import cautions as cautions_section
from heisenbisect.reports.launches import launch_note


@dataclass(frozen=True)
class ReportContext:
    """What a report says beside the verdicts: how good the evidence is and where it ran."""

    evidence: Evidence = field(default_factory=Evidence)
    environment: dict | None = None
    target_folder: Path | None = None
    cautions: Cautions | None = (
        None  # the verdicts may depend on the machine's load, or pool commits
    )
    launches: LaunchCheck | None = None  # several runs per server launch: independent or not

    @property
    def load_caution(self) -> str | None:
        """The cautions as the report words them (`reports.cautions`)."""
        return cautions_section.markdown(self.cautions)

    @property
    def launch_note(self) -> str | None:
        return launch_note(self.launches)
