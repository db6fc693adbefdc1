"""Before the first trial: can the target run at all? A missing script is not a failed test.

A misspelt script makes Python exit 2, which the exit-code protocol would read as "failed"
in every run, and the study would then judge factors on the interpreter's complaint. These
checks catch what can be seen without running anything (the command, its folder, the script
a ``python SCRIPT`` command names); what slips through is caught from the first trials'
exit and stderr (`protocol.never_ran_reason`).
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.hypotheses.loader import spec_position
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import commits_repo, target_folder, worktree_folder

PYTHON = re.compile(r"^python[0-9.]*$")
PYTHON_OPTIONS_WITH_VALUE = {"-W", "-X", "-Q"}


@dataclass(frozen=True)
class Problem:
    """Why the target cannot run, and which field of the spec to fix."""

    field: str  # "target.command" or "target.cwd"
    message: str


def target_problems(spec: Spec, spec_dir: Path) -> list[Problem]:
    """What stops ``spec``'s command target from running in its folder; empty when nothing visible does."""
    return _problems(spec, _Disk(target_folder(spec, spec_dir)))


def commit_problems(spec: Spec, spec_path: Path) -> list[Problem]:
    """What stops ``spec``'s target from running in the worktree of its bad commit, the range's
    repository and bad end resolved here (`bisect validate`; a bisection resolves its range
    once and asks `worktree_problems`). A misspelt ref is a `GitRangeError`."""
    from heisenbisect.git import open_repo, resolve

    assert spec.commits is not None
    spec_dir = Path(spec_path).parent

    def label(field: str) -> str:
        return f"{spec_position(spec_path, 'commits.' + field)}: commits.{field}"

    repo = open_repo(commits_repo(spec, spec_dir), label("repo"))
    root = Path(repo.working_tree_dir or repo.git_dir)
    folder = probed_folder(spec, spec_dir, root)
    if isinstance(folder, Problem):
        return [folder]
    return worktree_problems(spec, root, resolve(repo, spec.commits.bad, label("bad")), folder)


def uncommitted_warning(repo: Path, folder: str, shown: int = 5) -> str | None:
    """One line naming the edited, uncommitted files of the probed folder: a user who edited
    the check script expects the probes to run the edit; they run each commit's own files."""
    from heisenbisect.git import uncommitted_paths  # GitPython only when a commits spec is checked

    edited = uncommitted_paths(repo, folder)
    if not edited:
        return None
    named = ", ".join(edited[:shown]) + (
        f" and {len(edited) - shown} more" if len(edited) > shown else ""
    )
    return (
        f"warning: uncommitted changes in {repo} ({named}): the probes use the committed "
        "versions at each commit, not these edits; commit them, or `git stash`, to probe what "
        "you edited"
    )


def worktree_problems(spec: Spec, root: Path, bad: str, folder: str) -> list[Problem]:
    """What stops ``spec``'s target from running in ``folder`` of the worktree of commit ``bad``
    of the repository at ``root``.

    Without a build command, the folder and the command or script must be in the bad commit's
    tree (the spec's own folder does not count: probes never run there). A build may make them,
    so with one only a command looked up on PATH is checked.
    """
    assert spec.commits is not None
    at = f"commits.bad ({spec.commits.bad}, {bad[:10]})"
    files = None if spec.commits.build is not None else _CommitTree(root, bad, folder, at)
    return _problems(spec, files)


def probed_folder(spec: Spec, spec_dir: Path, repo_root: Path) -> str | Problem:
    """``target.cwd`` as a folder of each probe's worktree (`layout.worktree_folder`), or the
    refusal of a folder outside the repository: every place that probes commits asks this."""
    folder = worktree_folder(spec, spec_dir, repo_root)
    if folder is not None:
        return folder
    return Problem(
        "target.cwd",
        f"{spec.target.cwd or '.'!r} is {target_folder(spec, spec_dir)}, outside the repository "
        f"{repo_root.resolve()} and its worktrees; every probe runs in a worktree at the probed "
        "commit: give a folder of the repository",
    )


