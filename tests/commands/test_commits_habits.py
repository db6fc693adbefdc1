"""`bisect commits` with git bisect's habits, end to end on real repositories and processes:
no spec file, marks by hand beside automated runs, a fix, soft priors, stored runs by identity."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import sys

import pytest

from bisect_cli import bisect, bisect_here
from commits_repo import (
    commit,
    git,
    make_flaky_repo,
    screened_at_bad,
    stored_runs_at,
    write_spec,
)
from heisenbisect.hypotheses import load_spec
from heisenbisect.records import Config
from heisenbisect.studies.commits.prepare import prepare

pytestmark = pytest.mark.slow  # real repositories and processes: seconds each


def trial_env() -> dict[str, str]:
    """check.py finds flakymod in the worktree's pkg/ (a spec says so with commits.pythonpath)."""
    return {**os.environ, "PYTHONPATH": "pkg", "FAIL_P": "0.5"}


def here(capsys, *argv: str) -> tuple[int, str, str]:
    """``bisect ARGV`` in this process (the actions are thin and start in a blink): code, stdout, stderr."""
    try:
        code = bisect_here(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    gc.collect()  # GitPython's repository objects sit in cycles; their cat-file processes go with them
    return code, out.out, out.err


def test_no_spec_command_line_bisects_resumes_and_keeps_the_tree_clean(tmp_path, capsys, monkeypatch):
    repo = make_flaky_repo(tmp_path)
    line = ("commits", "--good", "good", "--bad", "bad", "--confidence", "0.999", "--parallel", "2",
            "--", sys.executable, "check.py")
    done = bisect(*line, cwd=repo.path, env=trial_env())
    assert done.returncode == 0, done.stderr
    folder = repo.path / "reports" / "commits"
    found = json.loads((folder / "commits.json").read_text())
    assert found["culprit"] == repo.culprit and found["direction"] == "regression"
    assert git(repo.path, "status", "--porcelain") == "" and git(repo.path, "worktree", "list").count("\n") == 0

    again = bisect(*line, cwd=repo.path, env=trial_env())  # decided already: resumes, runs nothing
    stored = found["trials"] + found["verification"]["runs"]  # the culprit's fresh runs beside the search's
    assert found["verification"]["state"] == "verified", found["verification"]
    assert again.returncode == 0 and f"resuming with {stored} stored trials" in again.stderr
    monkeypatch.chdir(repo.path)
    code, out, err = here(capsys, "commits", "log")
    assert code == 0 and f"# {found['trials']} automated runs" in out, err

    wrong = bisect("commits", "--good", "nope", "--bad", "bad", "--", "true", cwd=repo.path)
    assert wrong.returncode == 2 and "--good: unknown revision 'nope'" in wrong.stderr
    assert "Traceback" not in wrong.stderr and wrong.stderr.strip().count("\n") == 0


def test_marks_undo_log_and_next_share_the_store_with_automated_runs(tmp_path, capsys):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    head = git(repo.path, "rev-parse", "HEAD")
    m8 = repo.first_parent[7]  # the commit before the culprit

    code, out, err = here(capsys, "commits", str(spec), "next", "--worktree", str(tmp_path / "probe"))
    assert code == 0, err
    suggested = next(line.split()[1] for line in out.splitlines() if line.startswith("next: "))
    assert suggested in repo.first_parent and git(tmp_path / "probe", "rev-parse", "HEAD") == suggested
    git(repo.path, "worktree", "remove", str(tmp_path / "probe"))

    assert here(capsys, "commits", str(spec), "mark", "bad", repo.culprit)[0] == 0
    code, out, _ = here(capsys, "commits", str(spec), "mark", "good", m8, "--runs", "20")
    assert code == 0 and f"culprit {repo.culprit[:10]}" in out, out
    log = here(capsys, "commits", str(spec), "log")[1].splitlines()
    assert f"bisect commits {spec} mark bad {repo.culprit} --runs 1 --failures 1" in log
    assert f"bisect commits {spec} mark good {m8} --runs 20 --failures 0" in log

    code, out, _ = here(capsys, "commits", str(spec), "undo")
    assert code == 0 and f"undone: bisect commits {spec} mark good {m8}" in out
    assert "undecided" in out  # one failing run at the culprit does not decide it
    log = here(capsys, "commits", str(spec), "log")[1]
    assert f"# undone: bisect commits {spec} mark good {m8} --runs 20 --failures 0" in log
    outside = bisect("commits", str(spec), "mark", "bad", repo.side[0])  # bad input: one line, exit 2
    assert outside.returncode == 2 and "is not a commit of the bisected range" in outside.stderr
    assert "Traceback" not in outside.stderr

    done = bisect("commits", str(spec))  # automated runs resume from the marks in force
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "out" / "flaky" / "commits.json").read_text())
    at_culprit = next(p for p in found["probes"] if p["commit"] == repo.culprit)
    assert found["culprit"] == repo.culprit and at_culprit["failures"] >= 1
    with sqlite3.connect(tmp_path / "out" / "flaky" / "commits.sqlite") as db:
        stored = [row[0] for row in db.execute("SELECT trial_id FROM outcomes")]
    undone = [t for t in stored if t.startswith("mark-0002-")]
    verifying = [t for t in stored if t.startswith("verify-")]  # the culprit's fresh runs: not the search's
    assert len(verifying) == found["verification"]["runs"] > 0
    assert len(undone) == 20 and found["trials"] == len(stored) - 20 - len(verifying)  # kept, and left out
    assert git(repo.path, "rev-parse", "HEAD") == head and git(repo.path, "status", "--porcelain") == ""


