"""`bisect commits` end to end: a real repository with merges, a flaky check, real processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

import pytest

from bisect_cli import bisect, bisect_in_process
from commits_repo import git, make_flaky_repo, write_spec

pytestmark = pytest.mark.slow  # real repositories and processes: seconds each


def results(root) -> dict:
    return json.loads((root / "out" / "flaky" / "commits.json").read_text())


def stored_ids(root) -> list[str]:
    db = root / "out" / "flaky" / "commits.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        try:
            return [r[0] for r in conn.execute("SELECT trial_id FROM outcomes")]
        except sqlite3.OperationalError:
            return []


def test_names_the_merge_that_brought_the_bug_with_given_rates(tmp_path):
    repo = make_flaky_repo(tmp_path)
    head = git(repo.path, "rev-parse", "HEAD")
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n", extra="execution:\n  parallel: 2\n")
    done = bisect("commits", str(spec))
    assert done.returncode == 0, done.stderr
    found = results(tmp_path)
    assert found["state"] == "found"
    assert found["culprit"] == repo.culprit and found["confidence"] >= 0.999
    probes = {p["commit"]: p for p in found["probes"]}
    assert all(p["failures"] == 0 for sha, p in probes.items() if repo.first_parent.index(sha) < 8)
    assert probes.get(repo.untestable, {"untestable": True})["untestable"]
    report = (tmp_path / "out" / "flaky" / "commits.md").read_text()
    assert repo.culprit in report and "Ada Tester" in report and "| position |" in report
    assert "rates were learned" not in report
    assert "## Environment" in report and "| target commit | each probed commit of good " in report
    assert f"## Reproduce\n\n```\nbisect commits {spec}" in report and f"checkout {repo.first_parent[-1]}" in report
    assert (tmp_path / "out" / "flaky" / "commits.png").stat().st_size > 1000
    assert git(repo.path, "rev-parse", "HEAD") == head and git(repo.path, "status", "--porcelain") == ""
    assert git(repo.path, "worktree", "list").count("\n") == 0

    again = bisect("commits", str(spec))  # decided already: replays the store, runs nothing
    assert again.returncode == 0 and results(tmp_path)["trials"] == found["trials"]


def test_learns_the_rates_from_the_endpoints_and_probes(tmp_path):
    repo = make_flaky_repo(tmp_path)
    # two at once: the arrival order varies from run to run (test_commits_strategy's
    # test_out_of_order_arrivals_* replays many orders of this repository in pure logic)
    spec = write_spec(tmp_path, repo, commits_extra="  bad_end_trials: 4\n", extra="execution:\n  parallel: 2\n")
    done = bisect("commits", str(spec))
    assert done.returncode == 0, done.stderr
    found = results(tmp_path)
    assert found["culprit"] == repo.culprit, found  # the whole result, should this ever fail again
    bad_end = next(p for p in found["probes"] if p["commit"] == repo.first_parent[-1])
    assert bad_end["trials"] >= 4 and "posterior_mean" in found["p_bad"] and "posterior_mean" in found["p_good"], found
    report = (tmp_path / "out" / "flaky" / "commits.md").read_text()
    assert "rates were learned" in report and "commits.p_bad" in report  # the caveat and its remedy


def test_a_failed_build_leaves_the_candidate_set_as_git_does(tmp_path):
    """m8, the commit just before the culprit, does not build: no probe can tell the two apart."""
    repo = make_flaky_repo(tmp_path, broken_build=True)
    spec = write_spec(
        tmp_path, repo, commits_extra='  p_bad: 0.5\n  p_good: 0\n  build: test "$(cat build.txt)" = ok\n'
    )
    done = bisect("commits", str(spec))
    assert done.returncode == 1, done.stderr  # a candidate set is undecided (README's exit codes), never "found"
    found = results(tmp_path)
    assert found["state"] == "skipped" and found["culprit"] is None
    assert found["candidate_set"] == [repo.broken_build, repo.culprit]
    broken = next(p for p in found["probes"] if p["commit"] == repo.broken_build)
    assert broken["untestable"] and broken["trials"] == 0
    assert "could be any of" in done.stdout
    logs = list((tmp_path / "out" / "flaky" / "logs" / "commits").glob("*.build.log"))
    assert any("$ /bin/sh -c" in log.read_text() for log in logs)


def test_a_build_that_fails_everywhere_names_no_commit_and_exits_4(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n  build: exit 3\n")
    done = bisect("commits", str(spec))
    assert done.returncode == 4, done.stderr
    assert "no trial produced a result: 0 errors" in done.stderr and "build failed (exit 3" in done.stderr
    assert "could be any of" not in done.stdout + done.stderr and "culprit" not in done.stdout
    assert results(tmp_path)["state"] == "no_valid_runs"


@pytest.mark.parametrize(
    "good, field, message",
    [
        ("goood", "good", "commits.good: unknown revision 'goood'"),
        ("bad", "bad", "commits.bad: the range is empty"),
        ("HEAD~99", "good", "commits.good: unknown revision 'HEAD~99'"),
    ],
)
def test_range_errors_exit_2_with_one_line_naming_file_line_col(tmp_path, capsys, good, field, message):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo)
    spec.write_text(spec.read_text().replace("good: good", f"good: {good}"))
    line = spec.read_text().splitlines().index(f"  {field}: {good if field == 'good' else 'bad'}") + 1
    done = bisect_in_process(capsys, "commits", str(spec))
    assert done.returncode == 2
    assert f"{spec}:{line}:{len(field) + 5}: {message}" in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr


def test_good_not_an_ancestor_of_bad_exits_2(tmp_path, capsys):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo)
    spec.write_text(spec.read_text().replace("good: good", "good: bad").replace("bad: bad", "bad: good"))
    done = bisect_in_process(capsys, "commits", str(spec))
    assert done.returncode == 2 and "commits.good: 'bad' is not an ancestor of bad 'good'" in done.stderr


def test_unknown_config_factor_exits_2(tmp_path, capsys):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo)
    done = bisect_in_process(capsys, "commits", str(spec), "--config", "NOPE=1")
    assert done.returncode == 2 and "--config: no factor named 'NOPE'" in done.stderr


def test_resumes_after_kill_9_without_rerunning_a_finished_trial(tmp_path):
    repo = make_flaky_repo(tmp_path)
    run_log = tmp_path / "runs.log"
    spec = write_spec(
        tmp_path,
        repo,
        commits_extra="  p_bad: 0.5\n  p_good: 0\n",
        extra="execution:\n  parallel: 2\n",
        env={"RUN_LOG": str(run_log), "RUN_SLEEP": "0.3"},
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "heisenbisect", "commits", str(spec)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while len(stored_ids(tmp_path)) < 6 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = stored_ids(tmp_path)
    assert len(before) >= 6
    time.sleep(0.6)  # trials orphaned by the kill finish on their own

    done = bisect("commits", str(spec))
    assert done.returncode == 0, done.stderr
    assert f"resuming with {len(before)} stored trials" in done.stderr
    after = stored_ids(tmp_path)
    assert len(after) == len(set(after)) and set(before) <= set(after)
    starts = Counter(run_log.read_text().split())
    assert all(starts[trial] == 1 for trial in before), "a finished trial ran again"
    assert results(tmp_path)["culprit"] == repo.culprit
    assert git(repo.path, "worktree", "list").count("\n") == 0  # the killed driver's worktrees too


def test_ctrl_c_removes_the_worktrees_and_prints_how_to_resume(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(
        tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n", extra="execution:\n  parallel: 2\n",
        env={"RUN_SLEEP": "0.5"},
    )
    # SIGINT as at a terminal, even when this suite runs as a background job (which ignores it)
    interruptible = "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    proc = subprocess.Popen(
        [sys.executable, "-c", interruptible + "runpy.run_module('heisenbisect', run_name='__main__')",
         "commits", str(spec)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while len(stored_ids(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert f"resume with: bisect commits {spec}" in stderr
    assert git(repo.path, "worktree", "list").count("\n") == 0
    assert results(tmp_path)["state"] == "running"  # the report says what is known so far


def test_probes_run_on_ray_one_gpu_each_and_leave_no_worktree(ray_session, tmp_path):
    """Each probed commit gets a host actor with its own worktree on the worker; Ray picks the GPU."""
    repo = make_flaky_repo(tmp_path)
    devices = tmp_path / "devices.log"
    spec = write_spec(
        tmp_path,
        repo,
        commits_extra="  p_bad: 0.5\n  p_good: 0\n",
        extra="execution:\n  parallel: 2\n  gpus_per_trial: 1\n  cpus_per_trial: 0.5\n",
        env={"DEVICE_LOG": str(devices)},
    )
    done = bisect("commits", str(spec), "--address", ray_session)
    assert done.returncode == 0, done.stderr
    assert results(tmp_path)["culprit"] == repo.culprit
    seen = devices.read_text().split()  # a trial cancelled once decided may also have started
    assert len(seen) >= results(tmp_path)["trials"] and set(seen) <= {"0", "1"}
    assert git(repo.path, "worktree", "list").count("\n") == 0
