"""What a screening study decides about its stored trials beside the verdicts, once, for its
report and its answer: the evidence (and its refusals), the failed runs that crashed, the
cautions (load, commits) and the launch-independence test.

The rules are pure (`decide.evidence`, `decide.crashes`, `decide.cautions`, `decide.launches`);
this module reads what they need (the store's outcomes and meta, the logs' endings) and hands
the report a finished `ReportContext` that it only words.
"""

from __future__ import annotations

from pathlib import Path

from heisenbisect.decide.cautions import cautions_of
from heisenbisect.decide.crashes import CrashedRuns, crashed_runs
from heisenbisect.decide.evidence import evidence_of
from heisenbisect.decide.group.strategy import GroupResult
from heisenbisect.decide.launches import launches_of
from heisenbisect.decide.screening import ScreeningResult
from heisenbisect.reports.context import ReportContext
from heisenbisect.store import Store
from heisenbisect.studies.run_record import remember, verdicts_of
from heisenbisect.study_meta import environment_of
from heisenbisect.targets.log_endings import LogEndings


def judge(
    store: Store, result: ScreeningResult | GroupResult, target_folder: Path
) -> tuple[ReportContext, list[CrashedRuns]]:
    """The report's context and the failed runs that crashed; remembers the verdicts the report
    will give, so that a later report can say which changed (`run_record.remember`)."""
    changed = remember(store, verdicts_of(result))
    ran_in = environment_of(store)
    outcomes = store.outcomes()
    endings = LogEndings()  # the evidence and the crashes read each log once
    evidence = evidence_of(outcomes, endings)
    cautions = cautions_of(ran_in, changed)
    context = ReportContext(evidence, ran_in, target_folder, cautions, launches_of(outcomes))
    return context, crashed_runs(outcomes, endings)
