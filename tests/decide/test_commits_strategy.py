"""CommitStrategy driven by a simulated flaky test: tables, properties, calibration."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heisenbisect.decide.commits import CommitStrategy, Settings, State
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.testing.strategy_kit import drive_in_order

GOOD = "good"


def shas(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def position(config: Config) -> int:
    return -1 if config.commit == GOOD else int(config.commit[1:])


def outcome(config: Config, status: TrialStatus, failed: bool = False) -> Outcome:
    return Outcome("t", config.key, 0, status, int(failed), 1 if status is TrialStatus.OK else 0)


def simulate(n, culprit, p, q, settings_, rng, untestable=frozenset(), slots=1):
    """Run the strategy to the end against the model it assumes; returns it."""
    strategy = CommitStrategy(shas(n), GOOD, settings_)
    pending: list[Config] = []
    while not strategy.finished():
        pending += strategy.propose(Counter(pending), slots - len(pending))
        if not pending:
            break
        config = pending.pop(0)  # finish the oldest, like a runner would
        if position(config) in untestable:
            strategy.observe(config, outcome(config, TrialStatus.SKIP))
            continue
        rate = p if position(config) >= culprit else q
        strategy.observe(config, outcome(config, TrialStatus.OK, bool(rng.random() < rate)))
    return strategy


@pytest.mark.parametrize("culprit", range(13))
def test_noiseless_search_is_binary_search(culprit):
    strategy = simulate(13, culprit, 1.0, 0.0, Settings(p_bad=1.0, p_good=0.0), np.random.default_rng(0))
    result = strategy.result()
    assert result.state is State.FOUND and result.culprit == culprit and result.probability == 1.0
    assert result.trials <= 5  # ceil(log2 13) = 4, plus at most one extra at an edge


def test_skipped_commits_leave_a_candidate_set_as_git_does():
    strategy = simulate(8, 4, 1.0, 0.0, Settings(p_bad=1.0, p_good=0.0), np.random.default_rng(0), untestable={3, 4})
    result = strategy.result()
    assert result.state is State.SKIPPED
    assert result.group == (3, 4, 5) and result.group_probability == pytest.approx(1.0)


def test_budget_counts_runs_in_flight_and_stops():
    strategy = CommitStrategy(shas(64), GOOD, Settings(p_bad=0.15, p_good=0.0, max_trials=5))
    first = strategy.propose(Counter(), 4)
    assert len(first) == 4
    assert len(strategy.propose(Counter(first), 4)) == 1
    for config in first:
        strategy.observe(config, outcome(config, TrialStatus.OK))
    config = strategy.propose(Counter(), 4)[0]
    strategy.observe(config, outcome(config, TrialStatus.OK))
    assert strategy.result().state is State.BUDGET and strategy.propose(Counter(), 4) == []


def test_impossible_evidence_under_given_rates_stops_with_contradiction():
    strategy = CommitStrategy(shas(8), GOOD, Settings(p_bad=1.0, p_good=0.0))
    strategy.observe(Config(commit="c5"), outcome(Config(commit="c5"), TrialStatus.OK, True))
    strategy.observe(Config(commit="c7"), outcome(Config(commit="c7"), TrialStatus.OK, False))
    assert strategy.result().state is State.CONTRADICTION and strategy.finished()


def test_a_learned_p_starts_at_the_bad_end():
    strategy = CommitStrategy(shas(32), GOOD, Settings(p_good=0.0, bad_end_trials=3))
    first = Counter(c.commit for c in strategy.propose(Counter(), 8))
    assert first["c31"] == 3 and first[GOOD] == 0 and sum(first.values()) == 8


def test_the_good_end_is_probed_once_a_learned_q_matters():
    """Every probed commit fails a quarter of its runs, the first candidate too: the culprit is
    the first candidate, unless q is that high. Once the range has said what it can, only the
    good end tells which, and information gain asks for it; with q known it never does."""
    learned = CommitStrategy(shas(16), GOOD, Settings(bad_end_trials=0, confidence=0.999))
    known = CommitStrategy(shas(16), GOOD, Settings(p_good=0.0, bad_end_trials=0, confidence=0.999))
    for strategy in (learned, known):
        for commit in [f"c{i}" for i in range(0, 16, 3)]:
            for k in range(20):
                strategy.observe(Config(commit=commit), outcome(Config(commit=commit), TrialStatus.OK, k % 4 == 0))
    assert strategy_picks(learned)[GOOD] > 0 and strategy_picks(known)[GOOD] == 0


def strategy_picks(strategy: CommitStrategy) -> Counter:
    return Counter(c.commit for c in strategy.propose(Counter(), 4))


def test_errors_make_a_commit_untestable_after_three():
    strategy = CommitStrategy(shas(4), GOOD, Settings(p_bad=0.5, p_good=0.0))
    for _ in range(3):
        assert not strategy.untestable[2]
        strategy.observe(Config(commit="c2"), outcome(Config(commit="c2"), TrialStatus.ERROR))
    assert strategy.untestable[2]
    assert all(c.commit != "c2" for c in strategy.propose(Counter(), 4))


def test_one_timeout_makes_a_commit_untestable_unless_retries_are_allowed():
    once = CommitStrategy(shas(4), GOOD, Settings(p_bad=0.5, p_good=0.0))
    once.observe(Config(commit="c2"), outcome(Config(commit="c2"), TrialStatus.TIMEOUT))
    assert once.untestable[2]
    twice = CommitStrategy(shas(4), GOOD, Settings(p_bad=0.5, p_good=0.0, retry_timeouts=1))
    twice.observe(Config(commit="c2"), outcome(Config(commit="c2"), TrialStatus.TIMEOUT))
    assert not twice.untestable[2]
    twice.observe(Config(commit="c2"), outcome(Config(commit="c2"), TrialStatus.TIMEOUT))
    assert twice.untestable[2]


def test_parallel_probes_are_obsolete_once_decided():
    strategy = simulate(16, 9, 0.5, 0.0, Settings(p_bad=0.5, p_good=0.0), np.random.default_rng(3), slots=4)
    assert strategy.result().state is State.FOUND
    running = Counter({Config(commit="c3"): 2})
    assert strategy.obsolete(running) == [Config(commit="c3")]


@settings(max_examples=40, deadline=None)
@given(
    events=st.lists(st.tuples(st.integers(-1, 9), st.sampled_from(["pass", "fail", "skip", "error"])), max_size=30),
    seed=st.integers(0, 2**16),
)
def test_replay_order_does_not_matter(events, seed):
    """The store replays in arrival order; any order of the same outcomes gives the same state."""
    status = {"pass": TrialStatus.OK, "fail": TrialStatus.OK, "skip": TrialStatus.SKIP, "error": TrialStatus.ERROR}

    def run(order):
        strategy = CommitStrategy(shas(10), GOOD, Settings())
        for i, kind in order:
            config = Config(commit=GOOD if i < 0 else f"c{i}")
            strategy.observe(config, outcome(config, status[kind], kind == "fail"))
        return strategy

    shuffled = list(events)
    np.random.default_rng(seed).shuffle(shuffled)
    a, b = run(events), run(shuffled)
    np.testing.assert_allclose(a.posterior().probs, b.posterior().probs, rtol=1e-9)
    assert a.result().state == b.result().state


@pytest.mark.parametrize(
    "p_bad, p_good, learned",
    [(0.3, 0.0, False), (0.3, 0.02, False), (0.3, 0.0, True), (0.3, 0.02, True)],
)
def test_confidence_is_calibrated(p_bad, p_good, learned):
    """Stopping at posterior >= 0.9 must be right at least ~90% of the time (simulated)."""
    rng = np.random.default_rng(5)
    searches = 150
    settings_ = Settings(
        p_bad=None if learned else p_bad, p_good=None if learned else p_good, confidence=0.9, bad_end_trials=5
    )
    right = 0
    for _ in range(searches):
        culprit = int(rng.integers(24))
        result = simulate(24, culprit, p_bad, p_good, settings_, rng).result()
        assert result.state is State.FOUND
        right += result.culprit == culprit
    assert right / searches >= 0.9 - 3 * np.sqrt(0.09 / searches)


@pytest.mark.slow
def test_default_learned_rates_are_calibrated_when_good_commits_fail_too():
    """A smoke test of the calibration grid (benchmarks/bisection_peer.py has the full one): the
    default settings, p = 0.15 and q = 0.01 both learned, N = 32; a "95%" culprit must be right 95%
    of the time, up to sampling error (3 standard errors)."""
    rng = np.random.default_rng(11)
    searches = 80
    right = 0
    for _ in range(searches):
        culprit = int(rng.integers(32))
        result = simulate(32, culprit, 0.15, 0.01, Settings(), rng).result()
        assert result.state is State.FOUND
        right += result.culprit == culprit
    assert right / searches >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / searches)


def test_equal_learned_rates_do_not_end_the_search():
    """c4 and the good end each failed 2 runs in 4: p and q have the same learned prior, so their
    predictive means are then both exactly 5/14, and one run at c2 carries no information, yet c2
    splits the posterior 0.6 / 0.4 and its runs would teach the rates apart. The search used to
    stop there, 'exhausted'."""
    strategy = CommitStrategy(shas(5), GOOD, Settings(confidence=0.999, bad_end_trials=4))
    for i in (0, 1, 3):
        for _ in range(2):  # untestable: most of its runs skipped, two at least
            strategy.observe(Config(commit=f"c{i}"), outcome(Config(commit=f"c{i}"), TrialStatus.SKIP))
    for failed in (True, True, False, False):
        strategy.observe(Config(commit="c4"), outcome(Config(commit="c4"), TrialStatus.OK, failed))
        strategy.observe(Config(commit=GOOD), outcome(Config(commit=GOOD), TrialStatus.OK, failed))
    post = strategy.posterior()
    assert post.rate_bad[2] == pytest.approx(post.rate_good[2], rel=1e-12)  # the coincidence
    assert strategy.result().state is State.RUNNING
    assert [c.commit for c in strategy.propose(Counter(), 2)] == ["c2"]


def land_out_of_order(strategy, slots, rng, fails):
    """Keep ``slots`` trials in flight and land a random one of them each step, as a runner with
    trials of uneven length does; ``fails(config, index)`` is that trial's outcome (None: exit 125)."""
    in_flight: list[tuple[Config, int]] = []
    started: Counter = Counter()
    landed = []
    while not strategy.finished():
        for config in strategy.propose(Counter(c for c, _ in in_flight), slots - len(in_flight)):
            in_flight.append((config, started[config]))
            started[config] += 1
        if not in_flight:
            break
        config, index = in_flight.pop(int(rng.integers(len(in_flight))))
        failed = fails(config, index)
        landed.append((config, outcome(config, TrialStatus.SKIP) if failed is None else outcome(config, TrialStatus.OK, failed)))
        strategy.observe(*landed[-1])
    return landed


