"""A head that got worse: bisect between the last known good and it, write the paste-ready report,
run ``--on-regression``.

The bisection is `studies.commits`' own, through its public entry (`bisect_commits`), so what
that study does to a culprit (culprit verification included) applies here too. What the watch
already measured enters it as the bisection's own marks (`studies.commits.marks`): the last known
good's runs (recorded and fresh) at its good end, the head's at its bad end, so the rates it
learns start from them. A call killed while bisecting resumes the bisection from its store.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from heisenbisect.git import CommitInfo, describe, open_repo
from heisenbisect.reports.watch import regression_report
from heisenbisect.runners.factory import RunnerMaker
from heisenbisect.studies.commits.marks import Verb, marks_of, record_mark
from heisenbisect.studies.commits.prepare import open_commits_store, parse_config, prepare
from heisenbisect.studies.commits.study import bisect_commits
from heisenbisect.studies.options import Options, loaded
from heisenbisect.studies.watch import history as h
from heisenbisect.studies.watch.specs import write_bisection_spec

if TYPE_CHECKING:
    from heisenbisect.studies.watch.arms import Line
    from heisenbisect.studies.watch.options import WatchOptions

HOOK_TIMEOUT_S = 600.0  # an `gh issue create` that hangs must not hold the next night's watch


@dataclass(frozen=True)
class Regression:
    step: h.Step
    lines: tuple[str, ...]
    report: Path


def bisect_regression(
    step: h.Step,
    line: Line,
    history: h.History,
    options: WatchOptions,
    root: Path,
    runners: RunnerMaker,
) -> Regression:
    """Bisect ``step``'s range (resuming) under ``line``'s config (a decided arm's, as
    ``bisect commits --config``), write ``regression-NNNN.md``, run the hook."""
    assert step.good is not None
    good_sha = step.good
    paths = options.paths
    confidence = options.settings.confidence
    # written again on resume: the same text, so the bisection's store accepts it
    spec_path = write_bisection_spec(
        Path(options.study.spec), paths, step.number, root, good_sha, step.head, confidence
    )
    step = history.update(step, bisection=str(spec_path.parent))
    study = replace(options.study, spec=str(spec_path), out=None, fresh=False)
    marked = _mark_ends(step, study, line.assignments)
    print(
        f"regression: bisecting {good_sha[:10]}..{step.head[:10]} ({spec_path.parent})",
        file=sys.stderr,
    )
    found = bisect_commits(study, line.assignments, runners)  # the commit study's public entry
    repo = open_repo(root)
    try:
        good, head = describe(repo, good_sha), describe(repo, step.head)
        culprit: CommitInfo | None = describe(repo, found.culprit) if found.culprit else None
    finally:
        repo.close()
    watched = options.command
    if line.assignments:
        watched += f", the arm {line.key} (decided {line.claim}: this change no longer holds)"
    text = regression_report(
        step, good, head, culprit, found.headline, confidence, found.report, watched
    )
    report = paths.regression(step.number)
    report.write_text(text)
    hook = run_hook(options.on_regression, report)
    step = history.update(
        step,
        status=h.REGRESSION,
        culprit=found.culprit,
        headline=found.headline,
        report=str(report),
        bisection_trials=found.trials - marked,
        hook=hook,
    )
    named = f"culprit {culprit.short} {culprit.subject}" if culprit else found.headline
    lines = (f"regression: {named}", f"report: {report}", *hook)
    return Regression(step, lines, report)


def _mark_ends(step: h.Step, study: Options, assignments: list[str]) -> int:
    """Record the watch's runs at both ends in the bisection's store, once; returns their number."""
    assert step.good is not None
    spec, _ = loaded(study)
    commit_study = prepare(spec, Path(study.spec), parse_config(spec, assignments))
    ends = (
        (step.good, step.recorded[0] + step.good_runs, step.recorded[1] + step.good_failed),
        (step.head, step.runs, step.failed),
    )
    with open_commits_store(commit_study, fresh=False) as store:
        done = {m.sha for m in marks_of(store)}
        for sha, runs, failed in ends:
            if runs and sha not in done:
                verb: Verb = "bad" if failed else "good"
                record_mark(
                    store, commit_study.range, commit_study.base, verb, sha, sha, runs, failed
                )
    return sum(runs for _, runs, _ in ends)


def run_hook(command: str | None, report: Path) -> list[str]:
    """``--on-regression CMD``: run through the shell with the report's path as its last word
    (and in ``HEISENBISECT_REPORT``); its output goes to stderr. Returns what to print."""
    if not command:
        return []
    line = f"{command} {shlex.quote(str(report))}"
    env = {**os.environ, "HEISENBISECT_REPORT": str(report)}
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", line],
            env=env,
            capture_output=True,
            text=True,
            timeout=HOOK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return [f"--on-regression: still running after {HOOK_TIMEOUT_S:.0f} s, stopped: {line}"]
    sys.stderr.write(done.stdout + done.stderr)
    if done.returncode:
        return [f"--on-regression: exited {done.returncode}: {line}"]
    return [f"--on-regression: ran {line}"]
