"""One step of `bisect watch` per call, so cron, a CI schedule or a systemd timer can run it.

- No step yet: the branch head's rate is bounded (`decide.watch.RecordStrategy`); it becomes
  the last known good. Exit 0.
- The head is the newest one a step looked at: nothing runs. Exit 0.
- A new head: interleaved runs against the last known good (`decide.watch.CompareStrategy`).
  Not worse: it becomes the last known good, exit 0. Undecided: the good stays, exit 0. Worse:
  the commit bisection between the two (`studies.watch.regression`), exit 1.

A call killed mid-step (a crash, a reboot) leaves the step ``running`` or ``bisecting`` in the
store; the next call finishes that step first, reusing every finished run. One watcher per
store: the study lock refuses a second one (exit 2).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

from heisenbisect.decide.watch import CompareStrategy, RecordStrategy, StepState
from heisenbisect.engine import Engine
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.exit_codes import ExitCode, signal_exit_code
from heisenbisect.git import remove_stale_worktrees
from heisenbisect.hypotheses.model import Spec
from heisenbisect.progress import make_progress
from heisenbisect.runners.factory import RunnerMaker, runner_maker
from heisenbisect.signals import signal_of
from heisenbisect.store import Store
from heisenbisect.studies.common import open_store, trial_factory
from heisenbisect.studies.identity import spec_identity
from heisenbisect.studies.options import StudyInterrupted, loaded
from heisenbisect.studies.watch import history as h
from heisenbisect.studies.watch.arms import BASELINE, Line, decided_arms
from heisenbisect.studies.watch.options import WatchOptions
from heisenbisect.studies.watch.regression import Regression, bisect_regression
from heisenbisect.studies.watch.specs import head_of, repo_root
from heisenbisect.targets.commit import CommitTarget, build_argv
from heisenbisect.targets.preflight import Problem, lines_of, probed_folder
from heisenbisect.targets.registry import make_target

NOTHING_NEW = "nothing_new"


@dataclass(frozen=True)
class WatchResult:
    """What one call did, as values; ``exit_code`` is the CLI's."""

    action: str  # nothing_new, or the step's status (good, undecided, regression, ...)
    exit_code: int
    head: str
    step: h.Step | None
    lines: tuple[str, ...]
    trials: int = 0  # trials this call ran, the bisection's included
    report: Path | None = None  # the paste-ready report of a regression


def watch_step(options: WatchOptions, runners: RunnerMaker | None = None) -> WatchResult:
    """Take one step on each watched line (the baseline, then each decided arm of a spec):
    record, compare, bisect, or nothing when the branch has not moved."""
    spec, spec_dir = loaded(options.study)
    root = _spec_repo(spec, spec_dir) if spec.commits else repo_root(options.repo)
    workdir = probed_folder(spec, spec_dir, root)
    if isinstance(workdir, Problem):
        raise SpecError(lines_of([workdir], Path(options.study.spec)))
    head = head_of(root, options.branch)
    identity = {
        **spec_identity(spec),
        "kind": "watch",
        "repo": str(root),
        "branch": options.branch,
    }
    paths = options.paths
    runners = runners or runner_maker(spec, options.study.runner, options.study.address)
    lines = [BASELINE, *decided_arms(spec, spec_dir, options.screening)]
    with open_store(
        paths.store, identity, options.study.fresh, "watch", paths.companions()
    ) as store:
        store.set_meta(h.SPEC_KEY, Path(options.study.spec).read_text())
        history = h.History(store)
        done: list[WatchResult] = []
        for line in lines:
            step = _step_of(line, history, head)
            if step is None:
                continue
            before = store.count()
            if step.status == h.RUNNING:
                step = _run_step(
                    step, line, history, store, spec, spec_dir, root, workdir, runners, options
                )
            trials = store.count() - before
            if step.status == h.BISECTING:
                regression = bisect_regression(step, line, history, options, root, runners)
                done.append(_regression_result(regression, head, trials))
            else:
                done.append(_result(step, head, trials, options.branch))
    if not done:
        last = history.of(BASELINE.key)[-1]
        return WatchResult(
            NOTHING_NEW,
            int(ExitCode.DECIDED),
            head,
            last,
            (
                f"no new commit: {options.branch} is still at {head[:10]} "
                f"(step {last.number}: {last.status}); nothing ran",
            ),
        )
    return _combined(done, head)


