"""The predicate behind `bisect trial -- CMD`: rerun a flaky command until a sequential test
tells a good commit from a bad one.

Exits 0 (good), 1 (bad) or 125 (untestable, or undecided after the last run). A run that could
not test anything makes the commit untestable (125), never bad: a crash by signal, a timeout, a
command not found (126/127), a Python traceback of the could-not-run kind (`targets.tracebacks`),
a result line that breaks the protocol and, when CMD is pytest, pytest's own "could not test"
codes (2 interrupted, 3 internal error, 4 usage error, 5 no tests collected). Every run's log is
kept.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from heisenbisect.decide.sprt import Decision, SequentialTest
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget

EXIT_GOOD, EXIT_BAD, EXIT_SKIP = 0, 1, 125
NOT_RUN_EXITS = frozenset({126, 127})  # a shell's "not executable" and "command not found"
PYTEST_NOT_RUN_EXITS = frozenset({2, 3, 4, 5})  # interrupted, internal error, usage error, no tests
DEFAULT_LOGS = Path(".heisenbisect") / "trial-logs"


def untestable_exits(argv: list[str], skip: list[int], fail: list[int]) -> frozenset[int]:
    """Exit codes read as "could not test": a shell's, pytest's when CMD is pytest, --skip-exit's."""
    codes = set(NOT_RUN_EXITS) | set(skip)
    if is_pytest(argv):
        codes |= PYTEST_NOT_RUN_EXITS
    return frozenset(codes - set(fail))


def is_pytest(argv: list[str]) -> bool:
    """``pytest ...``, ``py.test ...``, ``python -m pytest ...`` (any python)."""
    name = Path(argv[0]).name
    if name in ("pytest", "py.test") or name.startswith("pytest-"):
        return True
    return name.startswith("python") and len(argv) > 2 and argv[1] == "-m" and argv[2] == "pytest"


def new_log_folder(base: Path) -> Path:
    """``base/.heisenbisect/trial-logs/<time>-<pid>/``; the .heisenbisect folder ignores itself in git."""
    root = base / DEFAULT_LOGS.parent
    root.mkdir(exist_ok=True)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")  # git bisect's checkouts and `git status` never see these logs
    folder = base / DEFAULT_LOGS / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    folder.mkdir(parents=True)
    return folder


def trial_target(
    argv: list[str],
    timeout_s: float,
    skip_exits: list[int],
    fail_exits: list[int],
    result: Literal["json", "exit"],
    traceback_is_failure: bool,
) -> CommandTarget:
    """CMD as a command target: its own exit codes, and the "could not test" ones, read as above."""
    return CommandTarget(
        argv=tuple(argv),
        timeout_s=timeout_s,
        skip_exits=untestable_exits(argv, skip_exits, fail_exits),
        fail_exits=frozenset(fail_exits),
        result=result,
        traceback_is_failure=traceback_is_failure,
    )


def repeat(
    target: CommandTarget,
    test: SequentialTest,
    logs: Path,
    max_runs: int,
    say: Callable[[str], None],
) -> int:
    """Run ``target`` until ``test`` decides or ``max_runs`` are spent; ``say`` tells each run.
    Returns the predicate's exit code: good, bad or skip (untestable or undecided)."""
    seeds = random.SystemRandom()
    never = threading.Event()
    last_failing: str | None = None
    for index in range(max_runs):
        trial = Trial(
            trial_id=f"run-{index:04d}", config=Config(), index=index, seed=seeds.getrandbits(32)
        )
        outcome = target.execute(trial, logs / f"{trial.trial_id}.log", never)
        if outcome.status is not TrialStatus.OK:
            say(
                f"run {index + 1}: {outcome.status.value} ({outcome.detail}): the commit is untestable (125)"
            )
            say(f"log: {outcome.log_path}")
            return EXIT_SKIP
        decision = test.update(outcome.failed)
        say(
            f"run {index + 1}: {'FAIL' if outcome.failed else 'pass'}  ({test.failures}/{test.runs} failed)"
        )
        if outcome.failed:
            last_failing = outcome.log_path
        if decision is Decision.BAD:
            say(
                f"bad: {test.failures} of {test.runs} runs failed; log of the last failing run: {last_failing}"
            )
            return EXIT_BAD
        if decision is Decision.GOOD:
            say(f"good: {test.runs} runs, {test.failures} failed; logs in {logs}")
            return EXIT_GOOD
    where = (
        f"; log of the last failing run: {last_failing}" if last_failing else f"; logs in {logs}"
    )
    say(f"undecided after {test.runs} runs ({test.failures} failed): skip{where}")
    return EXIT_SKIP
