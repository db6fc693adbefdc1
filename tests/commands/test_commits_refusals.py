"""`bisect commits` refuses a range it cannot answer and verifies what it names (issue 35), end to
end on real histories, real processes and real timeouts: swapped ends, a bad end that never
fails, a hang, a culprit forced by hand marks that fresh runs do not confirm, and the habits
around them (no --fresh in the resume hint, a bisection recorded without running anything)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
import yaml

from bisect_cli import bisect
from commits_repo import git, make_flaky_repo, make_linear_repo, write_spec
from heisenbisect.commands.common import rerun_command

pytestmark = pytest.mark.slow  # real repositories and processes: seconds each


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": "pkg", "FAIL_P": "0.5"}


def stored(folder) -> list[tuple[str, str, str]]:
    with sqlite3.connect(folder / "commits.sqlite") as db:
        return list(db.execute("SELECT trial_id, config, status FROM outcomes"))


def runs_at(rows, sha: str) -> int:
    return sum(json.loads(config)["commit"] == sha for _, config, _ in rows)


def test_swapped_ends_exit_3_without_naming_the_fix(tmp_path):
    """The issue's history: c25 FIXES a flaky failure (c0-c24 fail in 25% of runs); bisected as
    a regression from c0 to c49, the old tool printed "culprit ... (c25) (posterior 0.960)"."""
    repo = make_linear_repo(tmp_path, 50, lambda k: 0.25 if k < 25 else 0.0)
    done = bisect("commits", "--good", "c0", "--bad", "c49", "--", sys.executable, "check.py",
                  cwd=repo.path, env=env())
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "the range looks reversed: rerun with --fix" in done.stdout
    assert repo.shas[25][:10] not in done.stdout and "culprit" not in done.stdout
    folder = repo.path / "reports" / "commits"
    found = json.loads((folder / "commits.json").read_text())
    assert found["state"] == "reversed" and found["culprit"] is None
    assert "Refused: the range looks reversed" in (folder / "commits.md").read_text()
    rows = stored(folder)
    assert runs_at(rows, repo.shas[49]) <= 33 and runs_at(rows, repo.shas[0]) <= 33
    assert all(runs_at(rows, s) == 0 for s in repo.shas[1:49])  # nothing probed inside


def test_a_bad_end_that_never_fails_stops_within_the_first_runs_at_each_end(tmp_path):
    repo = make_linear_repo(tmp_path, 12, lambda k: 0.0)
    done = bisect("commits", "--good", "c0", "--bad", "c11", "--", sys.executable, "check.py",
                  cwd=repo.path, env=env())
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "the bad end does not fail: 0 of 30 runs at the bad end failed" in done.stdout
    rows = stored(repo.path / "reports" / "commits")
    assert runs_at(rows, repo.shas[11]) == 30 and runs_at(rows, repo.shas[0]) == 30
    assert len(rows) == 60

    given = bisect("commits", "--good", "c0", "--bad", "c11", "--good-never-fails", "--fresh", "--",
                   sys.executable, "check.py", cwd=repo.path, env=env())
    assert given.returncode == 3 and "the bad end does not fail" in given.stdout
    spec = yaml.safe_load((repo.path / "reports" / "commits" / "spec.yaml").read_text())
    assert spec["commits"]["p_good"] == 0.0  # told on the command line: no runs at the good end
    rows = stored(repo.path / "reports" / "commits")
    assert runs_at(rows, repo.shas[0]) == 0 and runs_at(rows, repo.shas[11]) == 30


def test_one_hang_costs_one_timeout(tmp_path):
    """c3-c6 hang; the failure arrives at c9. Each hanging commit the search probes is untestable
    after its first timeout, and the culprit is still found."""
    repo = make_linear_repo(tmp_path, 14, lambda k: 0.5 if k >= 9 else 0.0, hangs=frozenset({3, 4, 5, 6}))
    done = bisect("commits", "--good", "c0", "--bad", "c13", "--good-never-fails", "--timeout", "2",
                  "--confidence", "0.99", "--", sys.executable, "check.py", cwd=repo.path, env=env(),
                  timeout=300)
    assert done.returncode == 0, (done.stdout, done.stderr)
    folder = repo.path / "reports" / "commits"
    found = json.loads((folder / "commits.json").read_text())
    assert found["culprit"] == repo.shas[9] and found["verification"]["state"] == "verified"
    timeouts = [(json.loads(c)["commit"]) for _, c, status in stored(folder) if status == "timeout"]
    assert timeouts, "the search probed no hanging commit: the test shows nothing"
    assert sorted(set(timeouts)) == sorted(timeouts)  # one timeout per commit, never two
    assert set(timeouts) <= {repo.shas[k] for k in (3, 4, 5, 6)}
    untestable = {p["commit"] for p in found["probes"] if p["untestable"]}
    assert set(timeouts) <= untestable


def test_a_culprit_forced_by_hand_marks_is_not_verified(tmp_path):
    """Marks claim m5 broke it (one failing run, 30 clean runs at m4); fresh runs at m5 and m4
    both pass, so the named culprit is not verified: exit 1, and the report says so."""
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    m4, m5 = repo.first_parent[3], repo.first_parent[4]
    assert bisect("commits", str(spec), "mark", "bad", m5).returncode == 0
    marked = bisect("commits", str(spec), "mark", "good", m4, "--runs", "30")
    assert marked.returncode == 0 and f"culprit {m5[:10]}" in marked.stdout, marked.stdout

    done = bisect("commits", str(spec))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "NOT verified (the culprit's fresh runs fit a good commit's failure rate)" in done.stdout
    assert f"unconfirmed: {m5[:10]}" in done.stdout  # the headline does not call it the culprit
    assert not any(line.startswith("culprit") for line in done.stdout.splitlines())
    folder = tmp_path / "out" / "flaky"
    found = json.loads((folder / "commits.json").read_text())
    assert found["state"] == "not_verified" and found["culprit"] == m5
    check = found["verification"]
    assert check["culprit"]["failed"] == 0 and check["before"]["failed"] == 0
    assert check["runs"] == sum(1 for t, _, _ in stored(folder) if t.startswith("verify-"))
    report = (folder / "commits.md").read_text()
    assert f"**Unconfirmed: {m5[:10]}" in report and "- verification: NOT verified" in report


def test_a_true_culprit_is_verified_with_its_revert(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    done = bisect("commits", str(spec))
    assert done.returncode == 0, done.stderr
    assert "  verified: fresh runs at the culprit:" in done.stdout
    found = json.loads((tmp_path / "out" / "flaky" / "commits.json").read_text())
    check = found["verification"]
    assert found["culprit"] == repo.culprit and check["state"] == "verified"
    assert check["culprit"]["failed"] > 0 and check["before"]["failed"] == 0
    # the culprit is a merge: reverted on the bad end (-m 1), the flaky check passes again
    assert check["revert"]["runs"] > 0 and check["revert"]["failed"] == 0
    assert git(repo.path, "status", "--porcelain") == "" and git(repo.path, "worktree", "list").count("\n") == 0


def test_no_run_records_a_bisection_for_hand_marks(tmp_path):
    repo = make_flaky_repo(tmp_path)
    done = bisect("commits", "--good", "good", "--bad", "bad", "--no-run", "--", sys.executable, "check.py",
                  cwd=repo.path, env=env())
    assert done.returncode == 0 and "nothing was run" in done.stdout, done.stderr
    assert stored(repo.path / "reports" / "commits") == []
    nxt = bisect("commits", "next", cwd=repo.path)
    assert nxt.returncode == 0 and "next: " in nxt.stdout, nxt.stderr
    start = bisect("commits", "--good", "good", "--bad", "bad", "start", "--", sys.executable, "check.py",
                   cwd=repo.path, env=env())
    assert start.returncode == 0 and "nothing was run" in start.stdout, start.stderr
    assert bisect("commits", "mark", "bad", "bad", cwd=repo.path).returncode == 0


def test_the_resume_hint_never_carries_fresh(tmp_path):
    assert rerun_command(["commits", "--fresh", "--good", "a", "--", "cmd", "--fresh"]) == (
        "bisect commits --good a -- cmd --fresh"  # the target's own --fresh stays
    )
    repo = make_flaky_repo(tmp_path)
    line = [sys.executable, "-m", "heisenbisect", "commits", "--fresh", "--good", "good", "--bad", "bad",
            "--plain", "--", sys.executable, "check.py"]
    # runs slow enough that a loaded machine cannot finish the bisection before the signal
    proc = subprocess.Popen(line, cwd=repo.path, env={**env(), "RUN_SLEEP": "2"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    store = repo.path / "reports" / "commits" / "commits.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (store.exists() and stored(store.parent)):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    hint = next(line for line in err.splitlines() if "resume with:" in line)
    assert "--fresh" not in hint and "bisect commits --good good --bad bad --plain -- " in hint