@pytest.mark.parametrize("slots", [2, 3, 4])
def test_out_of_order_arrivals_with_trials_in_flight_reach_the_culprit(slots):
    """test_commits_command's repository in pure logic: 15 candidates, the 6th untestable, the
    9th the culprit, p = 0.5, q = 0, both learned, confidence 0.999, each trial's outcome fixed
    by its commit and index (as the trial seed fixes it). Whatever order the trials in flight
    land in, the search ends found at the culprit, and the store's replay of that arrival order
    rebuilds the same state."""
    culprit, skipped = 8, 5
    outcomes = np.random.default_rng(0).random((16, 200)) < 0.5

    def fails(config, index):
        i = position(config)
        return None if i == skipped else bool(i >= culprit and outcomes[i, index])

    for seed in range(20):
        strategy = CommitStrategy(shas(15), GOOD, Settings(confidence=0.999, bad_end_trials=4))
        landed = land_out_of_order(strategy, slots, np.random.default_rng(seed), fails)
        result = strategy.result()
        assert result.state is State.FOUND and result.culprit == culprit, (seed, result)
        replayed = CommitStrategy(shas(15), GOOD, Settings(confidence=0.999, bad_end_trials=4))
        for config, landed_outcome in landed:
            replayed.observe(config, landed_outcome)
        assert replayed.result() == result