class _Disk:
    """The target's folder on disk, as `bisect run` runs it."""

    def __init__(self, folder: Path):
        self.folder = folder

    def folder_problem(self) -> str | None:
        return None if self.folder.is_dir() else f"folder {self.folder} does not exist"

    def mode(self, name: str) -> str | None:
        path = self.folder / name
        if path.is_dir():
            return "040000"
        if not path.exists():
            return None
        return "100755" if os.access(path, os.X_OK) else "100644"

    def where(self, name: str = "") -> str:
        return str(self.folder / name) if name else str(self.folder)


class _CommitTree:
    """The target's folder in a commit's tree, as each probe's worktree will hold it."""

    def __init__(self, root: Path, sha: str, folder: str, at: str):
        self.root, self.sha, self.folder, self.at = root, sha, folder, at

    def folder_problem(self) -> str | None:
        return (
            None
            if self.mode("") == "040000"
            else f"folder {self.root / self.folder} is not in {self.at}"
        )

    def mode(self, name: str) -> str | None:
        from heisenbisect.git import tree_entry  # GitPython only when a commits spec is checked

        if posixpath.isabs(name):
            return _Disk(Path("/")).mode(name)
        return tree_entry(
            self.root, self.sha, posixpath.normpath(posixpath.join(self.folder, name))
        )

    def where(self, name: str = "") -> str:
        return f"{self.root / posixpath.normpath(posixpath.join(self.folder, name))} at {self.at}"


def _problems(spec: Spec, files: _Disk | _CommitTree | None) -> list[Problem]:
    """The checks of `target_problems` against ``files`` (None: only a command on PATH)."""
    target = spec.target
    if not target.argv:
        return []  # a kind that runs no command of its own
    if files is not None and (problem := files.folder_problem()):
        return [Problem("target.cwd", problem)]
    argv = target.argv
    search_path = target.env.get("PATH", os.environ.get("PATH", ""))
    problem = _command_problem(argv[0], search_path, files)
    if problem:
        return [Problem("target.command", problem)]
    if files is not None and PYTHON.match(Path(argv[0]).name):
        script = python_script(argv[1:])
        if script is not None and files.mode(script) not in ("100644", "100755", "120000"):
            return [
                Problem("target.command", f"python script {script!r} not found in {files.where()}")
            ]
    return []


def _command_problem(
    command: str, search_path: str, files: _Disk | _CommitTree | None
) -> str | None:
    if PYTHON.match(command):
        return None  # a bare python means this interpreter (command.with_this_python)
    if os.sep not in command:
        if shutil.which(command, path=search_path) is None:
            return f"command {command!r} not found on PATH"
        return None
    if files is None:
        return None
    mode = files.mode(command)
    if mode is None:
        return f"command {command!r} not found (looked for {files.where(command)})"
    if mode not in ("100755", "120000"):
        return (
            f"command {command!r} is not executable ({files.where(command)}); chmod +x it or run "
            "it through its interpreter"
        )
    return None


def python_script(args: list[str]) -> str | None:
    """The script a ``python [options] SCRIPT ...`` command runs; None for ``-m``/``-c``/none."""
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in ("-m", "-c", "-"):
            return None
        if arg in PYTHON_OPTIONS_WITH_VALUE:
            skip_next = True
            continue
        if arg.startswith("-"):
            continue
        return arg
    return None


def problem_lines(spec: Spec, spec_path: Path) -> list[str]:
    """Each problem as ``file:line:col: field: message``, the form every spec error takes."""
    return lines_of(target_problems(spec, Path(spec_path).parent), spec_path)


def commit_problem_lines(spec: Spec, spec_path: Path) -> list[str]:
    """`commit_problems` as lines: what `bisect commits` and `bisect validate` check of a commits spec."""
    return lines_of(commit_problems(spec, spec_path), spec_path)


def spec_problem_lines(spec: Spec, spec_path: Path) -> list[str]:
    """What `bisect validate` checks: a spec with a ``commits:`` section runs its target in the
    bad commit's worktree, any other in its folder."""
    return (
        commit_problem_lines(spec, spec_path)
        if spec.commits is not None
        else problem_lines(spec, spec_path)
    )


def lines_of(problems: list[Problem], spec_path: Path) -> list[str]:
    return [f"{spec_position(spec_path, p.field)}: {p.field}: {p.message}" for p in problems]
