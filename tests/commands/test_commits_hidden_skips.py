"""`bisect commits` where the failure is a could-not-run traceback at some commits, end to end on
a real history and real processes: c6 brings the failure in, and from c6 to c8 it is a run-time
FileNotFoundError (read as a skip), from c9 on a failed exit. Without `decide.hidden_skips` the
bisection named c9 at posterior 0.989 (its clean runs at c6-c8 read as good), and only the
verification's fresh runs kept it from being called the culprit."""

from __future__ import annotations

import json
import os
import sys

import pytest

from bisect_cli import bisect
from commits_repo import make_linear_repo
from heisenbisect.exit_codes import ExitCode

pytestmark = pytest.mark.slow  # a real repository and a few hundred real processes


def test_commits_whose_failure_skips_are_not_read_as_good(tmp_path):
    repo = make_linear_repo(tmp_path, 16, lambda k: 0.3 if k >= 6 else 0.0, hides=frozenset({6, 7, 8}))
    done = bisect("commits", "--good", "c0", "--bad", "c15", "--good-never-fails", "--", sys.executable,
                  "check.py", cwd=repo.path, env={**os.environ, "PYTHONPATH": "pkg"}, timeout=600)
    folder = repo.path / "reports" / "commits"
    found = json.loads((folder / "commits.json").read_text())
    assert found["culprit"] != repo.shas[9], (done.stdout, done.stderr)
    assert found["state"] == "skipped", (done.stdout, found)
    assert done.returncode == ExitCode.UNDECIDED and "could be any of" in done.stdout
    assert repo.shas[6] in found["candidate_set"]
    hiding = {p["commit"] for p in found["probes"] if p["skips_may_be_the_failure"]}
    assert hiding and hiding <= {repo.shas[k] for k in (6, 7, 8)}
    report = (folder / "commits.md").read_text()
    assert "## Skips that may be the failure" in report and "traceback_is_failure: true" in report
