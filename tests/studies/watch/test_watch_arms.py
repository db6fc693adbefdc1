"""`bisect watch FILE` follows each arm the last `bisect run` decided, on a real repository grown
between calls: an env flag that eliminates the failure holds through new commits (quiet), then a
commit makes it stop working, and the arm's regression is bisected to that commit."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from bisect_cli import bisect
from commits_repo import commit, git

CHECK = """\
import os, pathlib, random, sys
rate = float(pathlib.Path("bug.txt").read_text())
if os.environ.get("FIX") == "1" and not pathlib.Path("fix_broken.txt").exists():
    rate = 0.0  # the fix: eliminates the failure, until a commit breaks it
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
sys.exit(1 if rng.random() < rate else 0)
"""


def grow(repo: Path, first: int, last: int, broken_at: int | None = None) -> dict[int, str]:
    shas = {}
    for k in range(first, last + 1):
        files = {"notes.txt": f"{k}\n"}
        if k == broken_at:
            files["fix_broken.txt"] = "the fix no longer applies\n"
        shas[k] = commit(repo, f"c{k}: change {k}", files)
    return shas


def watch_steps(out: Path) -> list[dict]:
    with sqlite3.connect(f"file:{out / 'watch' / 'watch.sqlite'}?mode=ro", uri=True) as db:
        return json.loads(db.execute("SELECT value FROM meta WHERE key='watch_steps'").fetchone()[0])


@pytest.mark.slow
def test_an_eliminator_that_stops_working_is_bisected_and_one_that_holds_stays_quiet(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "c0: start", {"check.py": CHECK, "bug.txt": "0.5\n"})
    grow(repo, 1, 3)
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(
        f"study: flaky\ntarget:\n  command: [{sys.executable!r}, check.py]\n  result: exit\n"
        "  cwd: repo\n"
        'factors:\n  - {name: fix, kind: env, var: FIX, levels: ["0", "1"]}\n'
        "statistics:\n  zero_rate: 0.1\n  max_trials: 80\n"
        "commits:\n  repo: repo\n  good: HEAD~1\n  bad: HEAD\noutput: out\n"
    )
    screened = bisect("run", str(spec), "--plain", "--parallel", "2", cwd=tmp_path)
    assert screened.returncode == 0, screened.stdout + screened.stderr
    assert "eliminates" in screened.stdout

    args = ("watch", str(spec), "--branch", "main", "--plain", "--parallel", "2",
            "--max-runs", "40")
    out = tmp_path / "out" / "flaky"
    first = bisect(*args, cwd=tmp_path)  # the baseline recorded; the arm's claim is the store's
    assert first.returncode == 0, first.stdout + first.stderr
    assert [s["config"] for s in watch_steps(out)] == ["baseline"]

    grow(repo, 4, 6)  # the fix still holds
    holds = bisect(*args, cwd=tmp_path)
    assert holds.returncode == 0, holds.stdout + holds.stderr
    arm = [s for s in watch_steps(out) if s["config"] == "fix=1"]
    assert len(arm) == 1 and arm[0]["status"] == "good", holds.stdout + holds.stderr
    assert arm[0]["failed"] == 0
    assert arm[0]["recorded"][1] == 0 and arm[0]["recorded"][0] >= 29  # the screening's 0 of n
    assert "regression" not in holds.stdout

    shas = grow(repo, 7, 12, broken_at=10)
    broken = bisect(*args, cwd=tmp_path)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert f"arm fix=1: regression: culprit {shas[10][:7]}" in broken.stdout
    last = watch_steps(out)[-1]
    assert last["config"] == "fix=1" and last["status"] == "regression"
    assert last["culprit"] == shas[10]
    report = Path(last["report"]).read_text()
    assert shas[10] in report and "fix=1" in report
    baseline = [s for s in watch_steps(out) if s["config"] == "baseline"]
    assert all(s["status"] != "regression" for s in baseline)  # the baseline did not move

    log = bisect("watch", str(spec), "--log", cwd=tmp_path)
    assert log.returncode == 0 and "| fix=1 |" in log.stdout

    again = bisect(*args, cwd=tmp_path)
    assert again.returncode == 0 and "no new commit" in again.stdout
