"""`bisect trial -- CMD`: a `git bisect run` predicate that reruns a flaky test until it is sure.

Exits 0 (good), 1 (bad) or 125 (untestable, or undecided after --max-runs), so
``git bisect run bisect trial --p-bad 0.15 -- pytest -x tests/test_flaky.py`` bisects a
failure that shows up in 15% of runs. CMD follows the trial protocol (exit code, or a JSON
result); runs that crash or time out make the commit untestable.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from heisenbisect.bisect.sprt import Decision, SequentialTest
from heisenbisect.errors import HeisenbisectError
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.runners.command import CommandTarget

EXIT_GOOD, EXIT_BAD, EXIT_SKIP = 0, 1, 125


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
    parser.add_argument("--logs", type=Path, help="keep each run's output here (default: a temporary folder)")
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
    logs = args.logs or Path(tempfile.mkdtemp(prefix="heisenbisect-trial-"))
    try:
        return _repeat(CommandTarget(argv=tuple(argv), timeout_s=args.timeout), test, logs, args.max_runs)
    finally:
        if args.logs is None:
            shutil.rmtree(logs, ignore_errors=True)


def _repeat(target: CommandTarget, test: SequentialTest, logs: Path, max_runs: int) -> int:
    seeds = random.SystemRandom()
    never = threading.Event()
    for index in range(max_runs):
        trial = Trial(trial_id=f"run-{index:04d}", config=Config(), index=index, seed=seeds.getrandbits(32))
        outcome = target.execute(trial, logs / f"{trial.trial_id}.log", never)
        if outcome.status is not TrialStatus.OK:
            _say(f"run {index + 1}: {outcome.status.value} ({outcome.detail}): untestable")
            return EXIT_SKIP
        decision = test.update(outcome.failed)
        _say(f"run {index + 1}: {'FAIL' if outcome.failed else 'pass'}  ({test.failures}/{test.runs} failed)")
        if decision is Decision.BAD:
            _say(f"bad: {test.failures} of {test.runs} runs failed")
            return EXIT_BAD
        if decision is Decision.GOOD:
            _say(f"good: {test.runs} runs, {test.failures} failed")
            return EXIT_GOOD
    _say(f"undecided after {test.runs} runs ({test.failures} failed): skip")
    return EXIT_SKIP


def _say(text: str) -> None:
    print(f"bisect trial: {text}", file=sys.stderr, flush=True)
