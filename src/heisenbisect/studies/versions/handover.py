"""From the first bad version to the first bad commit: ``bisect versions ... --repo DIR``.

The last good and the first bad version map to commits through their tags (``--tag-pattern``,
default ``v{version}``), and the search continues as ``bisect commits`` over that range, in
the same study folder (``commits-spec.yaml``, ``commits.sqlite``, ``commits.md``). Each probed
commit runs in a worktree of its own, in the last good version's environment (its dependencies
and ``--with`` pins) with the worktree's package folder first on PYTHONPATH, so the commit's
code is what gets imported. The runs the version bisection already made at the two versions
are handed over as marks at the two tagged commits (`studies.commits.marks`): a release is
taken to run its tag's code, so those runs are evidence at the range's ends, and ``bisect
commits log`` lists them.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import yaml

from heisenbisect.errors import HeisenbisectError
from heisenbisect.git import open_repo, resolve
from heisenbisect.records import Config
from heisenbisect.runners.factory import RunnerMaker
from heisenbisect.studies.commits.adhoc import flag_label, repo_root
from heisenbisect.studies.commits.marks import Verb, record_mark
from heisenbisect.studies.commits.prepare import open_commits_store
from heisenbisect.studies.commits.prepare import prepare as prepare_commits
from heisenbisect.studies.commits.result import CommitsResult
from heisenbisect.studies.commits.study import bisect_commits
from heisenbisect.studies.options import Options, loaded
from heisenbisect.studies.versions.prepare import VersionsRequest
from heisenbisect.studies.versions.result import VersionsResult
from heisenbisect.studies.versions.study import environments_of, prepare


@dataclasses.dataclass(frozen=True)
class Ends:
    """The tagged commits of the last good and the first bad version."""

    good_tag: str
    good: str
    bad_tag: str
    bad: str


def tagged_ends(repo: Path, pattern: str, good: str, bad: str) -> Ends:
    """Each version's tag as a commit; a missing tag is bad input naming ``--tag-pattern``."""
    found = open_repo(repo, "--repo")
    try:
        tags = [pattern.format(version=v) for v in (good, bad)]
        shas = [resolve(found, tag, f"--tag-pattern {pattern!r}") for tag in tags]
    finally:
        found.close()
    return Ends(tags[0], shas[0], tags[1], shas[1])


def package_folder(repo: Path, sha: str) -> str:
    """``src`` when the tree at ``sha`` has one (a src layout), else the top folder."""
    found = open_repo(repo, "--repo")
    try:
        return "src" if "src" in found.commit(sha).tree else "."
    finally:
        found.close()


def continue_into_commits(
    request: VersionsRequest,
    result: VersionsResult,
    options: Options,
    runners: RunnerMaker | None = None,
) -> CommitsResult:
    """Bisect the commits between ``result``'s last good and first bad version."""
    if result.culprit is None or result.predecessor is None or request.repo is None:
        raise HeisenbisectError("versions: --repo continues only from a found culprit version")
    root = repo_root(request.repo)
    ends = tagged_ends(root, request.tag_pattern, result.predecessor, result.culprit)
    study = prepare(request, options.parallel)
    environments = environments_of(study)
    log = study.paths.logs / f"handover-{result.predecessor}.build.log"
    problem = environments.ensure(result.predecessor, log, threading.Event())
    if problem is not None:
        raise HeisenbisectError(f"versions: --repo: {problem[0]}")
    spec_path = write_commits_spec(request, root, ends, environments.of(result.predecessor))
    spec, _ = loaded(Options(str(spec_path)))
    commits = prepare_commits(spec, spec_path, Config(), None, flag_label)
    with open_commits_store(commits, options.fresh) as store:
        if store.count() == 0:  # once: a resumed continuation has them already
            marked: tuple[tuple[Verb, str, str, str], ...] = (
                ("good", ends.good_tag, ends.good, result.predecessor),
                ("bad", ends.bad_tag, ends.bad, result.culprit),
            )
            for verb, tag, sha, version in marked:
                runs, failed = result.runs_at.get(version, (0, 0))
                if runs:
                    record_mark(store, commits.range, commits.base, verb, tag, sha, runs, failed)
    return bisect_commits(
        dataclasses.replace(options, spec=str(spec_path), out=None, fresh=False),
        [],
        runners,
        label=flag_label,
    )


def write_commits_spec(request: VersionsRequest, repo: Path, ends: Ends, env: Path) -> Path:
    """The continuation's spec, beside the version bisection's, in the same study folder.

    CMD runs in the last good version's environment: a bare ``python`` (or a console script
    that environment has) is named by its path there."""
    command = list(request.command)
    if command and (env / "bin" / command[0]).is_file() and "/" not in command[0]:
        command[0] = str(env / "bin" / command[0])
    here = Path.cwd().resolve()
    pythonpath = request.pythonpath or package_folder(repo, ends.bad)
    text = (
        f"# written by: bisect versions {request.package} ... --repo {repo}: the commits between "
        f"{ends.good_tag} and {ends.bad_tag}; rerun that line to resume\n"
    )
    text += yaml.safe_dump(
        {
            "study": request.study,
            "target": {
                "command": command,
                "result": request.result,
                "timeout": request.timeout,
                "cwd": str(here if here.is_relative_to(repo) else repo),
            },
            "commits": {
                "repo": str(repo),
                "good": ends.good,
                "bad": ends.bad,
                "pythonpath": pythonpath,
                "confidence": request.confidence,
                "max_trials": request.max_trials,
            },
            "output": str(request.root()),
        },
        sort_keys=False,
    )
    path = request.paths().commits_spec
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
