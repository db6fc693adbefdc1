"""Issue 37: `bisect commits` said nothing when the probed script had uncommitted edits (the probes
use each commit's committed files), so a user debugging an edited check bisected the old one."""

from __future__ import annotations

from bisect_cli import bisect
from commits_repo import git, make_flaky_repo, write_spec
from heisenbisect.git import uncommitted_paths


def test_uncommitted_paths_are_the_edited_tracked_files_under_the_folder(tmp_path):
    repo = make_flaky_repo(tmp_path).path
    assert uncommitted_paths(repo) == []
    (repo / "check.py").write_text("print('edited')\n")  # unstaged
    (repo / "pkg" / "flakymod.py").write_text("BUG = 1\n")
    git(repo, "add", "pkg/flakymod.py")  # staged
    git(repo, "mv", "notes.txt", "renamed.txt")  # a rename: one entry, the new name
    (repo / "untracked.py").write_text("x = 1\n")  # not in any commit: no probe would see it either
    assert sorted(uncommitted_paths(repo)) == ["check.py", "pkg/flakymod.py", "renamed.txt"]
    assert uncommitted_paths(repo, "pkg") == ["pkg/flakymod.py"]
    assert uncommitted_paths(tmp_path) == []  # not a repository: nothing to say


def test_commits_names_the_uncommitted_edits_before_bisecting(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    (repo.path / "check.py").write_text((repo.path / "check.py").read_text() + "# tried a fix\n")
    done = bisect("commits", str(spec))
    assert done.returncode == 0, done.stderr[-2000:]
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning: uncommitted")]
    assert warned == [
        f"warning: uncommitted changes in {repo.path} (check.py): the probes use the committed "
        "versions at each commit, not these edits; commit them, or `git stash`, to probe what "
        "you edited"
    ]
    assert done.stderr.index(warned[0]) < done.stderr.index("candidate commits")
    git(repo.path, "checkout", "--", "check.py")
    clean = bisect("commits", str(spec))
    assert clean.returncode == 0 and "uncommitted" not in clean.stderr
