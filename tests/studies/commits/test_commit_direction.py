"""A fix bisection is the regression model read backwards: checked against brute-force enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from heisenbisect.decide.commits import CommitStrategy, Settings
from heisenbisect.git import CommitInfo, CommitRange
from heisenbisect.records import Outcome, TrialStatus
from heisenbisect.studies.commits.direction import FixView, strategy_order, strategy_weights


def info(name: str) -> CommitInfo:
    return CommitInfo(sha=name, subject=name, author="a", date="d")


def fix_range(n: int) -> CommitRange:
    """old end A (fails), candidates c0 .. c{n-1}; c{n-1} = the new end (fixed)."""
    cands = tuple(info(f"c{k}") for k in range(n))
    return CommitRange(repo=None, good=info("A"), bad=cands[-1], candidates=cands)


def brute_force(runs: dict[str, tuple[int, int]], n: int, p: float, q: float, weights: np.ndarray) -> np.ndarray:
    """P(fix = c_k): A and c_0 .. c_{k-1} fail at p, c_k .. c_{n-1} at q; enumerated."""
    order = ["A", *[f"c{k}" for k in range(n)]]
    logs = []
    for k in range(n):
        total = 0.0
        for position, name in enumerate(order):
            f, s = runs.get(name, (0, 0))
            rate = p if position <= k else q  # position k is c_{k-1}: the last commit before the fix
            total += f * np.log(rate) + s * np.log1p(-rate)
        logs.append(total + np.log(weights[k]))
    logs = np.array(logs)
    probs = np.exp(logs - logs.max())
    return probs / probs.sum()


@pytest.mark.parametrize("seed", range(5))
def test_the_fix_posterior_and_run_counts_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    n, p, q = 9, 0.4, 0.05
    commit_range = fix_range(n)
    shas, good = strategy_order(commit_range, fix=True)
    weights = rng.uniform(0.2, 5.0, n)
    strategy = CommitStrategy(shas, good, Settings(p_bad=p, p_good=q), prior=strategy_weights(weights, fix=True))
    runs: dict[str, tuple[int, int]] = {}
    for name in ["A", *[f"c{k}" for k in range(n)]]:
        total = int(rng.integers(0, 6))
        failed = int(rng.integers(0, total + 1)) if total else 0
        runs[name] = (failed, total - failed)
        for j in range(total):
            outcome = Outcome(f"{name}-{j}", name, j, TrialStatus.OK, failures=int(j < failed), total=1)
            strategy.observe(strategy.config_for(name), outcome)
    view = FixView(strategy)
    assert np.allclose(view.posterior().probs, brute_force(runs, n, p, q, weights))
    assert [int(t) for t in view.trials] == [sum(runs[f"c{k}"]) for k in range(n)]
    assert [int(f) for f in view.failures] == [runs[f"c{k}"][0] for k in range(n)]
    assert (view.good_trials, view.good_failures) == (sum(runs["A"]), runs["A"][0])
    result = view.result()
    assert result.culprit == int(np.argmax(brute_force(runs, n, p, q, weights)))
    assert view.posterior().probs[result.culprit] == pytest.approx(result.probability)


def test_a_regression_keeps_the_range_order():
    commit_range = fix_range(4)
    assert strategy_order(commit_range, fix=False) == (["c0", "c1", "c2", "c3"], "A")
    assert strategy_order(commit_range, fix=True) == (["c2", "c1", "c0", "A"], "c3")
