"""`bisect versions`: find the released version that brought a flaky failure, then the commit.

    bisect versions PACKAGE --good V1 --bad V2 [--find-links DIR | --index-url URL]
                    [--with PKG==VER ...] [--pre] [--yanked] [--repo DIR] -- CMD ...

The study is `studies.versions` (each version installed once into an environment of its own);
with ``--repo`` the search continues over the commits between the last good and the first bad
version (`studies.versions.handover`), as ``bisect commits`` does. Exit codes: those of ``bisect
commits`` (`studies.commits.result`), the continuation's when there is one.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

from heisenbisect.commands.common import add_execution_arguments, options_of, rerun_command
from heisenbisect.errors import HeisenbisectError
from heisenbisect.studies.options import StudyInterrupted

if TYPE_CHECKING:
    from heisenbisect.studies.versions.result import VersionsResult


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "versions",
        help="noisy bisection over a package's released versions (then, with --repo, its commits)",
        description="Install each released version of PACKAGE between --good and --bad (in version "
        "order; pre-releases and yanked ones only when asked) once into an environment of its own "
        "(uv where installed, else pip; your environment is never touched), run CMD there (its "
        "`python` is that environment's) and bisect as `bisect commits` does. A version that cannot "
        "be installed or imported is untestable, never the culprit. Writes versions.md and "
        "results.json under <out>/versions-<package>/; rerunning resumes. With --repo, the search "
        "continues over the commits between the last good and the first bad version.",
    )
    parser.__class__ = CommandAfterDashes
    parser.add_argument("package", metavar="PACKAGE", help="the distribution to bisect")
    parser.add_argument("command", nargs="*", metavar="CMD", help="(after --) the command to run")
    parser.add_argument("--good", required=True, metavar="V1", help="the older version, working")
    parser.add_argument("--bad", required=True, metavar="V2", help="the newer version, failing")
    parser.add_argument(
        "--find-links",
        metavar="DIR",
        help="a folder of wheels and sdists: the versions and the files come from it (with no "
        "--index-url, nothing is fetched from an index)",
    )
    parser.add_argument("--index-url", metavar="URL", help="a simple-API index (PEP 503/691)")
    parser.add_argument(
        "--with",
        dest="pins",
        action="append",
        default=[],
        metavar="PKG==VER",
        help="install this requirement beside every version (repeatable)",
    )
    parser.add_argument(
        "--installer",
        choices=("auto", "uv", "pip"),  # `targets.installed.installer`
        default="auto",
        help="what makes each version's environment: uv, pip (this interpreter's), or auto (uv "
        "when it is on PATH or beside this interpreter, else pip; default)",
    )
    parser.add_argument("--pre", action="store_true", help="include pre-releases")
    parser.add_argument("--yanked", action="store_true", help="include yanked versions")
    parser.add_argument(
        "--out", metavar="DIR", help="folder for studies (default: reports/ in the current folder)"
    )
    add_execution_arguments(parser)
    parser.add_argument(
        "--result",
        choices=("exit", "json"),
        default="exit",
        help="how CMD reports, as `bisect trial`: exit (its exit code; 125 untestable) or json",
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument(
        "--confidence", type=float, default=0.95, help="stop when one version holds this posterior"
    )
    parser.add_argument("--max-trials", type=int, default=2000, help="the budget of runs")
    parser.add_argument(
        "--end-runs",
        type=int,
        default=30,
        metavar="N",
        help="runs at each end, bad end first, before an undecided check lets the search go on; "
        "a bad end without a failure in N runs is refused (exit 3)",
    )
    commits = parser.add_argument_group("then the commits between")
    commits.add_argument(
        "--repo", metavar="DIR", help="the package's git repository: continue into its commits"
    )
    commits.add_argument(
        "--tag-pattern",
        default="v{version}",
        metavar="PATTERN",
        help="the tag of each version in --repo",
    )
    commits.add_argument(
        "--pythonpath",
        metavar="DIR",
        help="the worktree folder holding the package, put first on PYTHONPATH (default: src "
        "when the tree has one, else its top folder)",
    )
    parser.set_defaults(handler=run)


class CommandAfterDashes(argparse.ArgumentParser):
    """Takes every word after the first ``--`` as CMD: argparse alone would match both
    positionals at PACKAGE, before the options, and refuse CMD as unrecognized."""

    def parse_known_args(self, args=None, namespace=None):
        words = list(sys.argv[1:] if args is None else args)
        cut = words.index("--") if "--" in words else len(words)
        found, extra = super().parse_known_args(words[:cut], namespace)
        if found.command:
            extra = [*extra, *found.command]  # words before --: refused as unrecognized
        found.command = words[cut + 1 :]
        return found, extra


def run(args: argparse.Namespace) -> int:
    from heisenbisect.studies.versions.prepare import VersionsRequest
    from heisenbisect.studies.versions.study import bisect_versions

    if not 0.5 < args.confidence < 1:
        raise HeisenbisectError(f"--confidence: must be > 0.5 and < 1, got {args.confidence:g}")
    if args.max_trials < 1 or args.end_runs < 1 or not args.timeout > 0:
        raise HeisenbisectError("--max-trials and --end-runs must be >= 1 and --timeout > 0")
    if "{version}" not in args.tag_pattern:
        raise HeisenbisectError(
            f"--tag-pattern: must hold {{version}}, e.g. v{{version}}, got {args.tag_pattern!r}"
        )
    request = VersionsRequest(
        package=args.package,
        good=args.good,
        bad=args.bad,
        command=tuple(args.command),
        find_links=args.find_links,
        index_url=args.index_url,
        pins=tuple(args.pins),
        pre=args.pre,
        yanked=args.yanked,
        out=args.out,
        result=args.result,
        timeout=args.timeout,
        confidence=args.confidence,
        max_trials=args.max_trials,
        repo=args.repo,
        tag_pattern=args.tag_pattern,
        pythonpath=args.pythonpath,
        installer=args.installer,
        end_runs=args.end_runs,
    )
    options = dataclasses.replace(options_of(args, "", args.out), resume_with=resume_command())
    try:
        result = bisect_versions(request, options)
    except StudyInterrupted as exc:
        return exc.exit_code
    code = print_result(result)
    if request.repo is None or result.culprit is None or code != 0:
        return code  # an unverified culprit is no ground to bisect the commits before it
    return _continue(request, result, options)


def _continue(request, result: VersionsResult, options) -> int:
    """The commits between the last good and the first bad version, as `bisect commits`."""
    from heisenbisect.commands.commits import print_result as print_commits
    from heisenbisect.studies.versions.handover import continue_into_commits

    print(
        f"continuing into the commits between {request.package} {result.predecessor} and "
        f"{result.culprit} in {request.repo}",
        file=sys.stderr,
    )
    try:
        found = continue_into_commits(request, result, options)
    except StudyInterrupted as exc:
        if exc.result is not None:
            print_commits(exc.result)
        print(f"interrupted; resume with: {options.resume_with}", file=sys.stderr)
        return exc.exit_code
    return print_commits(found)


def resume_command() -> str:
    """The command line that resumes: the one run, without ``--fresh`` (before ``--``)."""
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    return rerun_command([w for w in argv[:cut] if w != "--fresh"] + argv[cut:])


def print_result(result: VersionsResult) -> int:
    """What ``bisect versions`` prints; returns its exit code."""
    if result.no_valid_runs:
        for line in result.warnings:
            print(line, file=sys.stderr)
        print(f"report: {result.report}")
        return result.exit_code
    print(result.headline)
    if result.verification_line is not None:
        print(f"  {result.verification_line}")
    print(f"report: {result.report}  (results {result.results.name})")
    for line in result.warnings:
        print(line, file=sys.stderr)
    return result.exit_code
