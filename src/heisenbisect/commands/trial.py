"""`bisect trial -- CMD`: a `git bisect run` predicate that reruns a flaky test until it is sure.

Exits 0 (good), 1 (bad) or 125 (untestable, or undecided after --max-runs), so
``git bisect run bisect trial --p-bad 0.15 -- pytest -x tests/test_flaky.py`` bisects a
failure that shows up in 15% of runs. CMD follows the trial protocol (its exit code, git
bisect's language, unless ``--result json``; a JSON result always wins). A run that could
not test anything makes the commit untestable (125), never bad: a crash by signal, a
timeout, a command not found (126/127), a Python traceback of the could-not-run kind (an
ImportError, a SyntaxError: `targets.tracebacks`; ``--traceback-is-failure`` for a CMD
whose failure is one), a result line that breaks the protocol (a misspelt ``failures``, a
result printed on stderr) and, when CMD is pytest, pytest's own "could not test" codes (2
interrupted, 3 internal error, 4 usage error, 5 no tests collected: the test file does not
exist at this commit). Every run's log is kept.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from pathlib import Path

from heisenbisect.decide.sprt import Decision, SequentialTest
from heisenbisect.errors import HeisenbisectError
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget

EXIT_GOOD, EXIT_BAD, EXIT_SKIP = 0, 1, 125
NOT_RUN_EXITS = frozenset({126, 127})  # a shell's "not executable" and "command not found"
PYTEST_NOT_RUN_EXITS = frozenset({2, 3, 4, 5})  # interrupted, internal error, usage error, no tests
DEFAULT_LOGS = Path(".heisenbisect") / "trial-logs"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trial",
        help="a `git bisect run` predicate: rerun CMD until good (0), bad (1) or undecided (125)",
        description="Run CMD again and again (one at a time) and stop as soon as a sequential "
        "probability ratio test tells a good commit (fails at rate --p-good) from a bad one (fails at "
        "rate --p-bad) with the asked confidence. With --p-good 0 one failure proves the commit bad. "
        "Use it as: git bisect run bisect trial --p-bad 0.15 -- CMD ...",
    )
    parser.add_argument("--p-bad", type=_rate, default=0.15,
                        help="the smallest failure rate of a bad commit you care to catch (default 0.15)")
    parser.add_argument("--p-good", type=_rate, default=0.0, help="failure rate of a good commit (default 0)")
    parser.add_argument("--confidence", type=float, default=0.95, help="1 - each error rate (default 0.95)")
    parser.add_argument("--max-runs", type=int, default=200, help="give up (exit 125) after this many runs")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run (default 600)")
    parser.add_argument("--logs", type=Path, metavar="DIR",
                        help="keep each run's log here (default: .heisenbisect/trial-logs/<time>/ in the current folder)")
    parser.add_argument("--skip-exit", type=int, action="append", default=[], metavar="CODE",
                        help="also read exit CODE as untestable (125), e.g. your harness's 'setup failed' (repeatable)")
    parser.add_argument("--fail-exit", type=int, action="append", default=[], metavar="CODE",
                        help="read exit CODE as a failed run even where it would mean untestable, e.g. "
                        "pytest's 3 when an internal error is the bug (repeatable)")
    parser.add_argument("--result", choices=("exit", "json"), default="exit",
                        help="how a run reports: exit (default: its exit code, unless it prints a JSON result) or "
                        "json (a result line or $HEISENBISECT_RESULT; a run without one is untestable)")
    parser.add_argument("--traceback-is-failure", action="store_true",
                        help="read a run that dies on an ImportError, SyntaxError, module-level NameError or "
                        "FileNotFoundError by its exit code (default: untestable, 125), for a CMD whose failure is one")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the test to repeat")
    parser.set_defaults(handler=run)


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1], got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    argv = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not argv:
        raise HeisenbisectError("trial: give the command to repeat after '--', e.g. bisect trial -- pytest -x t.py")
    if args.max_runs < 1:
        raise HeisenbisectError(f"--max-runs: must be at least 1, got {args.max_runs}")
    try:
        test = SequentialTest(args.p_bad, args.p_good, args.confidence)
    except ValueError as exc:
        raise HeisenbisectError(f"trial: {exc}") from None
    logs = args.logs or new_log_folder(Path.cwd())
    target = CommandTarget(
        argv=tuple(argv),
        timeout_s=args.timeout,
        skip_exits=untestable_exits(argv, args.skip_exit, args.fail_exit),
        fail_exits=frozenset(args.fail_exit),
        result=args.result,
        traceback_is_failure=args.traceback_is_failure,
    )
    return _repeat(target, test, logs, args.max_runs)


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


def _repeat(target: CommandTarget, test: SequentialTest, logs: Path, max_runs: int) -> int:
    seeds = random.SystemRandom()
    never = threading.Event()
    last_failing: str | None = None
    for index in range(max_runs):
        trial = Trial(trial_id=f"run-{index:04d}", config=Config(), index=index, seed=seeds.getrandbits(32))
        outcome = target.execute(trial, logs / f"{trial.trial_id}.log", never)
        if outcome.status is not TrialStatus.OK:
            _say(f"run {index + 1}: {outcome.status.value} ({outcome.detail}): the commit is untestable (125)")
            _say(f"log: {outcome.log_path}")
            return EXIT_SKIP
        decision = test.update(outcome.failed)
        _say(f"run {index + 1}: {'FAIL' if outcome.failed else 'pass'}  ({test.failures}/{test.runs} failed)")
        if outcome.failed:
            last_failing = outcome.log_path
        if decision is Decision.BAD:
            _say(f"bad: {test.failures} of {test.runs} runs failed; log of the last failing run: {last_failing}")
            return EXIT_BAD
        if decision is Decision.GOOD:
            _say(f"good: {test.runs} runs, {test.failures} failed; logs in {logs}")
            return EXIT_GOOD
    where = f"; log of the last failing run: {last_failing}" if last_failing else f"; logs in {logs}"
    _say(f"undecided after {test.runs} runs ({test.failures} failed): skip{where}")
    return EXIT_SKIP


def _say(text: str) -> None:
    print(f"bisect trial: {text}", file=sys.stderr, flush=True)