def test_fix_finds_where_the_failure_rate_went_down(tmp_path):
    repo = make_flaky_repo(tmp_path)
    commit(repo.path, "m15: polish", {"notes.txt": "15\n"})
    fix = commit(repo.path, "m16: serialize the two streams", {"pkg/flakymod.py": "BUG = False\n"})
    for i in (17, 18, 19):
        commit(repo.path, f"m{i}: polish", {"notes.txt": f"{i}\n"})
    done = bisect("commits", "--good", "bad", "--bad", "HEAD", "--fix", "--confidence", "0.999",
                  "--", sys.executable, "check.py", cwd=repo.path, env=trial_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"fix: culprit {fix[:10]}"), done.stdout
    folder = repo.path / "reports" / "commits"
    found = json.loads((folder / "commits.json").read_text())
    assert found["culprit"] == fix and found["direction"] == "fix"
    assert "Direction: **fix**" in (folder / "commits.md").read_text()


def test_soft_priors_weight_commits_but_never_exclude_the_culprit(tmp_path):
    repo = make_flaky_repo(tmp_path)
    priors = ('  priors:\n    - message: "^m3:"\n      weight: 50\n'
              '    - paths: [pkg]\n      message: "(?i)overlap"\n      weight: 2\n')
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n" + priors)
    loaded = load_spec(spec)
    study = prepare(loaded, spec, Config())
    assert study.weights is not None
    candidates, weights = study.range.candidates, study.weights.weights
    expected = {repo.first_parent[2]: 50.0, repo.culprit: 2.0}  # m3; the merge touches pkg/ (first parent)
    assert {c.sha: w for c, w in zip(candidates, weights) if w != 1.0} == expected
    gc.collect()  # GitPython's repository objects sit in cycles; their cat-file processes go with them

    done = bisect("commits", str(spec))  # the suspicion is wrong about m3: runs overrule it
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "flaky" / "commits.json").read_text())["culprit"] == repo.culprit
    report = (tmp_path / "out" / "flaky" / "commits.md").read_text()
    assert "## Soft priors" in report and "weight 50" in report and f"| `{repo.first_parent[2][:10]}` |" in report


def test_stored_runs_count_by_the_commit_they_ran_not_by_todays_checkout(tmp_path):
    repo, spec = screened_at_bad(tmp_path)
    git(repo.path, "checkout", "-q", "good")  # the user moved on: the runs still ran the bad commit
    bad = git(repo.path, "rev-parse", "bad")
    good = git(repo.path, "rev-parse", "good")
    folder = tmp_path / "out" / "flaky"
    # asked about the commit checked out now, the runs made at bad do not count
    assert stored_runs_at(spec, good, folder) is None

    done = bisect("commits", str(spec), "--plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "p_bad learned from runs already stored at the bad commit: bisect run:" in done.stderr
    assert f"made at {bad[:10]}" in done.stderr
    found = json.loads((folder / "commits.json").read_text())
    assert found["culprit"] == repo.culprit and found["stored_runs"][0].startswith("bisect run: ")
    report = (folder / "commits.md").read_text()
    assert "## Stored runs used" in report and f"made at {bad[:10]}" in report