def observed(strategy: CommitStrategy, commit: str, runs: int, failed: int) -> None:
    for i in range(runs):
        strategy.observe(Config(commit=commit), outcome(Config(commit=commit), TrialStatus.OK, i < failed))


@pytest.mark.parametrize("good_side_fails, passes, expected", [
    (True, (40, 50, 70), [State.RUNNING, State.RUNNING, State.FOUND]),
    (False, (30, 40), [State.RUNNING, State.FOUND]),
])
def test_the_culprit_must_also_hold_at_a_low_p(good_side_fails, passes, expected):
    """c1 and c2 fail 3 runs in 10, c0 only passes; 40 stored runs at the bad end failed 4 times.
    Whether c0 is good rests on its passes and on p. 40 and 50 passes give an integrated posterior
    of 0.97 and 0.98 for c1 when the good end has failed once, 30 passes 0.98 when it has not; yet
    with p at the low end of what its runs allow they prove little, and the search goes on (a
    learned p that came out high made such culprits right 88-92% of the time, not 95%). The rule
    used to wait for a good-side failure: with none, 30 passes were found (issue 27)."""
    states = []
    for count in passes:
        strategy = CommitStrategy(shas(4), GOOD, Settings(stored_bad_runs=40, stored_bad_failures=4))
        observed(strategy, "c3", 10, 1)
        observed(strategy, GOOD, 40, int(good_side_fails))
        observed(strategy, "c1", 10, 3)
        observed(strategy, "c2", 10, 3)
        observed(strategy, "c0", count, 0)
        result = strategy.result()
        assert result.culprit == 1 and result.probability >= 0.95
        states.append(result.state)
    assert states == expected