def _step_of(line: Line, history: h.History, head: str) -> h.Step | None:
    """The step ``line`` takes now: its unfinished one (resumed), a new one, or None."""
    step = history.unfinished(line.key)
    if step is not None:
        print(
            f"resuming step {step.number} ({step.kind} {step.head[:10]}, {step.status})",
            file=sys.stderr,
        )
        return step
    if line is BASELINE:
        return _next_step(history, head, line.key)
    return _next_arm_step(history, head, line)


def _combined(done: list[WatchResult], head: str) -> WatchResult:
    """One answer for the lines stepped: a regression (exit 1) before no valid runs (exit 4)
    before nothing to report; every line's lines, an arm's named by its config."""
    rank = {int(ExitCode.UNDECIDED): 2, int(ExitCode.NO_VALID_RUNS): 1}
    first = max(done, key=lambda r: rank.get(r.exit_code, 0))
    said: list[str] = []
    for r in done:
        config = r.step.config if r.step else BASELINE.key
        prefix = "" if config == BASELINE.key else f"arm {config}: "
        said.extend(prefix + line for line in r.lines)
    return replace(first, lines=tuple(said), trials=sum(r.trials for r in done))


def _spec_repo(spec: Spec, spec_dir: Path) -> Path:
    from heisenbisect.layout import commits_repo

    return repo_root(commits_repo(spec, spec_dir))


def _next_step(history: h.History, head: str, config: str) -> h.Step | None:
    """The step a call takes now, started in the store; None when the branch has not moved."""
    good = history.last_good(config)
    if history.last_head(config) == head:
        return None
    if good is None:
        return history.start(h.RECORD, head, config)
    return history.start(h.COMPARE, head, config, good=good.head, recorded=(good.runs, good.failed))


def _next_arm_step(history: h.History, head: str, line: Line) -> h.Step | None:
    """A decided arm's step at a new head: against the arm's last known good, or, before it has
    one, against the baseline's last known good with the screening's runs of the arm recorded
    (its claim). None when the arm already looked at ``head``, or the baseline has no compare at
    ``head`` (the first call records the baseline; the arm's claim is the screening's)."""
    if history.last_head(line.key) == head:
        return None
    good = history.last_good(line.key)
    if good is not None:
        recorded = (good.runs, good.failed)
        return history.start(h.COMPARE, head, line.key, good=good.head, recorded=recorded)
    baseline = history.of(BASELINE.key)
    if not baseline or baseline[-1].head != head or baseline[-1].good is None:
        return None
    return history.start(h.COMPARE, head, line.key, good=baseline[-1].good, recorded=line.recorded)


def _run_step(
    step: h.Step,
    line: Line,
    history: h.History,
    store: Store,
    spec: Spec,
    spec_dir: Path,
    root: Path,
    workdir: str,
    runners: RunnerMaker,
    options: WatchOptions,
) -> h.Step:
    """Run the step's trials (resuming from its stored ones) and record what they decided."""
    settings = options.settings
    strategy: RecordStrategy | CompareStrategy
    if step.kind == h.RECORD:
        strategy = RecordStrategy(step.head, settings, line.config)
    else:
        assert step.good is not None
        strategy = CompareStrategy(step.head, step.good, step.recorded, settings, line.config)
    for config, outcome in store.outcomes()[step.first_outcome :]:
        strategy.observe(config, outcome)
    commits = spec.commits
    target = CommitTarget(
        make_target(spec, spec_dir),
        root,
        spec.execution.parallel,
        build_argv(commits.build) if commits else None,
        commits.pythonpath if commits else None,
        workdir,
        commits.build_timeout if commits else 600.0,
    )
    progress = make_progress(
        f"bisect watch {step.kind} {step.head[:10]}", lambda: [], options.study.plain
    )
    try:
        if not strategy.finished():
            with target, runners(target, options.paths.logs) as runner:
                Engine(
                    strategy, runner, store, f"watch-{step.number}", trial_factory(spec), progress
                ).run()
    except KeyboardInterrupt as exc:
        progress.close()
        raise StudyInterrupted(signal_exit_code(signal_of(exc)), store.path) from None
    finally:
        remove_stale_worktrees(root)
    progress.close()
    trials = store.count() - step.first_outcome
    return _record_decision(step, history, strategy, trials)


