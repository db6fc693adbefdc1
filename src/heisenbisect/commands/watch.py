"""`bisect watch`: one step per call over a branch; a regression is bisected and reported.

    bisect watch --repo DIR [--branch B] [--out DIR] -- CMD ...   CMD as `bisect trial` reads it
    bisect watch FILE [--branch B] [--out DIR]                    a spec: baseline and decided arms
    bisect watch ... --log                                         the history, nothing runs

Exit codes: 0 nothing to report (recorded, not worse, undecided, no new commit), 1 a regression
(or a head still worse while one is open), 2 bad input or another watcher holds the state,
4 no valid runs, 128+N stopped by a signal (the next call resumes the step).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from heisenbisect.commands.common import add_execution_arguments, answer, options_of
from heisenbisect.errors import HeisenbisectError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="one step per call over a branch: test each new head, bisect a regression",
        description="The first call bounds the branch head's failure rate and records it as the "
        "last known good. A later call with new commits runs the new head interleaved with the "
        "last known good until a sequential test decides: not worse (it becomes the last known "
        "good, exit 0) or significantly worse (a commit bisection between the two, a paste-ready "
        "report, exit 1). Without new commits nothing runs (exit 0). A call killed mid-step is "
        "resumed by the next. State: <repo>/reports/watch/ (or --out DIR/watch; with a spec "
        "<output>/<study>/watch/).",
    )
    parser.add_argument("spec", nargs="?", metavar="FILE", help="a hypotheses YAML file, or CMD")
    parser.add_argument("words", nargs="*", metavar="CMD", help="(after --) the command to watch")
    parser.add_argument(
        "--repo",
        default=".",
        metavar="DIR",
        help="the git repository (default: the current folder's; a spec's commits.repo)",
    )
    parser.add_argument("--branch", default="HEAD", metavar="B", help="the branch (or ref) watched")
    parser.add_argument("--out", metavar="DIR", help="the watch's state goes to DIR/watch")
    parser.add_argument(
        "--log", action="store_true", help="print the history as a table; run nothing"
    )
    parser.add_argument(
        "--on-regression",
        metavar="CMD",
        help="run CMD (through the shell) with the paste report's path as last word",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="a regression's confidence; the false-regression rate is at most 1 - this",
    )
    parser.add_argument(
        "--margin",
        type=float,
        default=0.1,
        help="the smallest rise in the run-failure rate worth a regression",
    )
    parser.add_argument(
        "--first-look", type=int, default=10, help="runs per side at the first look"
    )
    parser.add_argument("--max-runs", type=int, default=100, help="runs per side at most, per step")
    parser.add_argument(
        "--result",
        choices=("exit", "json"),
        default="exit",
        help="how CMD reports, as `bisect trial`: exit (its exit code) or json",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run of CMD")
    add_execution_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from heisenbisect.decide.watch import WatchSettings
    from heisenbisect.studies.watch.cycle import watch_step
    from heisenbisect.studies.watch.options import WatchOptions

    words = [w for w in [args.spec, *args.words] if w is not None]
    try:
        settings = WatchSettings(args.confidence, args.margin, args.first_look, args.max_runs)
    except ValueError as exc:
        raise HeisenbisectError(f"watch: {exc}") from None
    as_spec = _is_spec(words)
    screening = None
    if as_spec:
        spec, paths, what, screening = _spec_mode(args, words[0])
    else:
        spec, paths, what = _command_mode(args, words)
    if args.log:
        return _print_log(paths)
    if not as_spec and (last := _nothing_new(args, paths)):
        print(
            f"no new commit: {args.branch} is still at {last.head[:10]} (step {last.number}: "
            f"{last.status}); nothing ran"
        )
        return 0
    options = WatchOptions(
        options_of(args, str(spec), None),
        paths,
        args.repo,
        args.branch,
        settings,
        args.on_regression,
        what,
        screening,
    )
    return answer(lambda: watch_step(options), _print_result)


def _is_spec(words: list[str]) -> bool:
    """One word naming a YAML file: a spec; anything else is CMD."""
    return (
        len(words) == 1 and Path(words[0]).suffix in (".yaml", ".yml") and Path(words[0]).is_file()
    )


def _spec_mode(args: argparse.Namespace, spec: str):
    from heisenbisect.hypotheses import load_spec
    from heisenbisect.layout import StudyPaths

    loaded = load_spec(Path(spec))
    paths = StudyPaths.of(loaded, args.out, spec)
    return Path(spec), paths.watch, f"{Path(spec).name} ({loaded.study})", paths.store


def _command_mode(args: argparse.Namespace, command: list[str]):
    from heisenbisect.studies.watch.specs import Watched, watch_paths, write_watch_spec

    if args.log:
        return None, watch_paths(args.out, args.repo), ""
    watched = Watched(command, args.repo, args.branch, args.out, args.result, args.timeout)
    return write_watch_spec(watched), watch_paths(args.out, args.repo), shlex.join(command)


def _nothing_new(args: argparse.Namespace, paths):
    """The last step when the branch has not moved since it (and the watch is the same one):
    answered before the study's imports (numpy, scipy, the runners), so a nightly call with
    nothing to do is quick. A changed command goes the long way, where the store refuses it."""
    from heisenbisect.studies.watch.history import nothing_new
    from heisenbisect.studies.watch.specs import head_of, repo_root

    if args.fresh:
        return None
    return nothing_new(paths.store, head_of(repo_root(args.repo), args.branch), paths.spec)


def _print_log(paths) -> int:
    from heisenbisect.reports.watch import history_table
    from heisenbisect.studies.watch.history import read_history

    steps = read_history(paths.store)
    if not steps:
        print(f"no watch under {paths.root}: nothing recorded yet", file=sys.stderr)
        return 0
    print(history_table(steps))
    return 0


def _print_result(result) -> int:
    for line in result.lines:
        print(line)
    if result.step is not None and result.action != "nothing_new":
        print(f"step {result.step.number}: {result.trials} trials", file=sys.stderr)
    return result.exit_code
