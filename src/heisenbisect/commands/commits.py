"""`bisect commits FILE`: find the commit that introduced a flaky failure, resuming from the store."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from pathlib import Path

from heisenbisect.bisect.commits import CommitStrategy, State
from heisenbisect.commits_study import CommitStudy, open_store, prepare, replayed, run_study
from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.loader import load_spec
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.reports.commits import headline, write_report


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "commits",
        help="noisy git bisection over the spec's commit range",
        description="Probe the commits between commits.good and commits.bad (first-parent by default) "
        "under one config, keep a posterior over the first bad commit, and stop when one commit holds "
        "commits.confidence. Each probe runs in a worktree of its own; your working tree, index and "
        "HEAD are never touched. Rerunning resumes from <output>/<study>/commits.sqlite. Writes "
        "commits.md, commits.png and commits.json beside the screening report.",
    )
    parser.add_argument("spec", type=Path, metavar="FILE", help="the hypotheses YAML file")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FACTOR=LEVEL",
        help="probe under this level of a factor instead of its baseline (repeatable)",
    )
    parser.add_argument("--fresh", action="store_true", help="move the old store aside and start over")
    parser.add_argument("--out", type=Path, help="output folder (default: the spec's 'output')")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    base = parse_config(spec, args.config)
    study = prepare(spec, args.spec, base, args.out or Path(spec.output))
    if spec.execution.runner != "local":
        print("note: commit bisection runs its trials on this machine (worktrees are local)", file=sys.stderr)
    with open_store(study, args.fresh) as store:
        resumed = store.count()
        _say(args, f"{len(study.range.candidates)} candidate commits, config {base.key}"
             + (f", resuming with {resumed} stored trials" if resumed else ""))
        strategy = replayed(study, store)
        progress = None if args.quiet else ProgressLines(study, strategy)
        try:
            run_study(study, store, strategy, progress)
        except KeyboardInterrupt:
            _finish(study, replayed(study, store))
            print(f"interrupted; resume with: bisect commits {shlex.join(_resume_argv(args))}", file=sys.stderr)
            return 130
        strategy = replayed(study, store)  # the report comes from the store, not from memory
    return _finish(study, strategy)


def parse_config(spec: Spec, assignments: list[str]) -> Config:
    pairs: dict[str, str] = {}
    for text in assignments:
        name, sep, label = text.partition("=")
        if not sep or not name:
            raise HeisenbisectError(f"--config: expected FACTOR=LEVEL, got {text!r}")
        pairs[name] = label
    try:
        return spec.config_from_assignments(pairs)
    except KeyError as exc:
        names = ", ".join(f.name for f in spec.factors) or "none"
        raise HeisenbisectError(f"--config: no factor named {exc.args[0]!r}; factors: {names}") from None
    except ValueError as exc:
        raise HeisenbisectError(f"--config: {exc}") from None


def _finish(study: CommitStudy, strategy: CommitStrategy) -> int:
    paths = write_report(study.folder, study.range, strategy, study.base.key)
    result = strategy.result()
    print(headline(study.range, result, strategy.settings.confidence))
    if result.state is State.FOUND:
        info = study.range.candidates[result.culprit]
        print(f"  {info.sha}\n  {info.author}, {info.date}")
    print(f"report: {paths.markdown}  (plot {paths.plot.name}, results {paths.results.name})")
    return 0 if result.state in (State.FOUND, State.SKIPPED) else 1


def _resume_argv(args: argparse.Namespace) -> list[str]:
    argv = [str(args.spec)]
    for text in args.config:
        argv += ["--config", text]
    if args.out:
        argv += ["--out", str(args.out)]
    return argv


def _say(args: argparse.Namespace, text: str) -> None:
    if not args.quiet:
        print(text, file=sys.stderr)


class ProgressLines:
    """One line per finished trial: where it ran, how it ended, and the current best guess."""

    def __init__(self, study: CommitStudy, strategy: CommitStrategy):
        self._study = study
        self._strategy = strategy  # the engine's: it has observed ``last`` before we are called
        self._position = {c.sha: i for i, c in enumerate(study.range.candidates)}

    def update(self, in_flight: Counter[Config], last: Outcome | None) -> None:
        if last is None:
            return
        commit = last.config_key.rsplit("@", 1)[-1]
        where = "good end" if commit == self._study.range.good.sha else f"#{self._position.get(commit, -1) + 1}"
        result = self._strategy.result()
        best = self._study.range.candidates[result.culprit]
        verdict = {TrialStatus.OK: "FAIL" if last.failed else "pass"}.get(last.status, last.status.value)
        print(
            f"[{result.trials:>4}] {commit[:10]} ({where:>8}) {verdict:<7} "
            f"best {best.short} {result.probability:.3f}  running {sum(in_flight.values())}",
            file=sys.stderr,
        )
