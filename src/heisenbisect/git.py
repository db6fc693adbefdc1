"""The one module that talks to git: resolve a commit range, list its candidates, keep worktrees.

Probes run in worktrees of their own (``git worktree add --detach`` in a temporary folder),
so the user's working tree, index and HEAD are never touched, and several commits can be
tested at once.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import git

from heisenbisect import signals
from heisenbisect.errors import HeisenbisectError

WORKTREE_PREFIX = "heisenbisect-wt-"
STALE_WORKTREE = re.compile(re.escape(WORKTREE_PREFIX) + r"(\d+)-")


class GitRangeError(HeisenbisectError):
    """The commit range cannot be bisected.

    Common causes: a misspelt ref or one not fetched yet (``git fetch``), ``good`` and
    ``bad`` swapped (good must be an ancestor of bad), a path filter that no commit of
    the range touches, ``repo`` pointing outside a git repository.
    """


@dataclass(frozen=True)
class CommitInfo:
    """What a report says about a commit."""

    sha: str
    subject: str
    author: str
    date: str  # ISO 8601, the author's date

    @property
    def short(self) -> str:
        return self.sha[:10]


@dataclass(frozen=True)
class CommitRange:
    """A resolved range: ``candidates`` run oldest first and end with ``bad``."""

    repo: Path
    good: CommitInfo
    bad: CommitInfo
    candidates: tuple[CommitInfo, ...]


def open_repo(path: str | Path, label: str = "commits.repo") -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise GitRangeError(f"{label}: {str(path)!r} is not inside a git repository") from None


def resolve(repo: git.Repo, ref: str, field: str) -> str:
    """The full sha of ``ref``; a ref that does not name a commit is a `GitRangeError`."""
    try:
        return repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except git.GitCommandError:
        raise GitRangeError(
            f"{field}: unknown revision {ref!r} in {repo.working_tree_dir or repo.git_dir}"
        ) from None


def commit_range(
    path: str | Path,
    good: str,
    bad: str,
    *,
    first_parent: bool = True,
    paths: tuple[str, ...] = (),
    label: Callable[[str], str] = lambda field: f"commits.{field}",
) -> CommitRange:
    """Resolve ``good..bad`` and list its candidates (first-parent by default, as git bisect
    --first-parent does; with ``paths`` only commits touching them, plus ``bad`` itself).

    ``label(field)`` names a field in error messages (the caller may add file:line:col).
    """
    repo = open_repo(path, label("repo"))
    good_sha = resolve(repo, good, label("good"))
    bad_sha = resolve(repo, bad, label("bad"))
    if good_sha == bad_sha:
        raise GitRangeError(
            f"{label('bad')}: the range is empty: good {good!r} and bad {bad!r} are the same commit"
        )
    if not repo.is_ancestor(repo.commit(good_sha), repo.commit(bad_sha)):
        raise GitRangeError(
            f"{label('good')}: {good!r} is not an ancestor of bad {bad!r}; are good and bad swapped?"
        )
    args = ["--reverse", *(["--first-parent"] if first_parent else []), f"{good_sha}..{bad_sha}"]
    if paths:
        args += ["--", *paths]
    shas = repo.git.rev_list(*args).split()
    if not shas or shas[-1] != bad_sha:
        shas.append(bad_sha)  # bad is known bad whether or not it touches the paths
    return CommitRange(
        repo=Path(repo.working_tree_dir or repo.git_dir),
        good=describe(repo, good_sha),
        bad=describe(repo, bad_sha),
        candidates=tuple(describe(repo, sha) for sha in shas),
    )


def describe(repo: git.Repo, sha: str) -> CommitInfo:
    commit = repo.commit(sha)
    return CommitInfo(
        sha=commit.hexsha,
        subject=commit.summary if isinstance(commit.summary, str) else commit.summary.decode(),
        author=f"{commit.author.name} <{commit.author.email}>",
        date=commit.authored_datetime.isoformat(),
    )


def checked_out_at(path: str | Path, sha: str) -> bool:
    """Whether ``path`` lies in a work tree at commit ``sha`` with no tracked file changed, so that
    runs made there (a screening's, say) ran the code of ``sha``."""
    try:
        repo = git.Repo(path, search_parent_directories=True)
        return repo.head.commit.hexsha == sha and not repo.is_dirty(untracked_files=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError, ValueError):
        return False


def tree_entry(repo_path: str | Path, sha: str, path: str) -> str | None:
    """The git mode of ``path`` (relative to the repository's root) in commit ``sha``: "040000"
    a folder, "100644" a file, "100755" an executable, "120000" a symlink; None when absent."""
    if path in ("", "."):
        return "040000"
    try:
        out = git.Repo(repo_path).git.ls_tree("-z", sha, "--", path)
    except git.GitCommandError:
        return None
    for entry in out.split("\0"):
        info, _, name = entry.partition("\t")
        if name == path:
            return info.split(" ", 1)[0]
    return None


def tree_of(repo_path: str | Path, sha: str) -> str | None:
    """The tree ``sha`` checks out, or None when this repository does not have it."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{sha}^{{tree}}"],
        cwd=repo_path,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def touched_paths(repo_path: Path, shas: list[str], field: str) -> dict[str, tuple[str, ...]]:
    """``{sha: paths it changes}``, a merge against its first parent; one git process for all.
    ``field`` names what asked, in the error a failure raises."""
    args = ["diff-tree", "--stdin", "-r", "--root", "--name-only", "-m", "--first-parent"]
    out = _output(repo_path, args, f"{repo_path}: {field}: git diff-tree failed", "\n".join(shas))
    touched: dict[str, list[str]] = {}
    current = None
    wanted = set(shas)
    for line in out.splitlines():
        if line in wanted:
            current = line
            touched.setdefault(current, [])
        elif line and current is not None:
            touched[current].append(line)
    return {sha: tuple(paths) for sha, paths in touched.items()}


def commit_messages(repo_path: Path, shas: list[str], field: str) -> dict[str, str]:
    """``{sha: whole message}``; one git process for all. ``field`` as in `touched_paths`."""
    args = ["log", "--no-walk=unsorted", "--stdin", "--format=%H%x00%B%x1e"]
    out = _output(repo_path, args, f"{repo_path}: {field}: git log failed", "\n".join(shas))
    messages = {}
    for record in out.split("\x1e"):
        sha, sep, body = record.strip("\n").partition("\x00")
        if sep:
            messages[sha] = body
    return messages


def add_worktree(repo_path: Path, folder: Path, sha: str, field: str) -> None:
    """``git worktree add --detach FOLDER SHA``: a checkout of its own, never the user's; a
    failure is an error that names ``field``, what asked for it."""
    _output(
        repo_path,
        ["worktree", "add", "--detach", str(folder), sha],
        f"{field}: git worktree add {folder} failed",
    )


def uncommitted_paths(repo_path: Path, folder: str = ".") -> list[str]:
    """Tracked files under ``folder`` whose working-tree or staged version differs from HEAD:
    edits that no probe runs, since each probe checks out a commit. None for a bare repository
    (git refuses, and there is no working tree to differ)."""
    done = subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=no", "--", folder],
        cwd=repo_path,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return []
    entries = done.stdout.split("\0")
    paths, skip = [], False
    for entry in entries:
        if skip or len(entry) < 4:  # a rename's second field is the old name
            skip = False
            continue
        paths.append(entry[3:])
        skip = entry[0] in "RC"
    return paths


def reverted_commit(repo_path: str | Path, head: str, culprit: str) -> str | None:
    """A commit object: ``head`` with ``culprit`` reverted (``git revert --no-commit``, ``-m 1``
    for a merge, in a worktree of its own that is removed after), or None when it does not
    revert cleanly. Nothing is checked out or moved in the user's tree; the commit is an object
    no ref names. Its author, committer and dates are ``head``'s, so the same revert gets the
    same sha on every run and a resumed verification finds its runs again."""
    repo_path = Path(repo_path)
    parents = _output(repo_path, ["rev-list", "--parents", "-n", "1", culprit], "revert").split()
    folder = Path(tempfile.mkdtemp(prefix=f"{WORKTREE_PREFIX}{os.getpid()}-"))
    tree = folder / "revert"
    try:
        add_worktree(repo_path, tree, head, "revert")
        mainline = ["-m", "1"] if len(parents) > 2 else []
        done = subprocess.run(
            ["git", "revert", "--no-commit", *mainline, culprit],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return None
        written = _output(tree, ["write-tree"], "revert: git write-tree").strip()
        who = _output(
            repo_path, ["show", "-s", "--format=%an%n%ae%n%aI%n%cn%n%ce%n%cI", head], "revert"
        ).splitlines()
        env = {
            **os.environ,
            **dict(zip(_IDENTITY_VARS, who, strict=True)),
        }
        message = f"Revert {culprit[:10]} on {head[:10]} (heisenbisect verification)"
        made = subprocess.run(
            ["git", "commit-tree", written, "-p", head, "-m", message],
            cwd=repo_path,
            capture_output=True,
            text=True,
            env=env,
        )
        if made.returncode != 0:
            raise HeisenbisectError(f"revert: git commit-tree failed: {made.stderr.strip()}")
        return made.stdout.strip()
    finally:
        with contextlib.suppress(HeisenbisectError):
            _output(repo_path, ["worktree", "remove", "--force", str(tree)], "revert")
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(HeisenbisectError):
            _output(repo_path, ["worktree", "prune"], "revert")


_IDENTITY_VARS = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
)


def _output(repo_path: Path, args: list[str], failure: str, stdin: str | None = None) -> str:
    """``git ARGS`` in ``repo_path``, its stdout; a failure raises ``failure: <git's stderr>``."""
    done = subprocess.run(
        ["git", *args], cwd=repo_path, input=stdin, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise HeisenbisectError(f"{failure}: {done.stderr.strip()}")
    return done.stdout


@dataclass
class Worktree:
    """A detached worktree and what it currently holds."""

    path: Path
    sha: str | None = None
    built: bool = False  # the build command ran successfully for ``sha`` here


class WorktreePool:
    """Up to ``size`` worktrees of ``repo``, reused across probes, removed by `close`.

    Each one lives in a fresh temporary folder named after this process, so a later pool
    can remove the worktrees of a driver that was killed (`remove_stale_worktrees`).
    Thread-safe: `checkout` hands a worktree to one caller at a time.
    """

    def __init__(self, repo: str | Path, size: int, root: Path | None = None):
        self._repo_path = Path(repo)
        self._size = size
        self._root = Path(tempfile.mkdtemp(prefix=f"{WORKTREE_PREFIX}{os.getpid()}-", dir=root))
        self._free: list[Worktree] = []
        self._count = 0
        self._lock = threading.Condition()
        self._closed = False
        remove_stale_worktrees(self._repo_path)

    @contextlib.contextmanager
    def checkout(self, sha: str) -> Iterator[Worktree]:
        """A worktree holding exactly ``sha`` (forced checkout, untracked files removed)."""
        tree = self._take(sha)
        try:
            if tree.sha != sha:
                tree.built = False
                tree.sha = None
                repo = git.Repo(tree.path)
                repo.git.checkout("--detach", "--force", sha)
                repo.git.clean("-ffdxq")
                tree.sha = sha
            yield tree
        finally:
            with self._lock:
                self._free.append(tree)
                self._lock.notify()

    def _take(self, sha: str) -> Worktree:
        with self._lock:
            while True:
                if self._closed:
                    raise RuntimeError("worktree pool is closed")
                for tree in self._free:
                    if tree.sha == sha:
                        self._free.remove(tree)
                        return tree
                if self._count < self._size:
                    self._count += 1
                    path = self._root / f"wt{self._count}"
                    break
                if self._free:
                    return self._free.pop(0)
                self._lock.wait()
            # creating a worktree writes .git/worktrees: keep it under the lock
            git.Repo(self._repo_path).git.worktree("add", "--detach", str(path), sha)
            return Worktree(path=path, sha=sha)

    def close(self) -> None:
        """Remove every worktree of this pool and its folder; idempotent. A signal arriving meanwhile
        waits for the end (`signals.deferred`): a Ctrl-C that lands while a study closes its runner
        left the worktrees registered in about 1 of 30 interrupted runs. A worktree git failed to
        remove goes with the folder, and ``prune`` forgets it."""
        with signals.deferred():
            with self._lock:
                if self._closed:
                    return
                self._closed = True
            for path in sorted(self._root.glob("wt*")):
                self._git("worktree", "remove", "--force", str(path))
            shutil.rmtree(self._root, ignore_errors=True)
            self._git("worktree", "prune")

    def _git(self, *args: str) -> None:
        """``git ARGS`` in the repository, its failure ignored (`close` goes on regardless)."""
        with contextlib.suppress(HeisenbisectError, OSError):
            _output(self._repo_path, list(args), "closing the worktree pool")

    def __enter__(self) -> WorktreePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_stale_worktrees(repo_path: str | Path) -> list[Path]:
    """Remove worktrees a killed heisenbisect driver left behind (its pid is gone)."""
    repo = git.Repo(repo_path)
    removed = []
    for line in _worktree_list(repo).splitlines():
        if not line.startswith("worktree "):
            continue
        path = Path(line.removeprefix("worktree "))
        match = STALE_WORKTREE.search(str(path))
        if match and not _alive(int(match.group(1))):
            with contextlib.suppress(git.GitCommandError):
                repo.git.worktree("remove", "--force", str(path))
            shutil.rmtree(path.parent, ignore_errors=True)
            removed.append(path)
    repo.git.worktree("prune")
    return removed


def _worktree_list(repo: git.Repo, attempts: int = 20) -> str:
    """``git worktree list --porcelain``, retried while another process adds a worktree: git
    then fails for a moment reading the new worktree's files ("failed to read ...")."""
    for _ in range(attempts - 1):
        try:
            return repo.git.worktree("list", "--porcelain")
        except git.GitCommandError as exc:
            if "failed to read" not in str(exc):
                raise
        time.sleep(0.1)
    return repo.git.worktree("list", "--porcelain")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
