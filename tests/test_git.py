"""git.py against real repositories: ranges, first-parent candidates, worktrees that leave the user alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from commits_repo import git, make_flaky_repo
from heisenbisect.git import GitRangeError, WorktreePool, commit_range


@pytest.fixture(scope="module")
def flaky(tmp_path_factory):
    return make_flaky_repo(tmp_path_factory.mktemp("git"))


def test_first_parent_candidates_end_with_bad_and_skip_the_side_branch(flaky):
    found = commit_range(flaky.path, "good", "bad")
    assert [c.sha for c in found.candidates] == flaky.first_parent
    assert found.candidates[-1].sha == found.bad.sha
    merge = next(c for c in found.candidates if c.sha == flaky.culprit)
    assert merge.subject == "Merge branch 'side': stream overlap"
    assert merge.author == "Ada Tester <ada@example.com>"


def test_all_parents_include_the_side_branch(flaky):
    found = commit_range(flaky.path, "good", "bad", first_parent=False)
    shas = [c.sha for c in found.candidates]
    assert set(flaky.side) <= set(shas) and len(shas) == len(flaky.first_parent) + 2


def test_path_filter_keeps_touching_commits_and_bad(flaky):
    found = commit_range(flaky.path, "good", "bad", first_parent=False, paths=("pkg",))
    assert [c.sha for c in found.candidates] == [flaky.side[1], flaky.first_parent[-1]]


@pytest.mark.parametrize(
    "good, bad, message",
    [
        ("goood", "bad", "commits.good: unknown revision 'goood'"),
        ("good", "HEAD~99", "commits.bad: unknown revision 'HEAD~99'"),
        ("bad", "bad", "the range is empty"),
        ("bad", "good", "commits.good: 'bad' is not an ancestor of bad 'good'"),
    ],
)
def test_bad_ranges_are_one_clear_error(flaky, good, bad, message):
    with pytest.raises(GitRangeError, match=message.replace("(", r"\(")) as info:
        commit_range(flaky.path, good, bad)
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_not_a_repository(tmp_path):
    with pytest.raises(GitRangeError, match="not inside a git repository"):
        commit_range(tmp_path, "a", "b")


def test_worktrees_never_touch_the_users_tree_index_or_head(flaky):
    repo = flaky.path
    (repo / "notes.txt").write_text("uncommitted edit\n")
    (repo / "scratch.txt").write_text("untracked\n")
    git(repo, "add", "notes.txt")
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "symbolic-ref", "HEAD"))
    try:
        with WorktreePool(repo, size=2) as pool:
            with pool.checkout(flaky.first_parent[0]) as first, pool.checkout(flaky.culprit) as second:
                assert first.path != second.path
                assert (second.path / "pkg/flakymod.py").read_text() == "BUG = True\n"
                (second.path / "junk.o").write_text("build output")
            with pool.checkout(flaky.untestable) as again:  # reused, cleaned, switched
                assert again.path in (first.path, second.path)
                assert (again.path / "UNTESTABLE").exists() and not (again.path / "junk.o").exists()
            root = first.path.parent
        after = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "symbolic-ref", "HEAD"))
        assert after == before
        assert (repo / "notes.txt").read_text() == "uncommitted edit\n"
        assert git(repo, "worktree", "list").count("\n") == 0  # only the main working tree
        assert not root.exists()
    finally:
        git(repo, "reset", "-q", "--hard")
        (repo / "scratch.txt").unlink()


def test_worktrees_of_a_killed_driver_are_removed_by_the_next_pool(flaky, tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time
        from heisenbisect.git import WorktreePool
        pool = WorktreePool({str(flaky.path)!r}, size=1)
        with pool.checkout({flaky.culprit!r}) as tree:
            print(tree.path, flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    stale = proc.stdout.readline().strip()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert stale in git(flaky.path, "worktree", "list")
    with WorktreePool(flaky.path, size=1):
        assert stale not in git(flaky.path, "worktree", "list")
    assert not os.path.exists(stale)


def test_a_revert_is_a_commit_object_on_the_bad_end_and_the_same_every_time(tmp_path):
    from heisenbisect.git import reverted_commit

    run_git = git
    repo = make_flaky_repo(tmp_path)
    bad = run_git(repo.path, "rev-parse", "bad")
    head = run_git(repo.path, "rev-parse", "HEAD")
    sha = reverted_commit(repo.path, bad, repo.culprit)  # a merge: reverted against its first parent
    assert sha is not None and sha == reverted_commit(repo.path, bad, repo.culprit)
    assert run_git(repo.path, "rev-parse", f"{sha}^") == bad
    assert run_git(repo.path, "show", f"{sha}:pkg/flakymod.py") == "BUG = False"
    m5 = repo.first_parent[4]  # later commits rewrite notes.txt: its revert conflicts
    assert reverted_commit(repo.path, bad, m5) is None
    assert run_git(repo.path, "rev-parse", "HEAD") == head and run_git(repo.path, "status", "--porcelain") == ""
    assert run_git(repo.path, "worktree", "list").count("\n") == 0
    assert sha not in run_git(repo.path, "for-each-ref")  # no ref names it


def test_a_signal_storm_during_close_still_removes_every_worktree(flaky):
    """Ctrl-C pressed while a study closes its runner: the pool's close finishes first (it once
    left the worktrees registered when the signal landed between two of its steps)."""
    script = textwrap.dedent(
        f"""
        import os, signal, threading, time
        from heisenbisect.git import WorktreePool
        signal.signal(signal.SIGINT, signal.default_int_handler)
        pool = WorktreePool({str(flaky.path)!r}, size=2)
        with pool.checkout({flaky.culprit!r}), pool.checkout({flaky.untestable!r}):
            pass
        def storm():
            while not pool._closed:  # from the moment close has begun
                time.sleep(0)
            for _ in range(3000):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.0005)
        threading.Thread(target=storm, daemon=True).start()
        try:
            pool.close()
        except KeyboardInterrupt:
            print("interrupted after close", flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert git(flaky.path, "worktree", "list").count("\n") == 0, done.stderr
    assert "interrupted after close" in done.stdout, done.stderr
