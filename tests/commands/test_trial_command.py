"""`bisect trial`: the sequential test's error rates by simulation, and the real command on a flaky script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from commits_repo import git, make_flaky_repo
from heisenbisect.decide.sprt import Decision, SequentialTest


def error_rate(true_rate: float, p_bad: float, p_good: float, confidence: float, wrong: Decision, n: int = 4000) -> float:
    rng = np.random.default_rng(11)
    errors = 0
    for _ in range(n):
        test = SequentialTest(p_bad, p_good, confidence)
        decision = Decision.UNDECIDED
        while decision is Decision.UNDECIDED:
            decision = test.update(bool(rng.random() < true_rate))
        errors += decision is wrong
    return errors / n


@pytest.mark.parametrize("p_bad, p_good", [(0.15, 0.0), (0.15, 0.02), (0.5, 0.1)])
def test_error_rates_stay_within_wald_bounds(p_bad, p_good):
    alpha = 0.05
    bound = alpha / (1 - alpha)  # Wald: each error rate is at most alpha / (1 - beta)
    slack = 3 * np.sqrt(bound * (1 - bound) / 4000)
    assert error_rate(p_bad, p_bad, p_good, 1 - alpha, Decision.GOOD) <= bound + slack
    assert error_rate(p_good, p_bad, p_good, 1 - alpha, Decision.BAD) <= bound + slack


def test_one_failure_proves_bad_when_good_never_fails():
    test = SequentialTest(0.15, 0.0)
    assert test.update(False) is Decision.UNDECIDED
    assert test.update(True) is Decision.BAD


def test_passes_needed_for_good_match_the_closed_form():
    test = SequentialTest(0.15, 0.0, 0.95)
    runs = 0
    while test.update(False) is Decision.UNDECIDED:
        runs += 1
    assert runs + 1 == int(np.ceil(np.log(19) / -np.log(0.85)))


@pytest.mark.parametrize("p_bad, p_good", [(0.1, 0.1), (0.1, 0.3)])
def test_rates_must_be_ordered(p_bad, p_good):
    with pytest.raises(ValueError, match="p_good < p_bad"):
        SequentialTest(p_bad, p_good)


FLAKY = """\
import sys
from pathlib import Path
mode = sys.argv[1]
if mode == "skip":
    sys.exit(125)
calls = Path("calls")
count = int(calls.read_text()) if calls.exists() else 0
calls.write_text(str(count + 1))
sys.exit(1 if mode == "bad" and count % 3 == 2 else 0)  # bad: passes twice, then fails: flaky, yet the test cannot flake
"""


def run_trial(tmp_path, options: list[str], mode: str) -> subprocess.CompletedProcess:
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY)
    argv = [sys.executable, "-m", "heisenbisect", "trial", *options, "--", sys.executable, str(script), mode]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_real_flaky_command_bad_good_and_untestable(tmp_path):
    sure = ["--p-bad", "0.5", "--confidence", "0.999"]  # good after 10 passes; bad fails every third run
    assert [run_trial(tmp_path, sure, "bad").returncode for _ in range(3)] == [1, 1, 1]
    good = run_trial(tmp_path, sure, "good")
    assert good.returncode == 0 and "good: 10 runs, 0 failed" in good.stderr
    assert run_trial(tmp_path, [], "skip").returncode == 125


def test_undecided_after_max_runs_is_125(tmp_path):
    done = run_trial(tmp_path, ["--p-bad", "0.15", "--max-runs", "3"], "good")
    assert done.returncode == 125 and "undecided after 3 runs" in done.stderr


def test_bad_options_exit_2(tmp_path):
    done = run_trial(tmp_path, ["--p-bad", "0.1", "--p-good", "0.2"], "good")
    assert done.returncode == 2 and "p_good < p_bad" in done.stderr and "Traceback" not in done.stderr
    missing = subprocess.run([sys.executable, "-m", "heisenbisect", "trial"], capture_output=True, text=True)
    assert missing.returncode == 2 and "give the command to repeat" in missing.stderr


def test_git_bisect_run_with_the_predicate_finds_the_merge(tmp_path):
    """The real `git bisect run`, first-parent, over a flaky check and an untestable commit."""
    repo = make_flaky_repo(tmp_path)
    git(repo.path, "bisect", "start", "--first-parent", "bad", "good")
    env = {"PYTHONPATH": "pkg", "FAIL_P": "0.5"}
    predicate = [sys.executable, "-m", "heisenbisect", "trial", "--p-bad", "0.5", "--confidence", "0.999", "--"]
    done = subprocess.run(
        ["git", "bisect", "run", *predicate, sys.executable, "check.py"],
        cwd=repo.path, env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )
    assert f"{repo.culprit} is the first bad commit" in done.stdout, done.stdout + done.stderr


def test_pytest_on_a_missing_test_file_is_untestable_and_its_log_is_kept(tmp_path):
    """At a commit where the test file does not exist yet pytest exits 4: untestable, not bad."""
    argv = [sys.executable, "-m", "heisenbisect", "trial", "--", sys.executable, "-m", "pytest", "-q", "tests/test_gone.py"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 125, done.stderr
    log = Path(done.stderr.split("log: ")[-1].strip())
    assert log.is_file() and log.is_relative_to(tmp_path / ".heisenbisect" / "trial-logs")
    assert "tests/test_gone.py" in log.read_text()  # pytest's own complaint, kept


def test_exit_codes_can_be_mapped(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text("import sys; sys.exit(int(sys.argv[1]))")
    base = [sys.executable, "-m", "heisenbisect", "trial", "--p-bad", "0.5", "--logs", str(tmp_path / "logs")]

    def trial(options: list[str], code: int) -> subprocess.CompletedProcess:
        argv = [*base, *options, "--", sys.executable, str(script), str(code)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)

    assert trial([], 127).returncode == 125  # a shell's "command not found": nothing was tested
    assert trial(["--skip-exit", "7"], 7).returncode == 125
    failed = trial(["--fail-exit", "127"], 127)
    assert failed.returncode == 1 and "log of the last failing run: " + str(tmp_path / "logs") in failed.stderr