def test_a_cluster_of_failures_near_the_bad_end_does_not_end_the_search_at_a_false_boundary():
    """The traced wrong answer of issue 27, rebuilt: N = 1200, the culprit c532, p = 0.05, q = 0.01,
    both learned. Failures happened to cluster near the bad end (18 in 110 runs at c921 and after,
    so p looks like 0.16), while truly bad commits before them passed 137 times (c920 58 times,
    5% likely at p = 0.05) and the good side never failed. The integrated posterior puts 0.99 on the
    false boundary c921; the search must go on, not print it as found."""
    strategy = CommitStrategy(shas(1200), GOOD, Settings())
    runs = {1199: (10, 2), 1100: (30, 4), 1000: (25, 4), 950: (20, 3), 921: (25, 5),
            920: (58, 0), 880: (45, 0), 700: (34, 0), 400: (40, 0), 200: (20, 0)}
    for commit, (count, failed) in runs.items():
        observed(strategy, f"c{commit}", count, failed)
    observed(strategy, GOOD, 20, 0)
    result = strategy.result()
    assert result.culprit == 921 and result.probability > 0.95  # the false boundary leads
    assert result.state is State.RUNNING


def test_a_good_end_that_fails_early_does_not_trap_the_search_among_interior_commits():
    """Traced in benchmarks/bisection_peer.py (N = 1200, p = 0.15, q = 0.01, seed 27, culprit c3):
    the good end failed once in its first 6 runs, so "every commit fails at about 0.15" read as
    "good commits fail at 0.11, bad ones at 0.2" with the boundary anywhere near c700-c800. One run
    at an end says nothing about the culprit, so one-step information gain kept probing interior
    commits: 5 890 trials. Valued by blocks of runs (decide/ends.py) the ends get the runs that
    tell the two readings apart: 1 260. The same runs as the benchmark's (its uniform streams)."""
    n, p, q, seed = 1200, 0.15, 0.01, 27
    culprit = int(np.random.default_rng([seed, 0]).integers(n))
    streams = {}
    strategy = CommitStrategy(shas(n), GOOD, Settings(max_trials=6000))

    def ran(config: Config, _: int) -> Outcome:
        k = position(config)
        stream = streams.setdefault(k, np.random.default_rng([seed, 1, k + 1]))
        return outcome(config, TrialStatus.OK, bool(stream.random() < (p if k >= culprit else q)))

    drive_in_order(strategy, ran)
    result = strategy.result()
    assert culprit == 3 and result.state is State.FOUND and result.culprit == culprit
    assert result.trials < 2000, result.trials


def test_a_commit_is_untestable_only_when_most_of_its_runs_skip():
    """One skip may be the flaky failure itself (a run-time FileNotFoundError traceback): the
    commit stays testable; a second skip with no clean run makes it untestable; a clean run
    after that, the skips no longer the majority, makes it testable again."""
    strategy = CommitStrategy(shas(5), GOOD, Settings())
    c2 = Config(commit="c2")
    strategy.observe(c2, outcome(c2, TrialStatus.SKIP))
    assert not strategy.untestable[2]
    strategy.observe(c2, outcome(c2, TrialStatus.SKIP))
    assert strategy.untestable[2]
    for _ in range(2):
        strategy.observe(c2, outcome(c2, TrialStatus.OK))
    assert not strategy.untestable[2]
    good = Config(commit=GOOD)
    strategy.observe(good, outcome(good, TrialStatus.SKIP))
    assert strategy._good_end_open()


def test_bad_commits_whose_failure_sometimes_skips_still_give_the_culprit():
    """The issue's case: at and after the culprit a run fails with p = 0.4 and skips (a could-not-
    run traceback at run time) with 0.2. Calling every commit that skipped once untestable lost
    the culprit; now the search finds it."""
    rng = np.random.default_rng(7)

    def ran(config: Config, _: int) -> Outcome:
        bad = position(config) >= 9
        draw = rng.random()
        if bad and draw < 0.2:
            return outcome(config, TrialStatus.SKIP)
        return outcome(config, TrialStatus.OK, bad and draw < 0.6)

    found = 0
    for _ in range(20):
        strategy = CommitStrategy(shas(16), GOOD, Settings(confidence=0.95))
        drive_in_order(strategy, ran)
        result = strategy.result()
        found += result.state is State.FOUND and result.culprit == 9
    assert found >= 17  # 95% each; the seed is fixed
