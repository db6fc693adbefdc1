"""`bisect commits`: find the commit that introduced (or fixed) a flaky failure, resuming from the store.

Three shapes (docs/cli.md, "bisect commits"):

    bisect commits FILE [--config F=L]                       the spec's range and target
    bisect commits --good A --bad B [--repo DIR] -- CMD ...  no spec, as `git bisect run`
    bisect commits [FILE] mark good|bad|skip REV [--runs N --failures K] | undo | log | next

The words mark, undo, log and next are actions, never a spec's name (write ``./mark`` for a
file called that). The study is `studies.commits` (also ``heisenbisect.commits``); the actions
`studies.commits.actions`. Exit codes: `studies.commits.result`; an action exits 0, bad input 2.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

from heisenbisect.commands.common import add_execution_arguments, answer, options_of
from heisenbisect.errors import HeisenbisectError

if TYPE_CHECKING:
    from heisenbisect.studies.commits.marks import Verb
    from heisenbisect.studies.commits.result import CommitsResult

ACTIONS = ("mark", "undo", "log", "next")
VERBS = ("good", "bad", "skip")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "commits",
        help="noisy git bisection over a commit range (a spec's, or --good/--bad -- CMD)",
        description="Probe the commits between good and bad (first-parent by default) under one config, "
        "keep a posterior over the first bad commit, and stop when one commit holds the confidence. Each "
        "probe runs in a worktree of its own; your working tree, index and HEAD are never touched; with "
        "--runner ray each probed commit gets a worktree on its worker. Rerunning resumes from "
        "<output>/<study>/commits.sqlite. Writes commits.md, commits.png and commits.json. Without a spec: "
        "bisect commits --good A --bad B -- CMD (the study goes to <repo>/reports/commits/, or --out). "
        "By hand: bisect commits [FILE] mark good|bad|skip REV [--runs N --failures K], undo, log, next.",
    )
    parser.add_argument(
        "spec", nargs="?", metavar="FILE", help="the hypotheses YAML file, or an action word"
    )
    parser.add_argument(
        "words", nargs="*", metavar="ACTION|CMD", help="an action and its words, or (after --) CMD"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="folder for studies; a relative DIR is taken from the current folder (default: the "
        "spec's 'output:', reports/, taken from the spec file's folder; without a spec <repo>/reports)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FACTOR=LEVEL",
        help="probe under this level of a factor instead of its baseline (repeatable)",
    )
    add_execution_arguments(parser)
    adhoc = parser.add_argument_group("without a spec file")
    adhoc.add_argument(
        "--good",
        "--old",
        dest="good",
        metavar="REV",
        help="the older end (the regression's good commit)",
    )
    adhoc.add_argument(
        "--bad",
        "--new",
        dest="bad",
        metavar="REV",
        help="the newer end (where it fails; a fix's: where it no longer does)",
    )
    adhoc.add_argument(
        "--repo",
        default=".",
        metavar="DIR",
        help="the git repository (default: the current folder's)",
    )
    adhoc.add_argument(
        "--fix",
        action="store_true",
        help="find where the failure rate went down: --good fails, --bad no longer does",
    )
    adhoc.add_argument(
        "--result",
        choices=("exit", "json"),
        default="exit",
        help="how CMD reports, as `bisect trial`: exit (its exit code; 125 untestable) or json",
    )
    adhoc.add_argument(
        "--timeout",
        type=float,
        help="seconds per run (default: 10x the slowest run at the two ends, at least 60 s)",
    )
    adhoc.add_argument(
        "--good-never-fails",
        action="store_true",
        help="a good commit never fails (p_good 0): one failure proves a commit bad",
    )
    adhoc.add_argument(
        "--bad-always-fails",
        action="store_true",
        help="a bad commit fails every run (p_bad 1): one pass proves a commit good",
    )
    adhoc.add_argument(
        "--retry-timeouts",
        type=int,
        default=0,
        metavar="N",
        help="timeouts at a commit beyond the first before it is untestable (default 0)",
    )
    adhoc.add_argument(
        "--no-run",
        action="store_true",
        help="record the bisection (its spec and store) without running anything: for marks by "
        "hand (the action word start does the same)",
    )
    adhoc.add_argument(
        "--confidence", type=float, default=0.95, help="stop when one commit holds this posterior"
    )
    adhoc.add_argument("--max-trials", type=int, default=2000, help="the budget of runs")
    marks = parser.add_argument_group("mark and next")
    marks.add_argument("--runs", type=int, metavar="N", help="mark: N runs of REV (default 1)")
    marks.add_argument(
        "--failures", type=int, metavar="K", help="mark bad: K of them failed (default 1)"
    )
    marks.add_argument(
        "--worktree",
        type=Path,
        metavar="DIR",
        help="next: also check the commit out into a new worktree DIR",
    )
    marks.add_argument(
        "--repair",
        action="store_true",
        help="log: cut a damaged marks log to its valid start (later marks' runs are left out)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    words = [w for w in [args.spec, *args.words] if w is not None]
    if args.good is not None or args.bad is not None:
        return _adhoc(args, words)
    if words and words[0] in ACTIONS:
        where = (f" --out {shlex.quote(args.out)}" if args.out else "") + (
            f" --repo {shlex.quote(args.repo)}" if args.repo != "." else ""
        )
        return _action(
            args, _adhoc_spec_file(args), words[0], words[1:], "bisect commits" + where, adhoc=True
        )
    if len(words) > 1 and words[1] in ACTIONS:
        return _action(
            args,
            words[0],
            words[1],
            words[2:],
            f"bisect commits {shlex.quote(words[0])}",
            adhoc=False,
        )
    if len(words) != 1:
        raise HeisenbisectError(
            "commits: give a spec FILE, or --good REV --bad REV -- CMD ..., or an action (mark, undo, log, next); "
            f"got {shlex.join(words) or 'nothing'}"
        )
    from heisenbisect.studies.commits.study import bisect_commits

    options = options_of(args, words[0], args.out)
    return answer(lambda: bisect_commits(options, args.config), print_result, show_interrupted=True)


def _adhoc(args: argparse.Namespace, command: list[str]) -> int:
    """``--good A --bad B -- CMD``: bisect as with a spec, written into the study folder once
    the store has accepted it (a refused line changes nothing there)."""
    from heisenbisect.studies.commits.adhoc import AdHoc, flag_label, stage_adhoc_spec
    from heisenbisect.studies.commits.study import bisect_commits

    if args.good is None or args.bad is None:
        raise HeisenbisectError(
            f"commits: {'--bad' if args.bad is None else '--good'} is missing; "
            "a bisection without a spec needs --good REV --bad REV -- CMD ..."
        )
    if args.config:
        raise HeisenbisectError("--config: a bisection without a spec has no factors")
    if not 0.5 < args.confidence < 1:
        raise HeisenbisectError(f"--confidence: must be > 0.5 and < 1, got {args.confidence:g}")
    if args.max_trials < 1 or (args.timeout is not None and not args.timeout > 0):
        raise HeisenbisectError("--max-trials must be >= 1 and --timeout > 0")
    if args.retry_timeouts < 0:
        raise HeisenbisectError(f"--retry-timeouts: must be >= 0, got {args.retry_timeouts}")
    if args.good_never_fails and args.bad_always_fails:
        raise HeisenbisectError(
            "--good-never-fails with --bad-always-fails: every run would decide its commit; "
            "use plain git bisect run"
        )
    start = bool(command) and command[0] == "start"
    if start:
        command = command[1:]
    adhoc = AdHoc(
        args.good,
        args.bad,
        command,
        args.repo,
        args.out,
        args.fix,
        args.result,
        args.timeout,
        args.confidence,
        args.max_trials,
        p_good=0.0 if args.good_never_fails else None,
        p_bad=1.0 if args.bad_always_fails else None,
        retry_timeouts=args.retry_timeouts,
    )
    staged = stage_adhoc_spec(adhoc)
    with staged.draft() as draft:
        options = options_of(args, str(draft), None)
        if args.no_run or start:
            from heisenbisect.studies.commits import actions

            standing = actions.start(options, flag_label)
            spec = staged.save()  # the store took it: now the spec `mark` and `next` read
            print(f"bisection recorded in {spec.parent} ({standing.headline}); nothing was run")
            print(
                "record what you saw: bisect commits mark good|bad|skip REV [--runs N --failures K]; "
                "ask for the next commit: bisect commits next; run the search: the same line "
                "without --no-run"
            )
            return 0
        return answer(
            lambda: bisect_commits(options, [], label=flag_label, accepted=staged.save),
            print_result,
            show_interrupted=True,
        )


def _adhoc_spec_file(args: argparse.Namespace) -> str:
    """The spec a bisection without one wrote, for an action given no FILE."""
    from heisenbisect.studies.commits.adhoc import spec_path

    path = spec_path(args.out, args.repo)
    if not path.exists():
        raise HeisenbisectError(
            f"commits: no bisection without a spec under {path.parent.parent}: start one with "
            "bisect commits --good REV --bad REV -- CMD ..., or name its spec: bisect commits FILE mark ..."
        )
    return str(path)


def _action(
    args: argparse.Namespace, spec: str, action: str, rest: list[str], prefix: str, adhoc: bool
) -> int:
    """One action on the bisection of ``spec``; ``prefix`` starts the command lines it prints."""
    from heisenbisect.studies.commits import actions
    from heisenbisect.studies.commits.adhoc import flag_label

    label = flag_label if adhoc else None
    options = options_of(args, spec, None if adhoc else args.out)
    if action == "mark":
        if len(rest) != 2 or rest[0] not in VERBS:
            raise HeisenbisectError(
                f"mark: expected mark good|bad|skip REV, got mark {shlex.join(rest)}"
            )
        verb = cast("Verb", rest[0])  # one of VERBS, checked above
        recorded, standing = actions.mark(options, verb, rest[1], args.runs, args.failures, label)
        what = (
            "untestable"
            if recorded.verb == "skip"
            else f"{recorded.runs} runs, {recorded.failures} failed"
        )
        print(f"mark {recorded.number}: {recorded.sha[:10]} {recorded.verb} ({what})")
        print(standing.headline)
        return 0
    if rest:
        raise HeisenbisectError(f"{action}: takes no more words, got {shlex.join(rest)}")
    if action == "undo":
        undone, standing = actions.undo(options, label)
        print(
            f"undone: {undone.command(prefix)}" if undone else "nothing to undo: no mark in force"
        )
        print(standing.headline)
        return 0
    if action == "log":
        print("\n".join(actions.log(options, prefix, label, args.repair)))
        return 0
    found = actions.next_probe(options, args.worktree, label)
    print(found.standing.headline)
    if found.commit is None:
        print("decided or nothing left to run: no next commit")
        return 0
    c = found.commit
    print(f"next: {c.sha} {c.subject}")
    if found.worktree is not None:
        print(
            f"checked out in {found.worktree} (remove with: git -C {shlex.quote(str(found.repo))} worktree remove "
            f"{shlex.quote(str(found.worktree))})"
        )
    else:
        print(
            f"try it in a worktree of its own: git -C {shlex.quote(str(found.repo))} worktree add --detach "
            f"{shlex.quote('../probe-' + c.short)} {c.sha}"
        )
    print(f"then record what you saw: {prefix} mark good|bad {c.sha} [--runs N --failures K]")
    return 0


def print_result(result: CommitsResult) -> int:
    """What ``bisect commits`` prints; returns its exit code."""
    if result.no_valid_runs:
        for line in result.warnings:
            print(line, file=sys.stderr)
        print(f"report: {result.report}")
        return result.exit_code
    print(result.headline)
    if result.culprit is not None:
        print(f"  {result.culprit}\n  {result.culprit_line}")
    if result.verification_line is not None:
        print(f"  {result.verification_line}")
    print(f"report: {result.report}  (plot {result.plot.name}, results {result.results.name})")
    for line in result.warnings:
        print(line, file=sys.stderr)
    return result.exit_code
