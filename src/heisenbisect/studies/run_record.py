"""What a study writes about its own runs in the store's meta table, for its reports to read.

Where and how it ran: a race's rate depends on the machine and on how many trials share it
(or a GPU), so a report that cannot say where its numbers came from cannot be reproduced.
Recorded when it runs (``bisect report`` may re-render elsewhere), as `heisenbisect.machine`
describes the machine. Each run of the study (the first and
every resume) adds a session: the 1-minute load average when it started and when it ended,
its trials in flight and the target's commit. And the verdicts each rendered report gave, so a later report can
say that one changed (`decide.cautions` reads both as evidence: README, "Reading a report").
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from heisenbisect.decide.group.strategy import GroupResult
from heisenbisect.decide.screening import ScreeningResult
from heisenbisect.hypotheses.model import Spec
from heisenbisect.machine import describe, load_average
from heisenbisect.records import Verdict
from heisenbisect.runners.base import Runner
from heisenbisect.runners.registry import kind_of
from heisenbisect.store import Store
from heisenbisect.study_meta import FINISHED_KEY, META_KEY, SESSIONS_KEY, sessions_of

VERDICTS_KEY = "reported_verdicts"  # {change: [every verdict a report gave it, in order]}
DECIDED = {
    v.value for v in (Verdict.ELIMINATES, Verdict.REDUCES, Verdict.NO_EFFECT, Verdict.INCREASES)
}


def record_start(
    store: Store, spec: Spec, target_folder: Path, runner: str, in_flight: int
) -> None:
    """Record this run's environment in the store (a resumed run records its own).

    ``in_flight`` is the runner's capacity, not the spec's ``parallel``: a local runner caps it at
    the GPUs' seats, so the spec's number can overstate how many trials shared the machine."""
    earlier = sessions_of(store)
    execution = spec.execution
    environment = describe(target_folder) | {
        "runner": runner,
        "parallel": in_flight,
        "gpus_per_trial": execution.gpus_per_trial,
        "trials_per_gpu": execution.trials_per_gpu,
        "started_at": time.time(),
        "command": " ".join(sys.argv),
    }
    load = environment.pop("load")
    store.set_meta(META_KEY, json.dumps(environment))
    session = {
        "started_at": environment["started_at"],
        "load_start": load,
        "in_flight": in_flight,
        "target_commit": environment.get("target_commit"),
    }
    store.set_meta(SESSIONS_KEY, json.dumps([*earlier, session]))


def record_finish(store: Store) -> None:
    """The end of this run: its time, and the load average it ends under (its own trials included)."""
    now = time.time()
    store.set_meta(FINISHED_KEY, str(now))
    sessions = sessions_of(store)
    if sessions:
        sessions[-1] |= {"finished_at": now, "load_end": load_average()}
        store.set_meta(SESSIONS_KEY, json.dumps(sessions))


class SessionRecorder:
    """This run's session in the store: its start once the engine submitted the first trials
    (the machine's probes, git and nvidia-smi, run then, beside them) and its finish only if it
    started, so a run that dispatched nothing records neither."""

    def __init__(self, store: Store, spec: Spec, target_folder: Path) -> None:
        self._store = store
        self._spec = spec
        self._target_folder = target_folder
        self.started = False

    def hook(self, runner: Runner) -> Callable[[], None]:
        """The engine's ``dispatched`` hook for trials submitted to ``runner``."""

        def start() -> None:
            record_start(
                self._store, self._spec, self._target_folder, kind_of(runner), runner.capacity
            )
            self.started = True

        return start

    def finish(self) -> None:
        """Record the end of a session that started; nothing for one that did not, nor once the
        store found no room (that error, not this write's, is the one to report)."""
        if self.started and not self._store.full:
            record_finish(self._store)


def verdicts_of(result: ScreeningResult | GroupResult) -> dict[str, str]:
    """``{"factor=level": verdict}`` of every change the result judges."""
    if isinstance(result, GroupResult):
        return {f"{c.change[0]}={c.change[1]}": c.verdict for c in result.changes}
    return {
        ", ".join(f"{f}={lv}" for f, lv in arm.config.changes): arm.verdict.value
        for arm in result.arms
    }


def remember(store: Store, verdicts: dict[str, str]) -> list[tuple[str, str, str]]:
    """Record this report's verdicts; return (change, earlier, now) for each change that an
    earlier report gave another decided verdict (an undecided one turning decided is no change)."""
    seen: dict[str, list[str]] = json.loads(store.meta(VERDICTS_KEY) or "{}")
    changed = []
    for change, verdict in verdicts.items():
        history = seen.setdefault(change, [])
        earlier = [v for v in history if v in DECIDED and v != verdict]
        if earlier:
            changed.append((change, earlier[-1], verdict))
        if verdict not in history:
            history.append(verdict)
    store.set_meta(VERDICTS_KEY, json.dumps(seen))
    return changed
