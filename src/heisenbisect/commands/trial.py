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
exist at this commit). Every run's log is kept. The predicate is `studies.trial`; this command
parses its arguments and prints each run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heisenbisect.decide.sprt import SequentialTest
from heisenbisect.errors import HeisenbisectError
from heisenbisect.studies.trial import new_log_folder, repeat, trial_target


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trial",
        help="a `git bisect run` predicate: rerun CMD until good (0), bad (1) or undecided (125)",
        description="Run CMD again and again (one at a time) and stop as soon as a sequential "
        "probability ratio test tells a good commit (fails at rate --p-good) from a bad one (fails at "
        "rate --p-bad) with the asked confidence. With --p-good 0 one failure proves the commit bad. "
        "Use it as: git bisect run bisect trial --p-bad 0.15 -- CMD ...",
    )
    parser.add_argument(
        "--p-bad",
        type=_rate,
        default=0.15,
        help="the smallest failure rate of a bad commit you care to catch (default 0.15)",
    )
    parser.add_argument(
        "--p-good", type=_rate, default=0.0, help="failure rate of a good commit (default 0)"
    )
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="1 - each error rate (default 0.95)"
    )
    parser.add_argument(
        "--max-runs", type=int, default=200, help="give up (exit 125) after this many runs"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per run (default 600)"
    )
    parser.add_argument(
        "--logs",
        type=Path,
        metavar="DIR",
        help="keep each run's log here (default: .heisenbisect/trial-logs/<time>/ in the current folder)",
    )
    parser.add_argument(
        "--skip-exit",
        type=int,
        action="append",
        default=[],
        metavar="CODE",
        help="also read exit CODE as untestable (125), e.g. your harness's 'setup failed' (repeatable)",
    )
    parser.add_argument(
        "--fail-exit",
        type=int,
        action="append",
        default=[],
        metavar="CODE",
        help="read exit CODE as a failed run even where it would mean untestable, e.g. "
        "pytest's 3 when an internal error is the bug (repeatable)",
    )
    parser.add_argument(
        "--result",
        choices=("exit", "json"),
        default="exit",
        help="how a run reports: exit (default: its exit code, unless it prints a JSON result) or "
        "json (a result line or $HEISENBISECT_RESULT; a run without one is untestable)",
    )
    parser.add_argument(
        "--traceback-is-failure",
        action="store_true",
        help="read a run that dies on an ImportError, SyntaxError, module-level NameError or "
        "FileNotFoundError by its exit code (default: untestable, 125), for a CMD whose failure is one",
    )
    parser.add_argument(
        "cmd", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the test to repeat"
    )
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
        raise HeisenbisectError(
            "trial: give the command to repeat after '--', e.g. bisect trial -- pytest -x t.py"
        )
    if args.max_runs < 1:
        raise HeisenbisectError(f"--max-runs: must be at least 1, got {args.max_runs}")
    try:
        test = SequentialTest(args.p_bad, args.p_good, args.confidence)
    except ValueError as exc:
        raise HeisenbisectError(f"trial: {exc}") from None
    logs = args.logs or new_log_folder(Path.cwd())
    target = trial_target(
        argv, args.timeout, args.skip_exit, args.fail_exit, args.result, args.traceback_is_failure
    )
    return repeat(target, test, logs, args.max_runs, _say)


def _say(text: str) -> None:
    print(f"bisect trial: {text}", file=sys.stderr, flush=True)
