"""Skips that may be the failure (`decide.hidden_skips`): the reading's two errors against a
simulated reference, and a bisection that does not name a culprit past commits whose failure
is a could-not-run traceback (it named one in 20 of 20 studies before)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from heisenbisect.decide.commits import CommitStrategy, Settings, State
from heisenbisect.decide.hidden_skips import MISSED, read_skips
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

CONFIDENCE = 0.95
REFERENCE = (40, 12, 0)  # the failing commits: 40 clean runs, 12 failed, none skipped


def reading(skips: int, clean: int, reference: tuple[int, int, int] = REFERENCE):
    """The reading of commit 0 (``clean`` runs, none failed, ``skips`` skipped) beside a failing one."""
    runs, failed, skipped = reference
    return read_skips(
        np.array([clean, runs]), np.array([0, failed]), np.array([skips, skipped]), CONFIDENCE
    )


def test_nothing_is_read_where_nothing_skipped():
    read = reading(0, 3)
    assert not read.hiding.any() and not read.unread.any()


def test_skips_where_the_failing_commits_never_skip_read_as_hiding():
    read = reading(4, 8)
    assert read.hiding[0] and not read.unread[0]


def test_a_few_clean_runs_leave_a_skipping_commit_unread():
    read = reading(1, 3)
    assert read.unread[0] and not read.hiding[0]


def test_skips_as_common_as_at_the_failing_commits_read_benign():
    read = reading(6, 54, (60, 18, 6))
    assert not read.hiding[0] and not read.unread[0]


def sequential_reading(rng: random.Random, skip_share: float, reference) -> str:
    """Run one commit until its reading is made: "hiding" or "benign"."""
    skips = clean = 0
    while True:
        if rng.random() < skip_share:
            skips += 1
        else:
            clean += 1
        read = reading(skips, clean, reference)
        if read.hiding[0]:
            return "hiding"
        if not read.unread[0]:
            return "benign"


@pytest.mark.parametrize("p, benign", [(0.3, 0.01), (0.3, 0.1), (0.1, 0.05)])
def test_a_hiding_commit_is_read_benign_at_most_its_share_of_the_error(p, benign):
    """A commit whose failures (at p, the failing commits' rate) all skip, beside failing commits
    whose runs skip at ``benign``: simulated readings, against the rule's bound. (Where no run
    skipped at all, nothing is read: the posterior's own likelihood of the clean runs is then
    the truth's, and its confidence holds as it did.)"""
    rng = random.Random(7)
    runs = 400
    reference = (runs, round(runs * p), round(runs * benign / (1 - benign)))
    share = benign + (1 - benign) * p
    wrong = sum(sequential_reading(rng, share, reference) == "benign" for _ in range(400))
    bound = MISSED * (1 - CONFIDENCE)  # 0.0125: 5 of 400 expected at most
    assert wrong / 400 <= bound + 3 * (bound / 400) ** 0.5


@pytest.mark.parametrize("benign", [0.02, 0.1])
def test_a_benign_commit_is_read_hiding_rarely(benign):
    rng = random.Random(11)
    reference = (360, 108, round(360 * benign / (1 - benign)))
    flagged = sum(sequential_reading(rng, benign, reference) == "hiding" for _ in range(400))
    assert flagged / 400 <= 0.05 + 3 * (0.05 * 0.95 / 400) ** 0.5


def bisection(seed: int, hides: range, skip_everywhere: float = 0.0, n: int = 32, culprit: int = 10):
    """A bisection of c0..c{n-1} (p = 0.3 from ``culprit`` on, never before); at ``hides`` the
    failure is a could-not-run traceback, and every run anywhere skips at ``skip_everywhere``."""
    rng = random.Random(seed)
    strategy = CommitStrategy([f"c{i}" for i in range(n)], "good", Settings(p_good=0.0))

    def outcome(config: Config, k: int) -> Outcome:
        i = int(config.commit[1:]) if config.commit != "good" else -1
        failed = i >= culprit and rng.random() < 0.3
        if rng.random() < skip_everywhere or (failed and i in hides):
            detail = "could not run: exit 1 after FileNotFoundError: race.tmp"
            return Outcome(f"t{k}", config.key, k, TrialStatus.SKIP, detail=detail)
        return Outcome(f"t{k}", config.key, k, TrialStatus.OK, int(failed), 1)

    drive_in_order(strategy, outcome)
    return strategy


@pytest.mark.slow
def test_no_culprit_is_named_past_commits_whose_failure_skips():
    """c10..c13 fail only as a traceback; before the rule every study named c14 or a set without
    c10. Now the answer is a set that holds c10 (its commits untestable), in 10 of 10 studies."""
    for seed in range(10):
        strategy = bisection(seed, range(10, 14))
        result = strategy.result()
        assert result.state is State.SKIPPED, (seed, result)
        assert 10 in result.group and strategy.hiding[list(result.group)].any(), (seed, result)


@pytest.mark.slow
def test_skips_everywhere_alike_still_find_the_culprit():
    found = [bisection(seed, range(0), skip_everywhere=0.1).result() for seed in range(10)]
    assert all(10 in r.group and r.state in (State.FOUND, State.SKIPPED) for r in found)
    assert sum(r.state is State.FOUND for r in found) >= 7


def test_a_held_answer_probes_the_commit_that_holds_it():
    """The posterior is sure of c5 but c4's one skip in six runs is not read yet: no culprit,
    and every free slot goes to c4."""
    strategy = CommitStrategy([f"c{i}" for i in range(8)], "good", Settings(p_bad=0.5, p_good=0.0))
    runs = [("c4", TrialStatus.SKIP, 0)] + [("c4", TrialStatus.OK, 0)] * 5
    runs += [("c5", TrialStatus.OK, k % 2) for k in range(12)]
    runs += [("c3", TrialStatus.OK, 0)] * 10
    for k, (commit, status, failed) in enumerate(runs):
        config = strategy.config_for(commit)
        strategy.observe(config, Outcome(f"t{k}", config.key, k, status, failed, 1))
    result = strategy.result()
    assert result.state is State.RUNNING and result.held_by == 4
    assert strategy.propose({}, 2) == [strategy.config_for("c4")] * 2
