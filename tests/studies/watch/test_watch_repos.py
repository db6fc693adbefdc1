"""`bisect watch` on real repositories grown between calls, as cron would run it: record, nothing
new, a regression bisected to its commit, a fix that stops working, a call killed mid-step."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bisect_cli import bisect
from commits_repo import commit, git
from heisenbisect.lock import StudyLock

CHECK = """\
import os, pathlib, random, sys, time
time.sleep(float(os.environ.get("RUN_SLEEP", "0")))
rate = float(pathlib.Path("bug.txt").read_text()) if pathlib.Path("bug.txt").exists() else 0.0
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
sys.exit(1 if rng.random() < rate else 0)
"""


def grow(repo: Path, first: int, last: int, bugs: dict[int, float] | None = None) -> dict[int, str]:
    """Commits c<first>..c<last>; c<k> in ``bugs`` sets the failure rate from there on."""
    shas = {}
    for k in range(first, last + 1):
        files = {"notes.txt": f"{k}\n"}
        if bugs and k in bugs:
            files["bug.txt"] = f"{bugs[k]}\n"
        shas[k] = commit(repo, f"c{k}: change {k}", files)
    return shas


def new_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "c0: start", {"check.py": CHECK})
    return repo


def watch(repo: Path, out: Path, *extra: str, env: dict | None = None):
    return bisect(
        "watch", "--repo", str(repo), "--branch", "main", "--out", str(out), "--parallel", "2",
        "--plain", *extra, "--", sys.executable, "check.py",
        cwd=repo, env={**os.environ, **(env or {})},
    )


def steps(out: Path) -> list[dict]:
    path = out / "watch" / "watch.sqlite"
    if not path.exists():
        return []
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        row = db.execute("SELECT value FROM meta WHERE key='watch_steps'").fetchone()
    return json.loads(row[0]) if row else []


@pytest.mark.slow
def test_pass_pass_then_a_regression_is_bisected_to_its_commit(tmp_path):
    repo = new_repo(tmp_path)
    grow(repo, 1, 9)
    out = tmp_path / "out"
    hook_copy = tmp_path / "notified.md"

    first = watch(repo, out)
    assert first.returncode == 0, first.stderr
    assert "recorded:" in first.stdout
    recorded = steps(out)
    assert [s["status"] for s in recorded] == ["good"] and recorded[0]["failed"] == 0

    again = watch(repo, out)
    assert again.returncode == 0 and "no new commit" in again.stdout
    assert steps(out) == recorded  # nothing ran, nothing changed

    shas = grow(repo, 10, 19, bugs={16: 0.3})
    hook = f"sh -c 'cp \"$0\" {hook_copy}'"
    found = watch(repo, out, "--on-regression", hook)
    assert found.returncode == 1, found.stdout + found.stderr
    assert f"regression: culprit {shas[16][:7]}" in found.stdout
    step = steps(out)[-1]
    assert step["status"] == "regression" and step["culprit"] == shas[16]
    report = Path(step["report"])
    text = report.read_text()
    assert shas[16] in text and "# Regression: " in text and "### Probed commits" in text
    assert hook_copy.read_text() == text  # --on-regression got the paste report's path

    third = watch(repo, out)
    assert third.returncode == 0 and "no new commit" in third.stdout
    assert len(steps(out)) == 2

    log = bisect("watch", "--repo", str(repo), "--out", str(out), "--log", cwd=repo)
    assert log.returncode == 0
    assert f"regression: culprit {shas[16][:10]}" in log.stdout and "| 2 |" in log.stdout


@pytest.mark.slow
def test_a_fix_that_stops_working_is_blamed_on_the_commit_that_undid_it(tmp_path):
    """The failure was fixed before the watch began (c5); c13 brings it back: the range starts at
    the last known good, so the old failing commits are never blamed."""
    repo = new_repo(tmp_path)
    grow(repo, 1, 9, bugs={1: 0.3, 5: 0.0})
    out = tmp_path / "out"
    assert watch(repo, out).returncode == 0
    shas = grow(repo, 10, 15, bugs={13: 0.3})
    found = watch(repo, out)
    assert found.returncode == 1, found.stdout + found.stderr
    assert steps(out)[-1]["culprit"] == shas[13]


@pytest.mark.slow
def test_a_new_head_that_is_not_worse_becomes_the_last_known_good(tmp_path):
    repo = new_repo(tmp_path)
    grow(repo, 1, 3)
    out = tmp_path / "out"
    assert watch(repo, out).returncode == 0
    shas = grow(repo, 4, 6)
    same = watch(repo, out)
    assert same.returncode == 0 and "not worse than" in same.stdout, same.stderr
    assert steps(out)[-1]["status"] == "good" and steps(out)[-1]["head"] == shas[6]


def test_a_second_watcher_is_refused_while_one_holds_the_state(tmp_path):
    repo = new_repo(tmp_path)
    out = tmp_path / "out"
    lock = StudyLock.acquire(out / "watch")
    try:
        busy = watch(repo, out)
    finally:
        lock.release()
    assert busy.returncode == 2 and "Traceback" not in busy.stderr
    assert str(os.getpid()) in busy.stderr


@pytest.mark.slow
def test_a_watch_killed_mid_bisection_resumes_it(tmp_path):
    repo = new_repo(tmp_path)
    grow(repo, 1, 5)
    out = tmp_path / "out"
    assert watch(repo, out).returncode == 0
    shas = grow(repo, 6, 21, bugs={13: 0.3})
    argv = [sys.executable, "-m", "heisenbisect", "watch", "--repo", str(repo), "--branch", "main",
            "--out", str(out), "--parallel", "2", "--plain", "--", sys.executable, "check.py"]
    proc = subprocess.Popen(argv, cwd=repo, env={**os.environ, "RUN_SLEEP": "0.2"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    bisections = out / "watch" / "bisections" / "step-0002" / "commits.sqlite"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        step = steps(out)[-1]
        marked = step["recorded"][0] + step["good_runs"] + step["runs"]
        probing = bisections.exists() and _outcomes(bisections) >= marked + 4
        if step["status"] == "bisecting" and probing:  # the marks, some probes
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert steps(out)[-1]["status"] == "bisecting"
    stored = _outcomes(bisections)
    resumed = watch(repo, out)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "resuming step 2" in resumed.stderr
    assert steps(out)[-1]["culprit"] == shas[13]
    assert _outcomes(bisections) > stored
    marks = json.loads(_meta(bisections, "marks"))
    assert len(marks) == 2  # the ends were marked once, not again on resume


def _outcomes(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def _meta(path: Path, key: str) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()[0]


@pytest.mark.slow
def test_a_spec_outside_the_repository_watches_its_target_in_each_worktree(tmp_path):
    """``bisect watch FILE``: the spec's commits.repo, its target run in the worktrees (a relative
    cwd names a folder of the worktree), the state beside the spec's other studies."""
    repo = new_repo(tmp_path)
    grow(repo, 1, 4)
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(
        f"study: flaky\ntarget:\n  command: [{sys.executable!r}, check.py]\n  result: exit\n"
        "commits:\n  repo: repo\n  good: HEAD~1\n  bad: HEAD\noutput: out\n"
    )
    args = ("watch", str(spec), "--branch", "main", "--plain", "--parallel", "2")
    assert bisect(*args).returncode == 0
    shas = grow(repo, 5, 12, bugs={9: 0.5})
    found = bisect(*args)
    assert found.returncode == 1, found.stdout + found.stderr
    assert steps(tmp_path / "out" / "flaky")[-1]["culprit"] == shas[9]
