"""A watched branch's history: every step (a head recorded, or a new head compared with the last
known good), kept in the watch's store beside the runs, so a call that died mid-step resumes it.

A step's runs are the store's outcomes from ``first_outcome`` on (steps never overlap: one
watcher per store, by its lock); the step itself is a JSON record in the store's meta, rewritten
as it moves on (running, then bisecting, then its result).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from heisenbisect.store import Store

HISTORY_KEY = "watch_steps"
SPEC_KEY = "watch_spec"  # the text of the spec the last step ran from

RECORD = "record"  # the first head: its rate bounded
COMPARE = "compare"  # a new head against the last known good

RUNNING = "running"
BISECTING = "bisecting"  # worse: the bisection between the last known good and the head under way
GOOD = "good"  # recorded, or not worse: the head is the last known good now
UNDECIDED = "undecided"  # neither worse nor within the margin at the cap: the good stays
REGRESSION = "regression"  # worse, bisected
STILL_WORSE = "still_worse"  # worse again while an earlier regression is still open
NO_VALID_RUNS = "no_valid_runs"


@dataclass(frozen=True)
class Step:
    """One call's work, as the store keeps it."""

    number: int
    kind: str
    head: str
    first_outcome: int  # the store's outcome count when the step began
    started_at: float
    config: str = "baseline"  # the config key watched (a spec's arm, or the baseline)
    good: str | None = None  # compare: the last known good it ran against
    recorded: tuple[int, int] = (0, 0)  # compare: the good's runs and failed runs recorded before
    status: str = RUNNING
    runs: int = 0  # the head's ok runs in this step
    failed: int = 0
    low: float = 0.0  # the head's rate bounds, one-sided at the confidence
    high: float = 1.0
    good_runs: int = 0  # compare: the good's fresh runs in this step
    good_failed: int = 0
    p_value: float | None = None  # compare: the spent one-sided p-value
    trials: int = 0  # every trial the step ran, errors included (the bisection's apart)
    bisection: str | None = None  # the bisection's folder
    bisection_trials: int = 0
    culprit: str | None = None
    headline: str | None = None
    report: str | None = None  # the paste-ready report
    hook: list[str] = field(default_factory=list)  # what --on-regression said

    @property
    def finished(self) -> bool:
        return self.status not in (RUNNING, BISECTING)


class History:
    """The steps of one watch store, oldest first; every change is written through at once."""

    def __init__(self, store: Store):
        self.store = store
        self.steps = parsed(store.meta(HISTORY_KEY))

    def save(self, step: Step) -> Step:
        self.steps = [s for s in self.steps if s.number != step.number] + [step]
        self.steps.sort(key=lambda s: s.number)
        self.store.set_meta(HISTORY_KEY, json.dumps([asdict(s) for s in self.steps]))
        return step

    def update(self, step: Step, **changes: object) -> Step:
        return self.save(replace(step, **changes))  # type: ignore[arg-type]

    def start(self, kind: str, head: str, config: str, **more: object) -> Step:
        number = (self.steps[-1].number + 1) if self.steps else 1
        begun = Step(number, kind, head, self.store.count(), time.time(), config)
        return self.save(replace(begun, **more))  # type: ignore[arg-type]

    def unfinished(self, config: str) -> Step | None:
        return next((s for s in self.of(config) if not s.finished), None)

    def of(self, config: str) -> list[Step]:
        return [s for s in self.steps if s.config == config]

    def last_good(self, config: str) -> Step | None:
        """The step whose head is the last known good: its runs are what a new head is held to."""
        return next((s for s in reversed(self.of(config)) if s.status == GOOD), None)

    def last_head(self, config: str) -> str | None:
        """The newest head a step looked at: a branch still there has no new commit."""
        steps = self.of(config)
        return steps[-1].head if steps else None

    def open_regression(self, config: str) -> Step | None:
        """A regression not followed by a good head since: the culprit is still in the branch."""
        for step in reversed(self.of(config)):
            if step.status == GOOD:
                return None
            if step.status == REGRESSION:
                return step
        return None


def parsed(text: str | None) -> list[Step]:
    return [Step(**{**s, "recorded": tuple(s["recorded"])}) for s in json.loads(text or "[]")]


def read_history(path: Path) -> list[Step]:
    """The steps in the store at ``path``, read-only and without the lock (a watcher may be
    running): what ``bisect watch --log`` prints."""
    return parsed(read_meta(path, HISTORY_KEY))


def read_meta(path: Path, key: str) -> str | None:
    if not path.exists():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def nothing_new(path: Path, head: str, spec: Path, config: str = "baseline") -> Step | None:
    """The last step, when every step is finished, the newest looked at ``head``, and the watch
    spec is the one the store was bound to (its text is part of the history)."""
    steps = [s for s in read_history(path) if s.config == config]
    same = read_meta(path, SPEC_KEY) == (spec.read_text() if spec.is_file() else None)
    if same and steps and all(s.finished for s in steps) and steps[-1].head == head:
        return steps[-1]
    return None