def _record_decision(
    step: h.Step, history: h.History, strategy: RecordStrategy | CompareStrategy, trials: int
) -> h.Step:
    if isinstance(strategy, RecordStrategy):
        rate = strategy.rate()
        status = h.NO_VALID_RUNS if strategy.state is StepState.NO_VALID_RUNS else h.GOOD
        return history.update(
            step,
            status=status,
            runs=rate.runs,
            failed=rate.failed,
            low=rate.low,
            high=rate.high,
            trials=trials,
        )
    c = strategy.comparison()
    fresh_good = c.good.runs - step.recorded[0]
    status = {
        StepState.NOT_WORSE: h.GOOD,
        StepState.UNDECIDED: h.UNDECIDED,
        StepState.NO_VALID_RUNS: h.NO_VALID_RUNS,
    }.get(c.state, h.BISECTING)
    if status == h.BISECTING and history.open_regression(step.config) is not None:
        status = h.STILL_WORSE
    return history.update(
        step,
        status=status,
        runs=c.head.runs,
        failed=c.head.failed,
        low=c.head.low,
        high=c.head.high,
        good_runs=fresh_good,
        good_failed=c.good.failed - step.recorded[1],
        p_value=c.sequential_p,
        trials=trials,
    )


def _result(step: h.Step, head: str, trials: int, branch: str) -> WatchResult:
    rate = f"{step.failed} of {step.runs} runs failed (rate {step.low:.3f}-{step.high:.3f})"
    if step.status == h.GOOD:
        what = "recorded" if step.kind == h.RECORD else "not worse than " + (step.good or "")[:10]
        line = f"{what}: {step.head[:10]} is the last known good of {branch}; {rate}"
        return WatchResult(h.GOOD, int(ExitCode.DECIDED), head, step, (line,), trials)
    if step.status == h.UNDECIDED:
        line = (
            f"undecided: {step.head[:10]} is neither worse than {(step.good or '')[:10]} nor "
            f"within the margin ({rate}); the last known good stays; raise --max-runs"
        )
        return WatchResult(h.UNDECIDED, int(ExitCode.DECIDED), head, step, (line,), trials)
    if step.status == h.STILL_WORSE:
        line = (
            f"still worse: {step.head[:10]} fails more than {(step.good or '')[:10]} ({rate}); "
            "the regression reported earlier is still open (bisect watch --log)"
        )
        return WatchResult(h.STILL_WORSE, int(ExitCode.UNDECIDED), head, step, (line,), trials)
    if step.status == h.NO_VALID_RUNS:
        line = f"no valid runs: most runs of step {step.number} errored; see the logs"
        return WatchResult(
            h.NO_VALID_RUNS, int(ExitCode.NO_VALID_RUNS), head, step, (line,), trials
        )
    if step.status == h.REGRESSION:  # an earlier call finished it: its result again
        return WatchResult(
            h.REGRESSION,
            int(ExitCode.UNDECIDED),
            head,
            step,
            (f"regression: {step.headline}",),
            trials,
            Path(step.report) if step.report else None,
        )
    raise HeisenbisectError(f"watch: step {step.number} is in an unknown state {step.status!r}")


def _regression_result(regression: Regression, head: str, trials: int) -> WatchResult:
    step = regression.step
    return WatchResult(
        h.REGRESSION,
        int(ExitCode.UNDECIDED),
        head,
        step,
        regression.lines,
        trials + step.bisection_trials,
        regression.report,
    )
