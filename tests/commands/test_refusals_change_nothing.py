"""A refused command changes nothing: every refusal path run against a populated study leaves
its folder byte for byte as it was (issue 37: a refused range had already rewritten spec.yaml).

The study lock's file is left out of the comparison: it records the pid of the last driver to
take the lock, which a refused command may be (it refuses under the lock, so two never race).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bisect_cli import bisect
from commits_repo import git, make_flaky_repo
from heisenbisect.cli import main

pytestmark = pytest.mark.slow  # a real repository and real trials

LOCK = ".lock"


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``: a file's bytes, a folder as None."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
        if p.name != LOCK
    }


def here(capsys, *argv: str) -> tuple[int, str]:
    """``bisect ARGV`` in this process, through the same `main` the script runs: code, stderr."""
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def populated(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """A bisection without a spec, started (4 automated runs) and marked by hand twice."""
    root = tmp_path_factory.mktemp("refusals")
    repo = make_flaky_repo(root)
    command = ["--", sys.executable, "check.py"]
    env = {"PYTHONPATH": "pkg", "FAIL_P": "0.5", "PATH": "/usr/bin:/bin"}
    started = bisect(
        "commits", "--good", "good", "--bad", "bad", "--max-trials", "4", "--plain", *command,
        cwd=repo.path, env=env,
    )
    assert started.returncode in (0, 1), started.stderr
    folder = repo.path / "reports" / "commits"
    for mark in (["good", repo.first_parent[2], "--runs", "5"], ["bad", repo.culprit]):
        done = bisect("commits", "mark", *mark, cwd=repo.path, env=env)
        assert done.returncode == 0, done.stderr
    return repo.path, folder, command


REFUSALS = {
    "swapped ends": ["--good", "bad", "--bad", "good"],
    "swapped ends, --fresh": ["--good", "bad", "--bad", "good", "--fresh"],
    "an unknown revision": ["--good", "nope", "--bad", "bad"],
    "an unknown revision, --fresh": ["--good", "good", "--bad", "nope", "--fresh"],
    "a bad confidence": ["--good", "good", "--bad", "bad", "--confidence", "2"],
    "a bad confidence, --fresh": ["--good", "good", "--bad", "bad", "--confidence", "0.2", "--fresh"],
    "no trials": ["--good", "good", "--bad", "bad", "--max-trials", "0"],
    "no time": ["--good", "good", "--bad", "bad", "--timeout", "0", "--fresh"],
    "a factor": ["--good", "good", "--bad", "bad", "--config", "x=1"],
    "a missing end": ["--good", "good"],
    "a negative parallel, --fresh": ["--good", "good", "--bad", "bad", "--parallel", "-2", "--fresh"],
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_bisection_line_changes_nothing(populated, case, capsys, monkeypatch):
    repo, folder, command = populated
    monkeypatch.chdir(repo)
    before = snapshot(folder)
    words = REFUSALS[case]
    code, err = here(capsys, "commits", *words, *([] if case == "a missing end" else command))
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert snapshot(folder) == before, f"{case}: the study folder changed"


def test_another_command_for_the_same_range_is_refused_and_the_stored_spec_kept(
    populated, capsys, monkeypatch
):
    repo, folder, _ = populated
    monkeypatch.chdir(repo)
    before = snapshot(folder)
    code, err = here(capsys, "commits", "--good", "good", "--bad", "bad", "--", "true")
    assert code == 2 and "different commit bisection" in err and "--fresh" in err, err
    assert snapshot(folder) == before
    code, err = here(capsys, "commits", "log")  # the original bisection goes on
    assert code == 0, err


MARK_REFUSALS = {
    "an unknown verb": ["mark", "maybe", "bad"],
    "negative runs": ["mark", "good", "good", "--runs", "-3"],
    "failures past runs": ["mark", "bad", "bad", "--runs", "2", "--failures", "3"],
    "a good mark with failures": ["mark", "good", "bad", "--failures", "1"],
    "a skip with runs": ["mark", "skip", "bad", "--runs", "2"],
    "a revision outside the range": ["mark", "good", "side"],
    "an unknown revision": ["mark", "bad", "nope"],
    "undo with words": ["undo", "now"],
    "log with words": ["log", "all"],
}


@pytest.mark.parametrize("case", sorted(MARK_REFUSALS))
def test_a_refused_action_changes_nothing(populated, case, capsys, monkeypatch):
    repo, folder, _ = populated
    monkeypatch.chdir(repo)
    before = snapshot(folder)
    code, err = here(capsys, "commits", *MARK_REFUSALS[case])
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert snapshot(folder) == before, f"{case}: the study folder changed"
    assert git(repo, "status", "--porcelain") == ""
