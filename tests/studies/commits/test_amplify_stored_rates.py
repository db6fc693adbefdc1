"""Measured rates feed the bisection: runs an earlier study stored at the bad commit are
evidence about p (issue #12, item 6). Real repositories, real `bisect run` and `bisect commits`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bisect_cli import bisect
from commits_repo import git, make_flaky_repo, screened_at_bad, stored_runs_at
from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.decide.posterior import RunCounts, culprit_posterior, rate_priors


def test_stored_runs_give_the_posterior_that_probing_the_bad_end_would():
    """The prior from n stored runs (f failed) equals probing the bad end n times (f failures)."""
    rng = np.random.default_rng(0)
    trials = rng.integers(0, 6, size=20)
    failures = np.minimum(trials, rng.integers(0, 3, size=20)) * (np.arange(20) >= 12)
    bad, good = rate_priors(None, 0.0, (30, 9))
    stored = culprit_posterior(RunCounts(trials, failures), bad, good)
    probed_trials, probed_failures = trials.copy(), failures.copy()
    probed_trials[-1] += 30
    probed_failures[-1] += 9
    bad0, _ = rate_priors(None, 0.0)
    probed = culprit_posterior(RunCounts(probed_trials, probed_failures), bad0, good)
    assert np.allclose(stored.probs, probed.probs) and stored.mean_p_bad == pytest.approx(probed.mean_p_bad)


def test_stored_runs_replace_the_first_runs_at_the_bad_end():
    settings = Settings(p_good=0.0, bad_end_trials=10, stored_bad_runs=40, stored_bad_failures=6)
    strategy = CommitStrategy([f"c{i}" for i in range(16)], "good", settings)
    assert all(c.commit != "c15" for c in strategy.propose({}, 3))
    with pytest.raises(ValueError):
        rate_priors(None, None, (3, 4))


@pytest.mark.slow
def test_bisect_commits_learns_p_from_the_screenings_baseline_at_the_bad_commit(tmp_path):
    repo, spec = screened_at_bad(tmp_path)
    baseline = json.loads((tmp_path / "out" / "flaky" / "results.json").read_text())["baseline"]

    done = bisect("commits", str(spec), "--plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "p_bad learned from runs already stored at the bad commit: bisect run:" in done.stderr
    found = json.loads((tmp_path / "out" / "flaky" / "commits.json").read_text())
    assert found["culprit"] == repo.culprit
    bad_end = next((p for p in found["probes"] if p["commit"] == repo.first_parent[-1]), {"trials": 0})
    # the stored runs stand in for bad_end_trials (test_stored_runs_replace_the_first_runs_at_the_bad_end);
    # the range check's interleaved rounds at the two ends still run first (issue 35), at most end_runs
    assert bad_end["trials"] <= 30
    report = (tmp_path / "out" / "flaky" / "commits.md").read_text()
    assert f"p starts from {baseline['trials']} runs ({baseline['failures']} failed)" in report


def test_runs_of_another_commit_or_a_changed_tree_are_not_used(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec_path = repo.path / "hypotheses.yaml"
    spec_path.write_text(
        f"study: flaky\ntarget:\n  command: [python, check.py]\ncommits:\n  good: good\n  bad: bad\n"
        f"output: {str(tmp_path / 'out')!r}\n"
    )
    bad = git(repo.path, "rev-parse", "bad")
    git(repo.path, "checkout", "-q", "good")
    assert stored_runs_at(spec_path, bad, tmp_path / "out" / "flaky") is None
    git(repo.path, "checkout", "-q", "bad")
    (repo.path / "check.py").write_text("# edited\n")
    assert stored_runs_at(spec_path, bad, tmp_path / "out" / "flaky") is None
