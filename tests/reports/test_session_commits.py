"""A study resumed after the target's repository moved to another commit pools runs of two
versions of the code: the report says so beside the verdicts and lists each commit with its
runs. Real git repositories, real studies of real processes, real sqlite stores."""

from __future__ import annotations

import subprocess
from pathlib import Path

from test_load_evidence import row, write_study

from heisenbisect.cli import main
from heisenbisect.decide.cautions import cautions_of, session_commits
from heisenbisect.reports.cautions import markdown


def commit_all(folder: Path, message: str) -> str:
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", message], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def test_a_study_resumed_at_another_commit_says_its_runs_span_both(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("reports/\n")
    spec = write_study(tmp_path, max_trials=5)
    first = commit_all(tmp_path, "first")
    assert main(["run", str(spec), "--plain"]) in (0, 1)
    report = (tmp_path / "reports" / "load" / "report.md").read_text()
    assert "**Commits.**" not in report and row(report, "target commit") == f"| target commit | {first} |"

    (tmp_path / "NOTES").write_text("the code moved on\n")
    spec.write_text(spec.read_text().replace("max_trials: 5", "max_trials: 10"))  # more runs: the study resumes
    second = commit_all(tmp_path, "second")
    assert main(["run", str(spec), "--plain"]) in (0, 1)
    report = (tmp_path / "reports" / "load" / "report.md").read_text()
    assert f"started at 2 commits of the target's repository (`{first[:12]}` (1 run of the study), " \
           f"`{second[:12]}` (1 run of the study))" in report
    assert row(report, "target commit") == (
        f"| target commit | {first} (1 run of the study), {second} (1 run of the study) |")


def test_sessions_without_a_recorded_commit_make_no_claim():
    old = {"sessions": [{"load_start": 0.1}, {"load_start": 0.2, "target_commit": "a" * 40}]}
    assert session_commits(old) == [("a" * 40, 1)] and cautions_of(old, []) is None
    assert cautions_of(None, []) is None and session_commits({"sessions": []}) == []


def test_a_clean_and_a_dirty_session_of_one_commit_read_as_two_commits():
    """The H200 re-check resumed in a working tree with an edited file: the line listed
    `6209621ed9e1` twice; the dirty mark tells them apart."""
    commit = "6209621ed9e177f4cd47d193370c5f8e848d061b"
    caution = markdown(cautions_of({"sessions": [{"target_commit": commit}, {"target_commit": commit + "+dirty"}]}, []))
    assert "(`6209621ed9e1` (1 run of the study), `6209621ed9e1+dirty` (1 run of the study))" in caution
