"""Parallel probes replay exactly: the same study and seeds make the same probes whatever the
order their results land in (`decide.batches`)."""

from __future__ import annotations

import gc
import random
from pathlib import Path

import pytest

from commits_repo import make_flaky_repo, write_spec
from heisenbisect.hypotheses import load_spec
from heisenbisect.records import Config, Outcome, Trial, TrialStatus
from heisenbisect.studies.commits.prepare import open_commits_store, prepare, replayed
from heisenbisect.studies.commits.study import probe


class Arrivals:
    """A runner of ``capacity`` slots whose trials land one per wait, oldest or newest first.

    A trial fails with its commit's rate, drawn from its seed as check.py draws it; what it
    stands in for is the timing of a real runner, which is what the test varies.
    """

    def __init__(self, capacity: int, rates: dict[str, float], newest_first: bool):
        self.capacity = capacity
        self.rates = rates
        self.newest_first = newest_first
        self.running: list[Trial] = []
        self.submitted: list[tuple[str | None, int]] = []

    def submit(self, trial: Trial) -> None:
        self.running.append(trial)
        self.submitted.append((trial.config.commit, trial.index))

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        if not self.running:
            return []
        trial = self.running.pop(-1 if self.newest_first else 0)
        failed = random.Random(trial.seed).random() < self.rates.get(trial.config.commit or "", 0.0)
        return [Outcome(trial.trial_id, trial.config.key, trial.index, TrialStatus.OK, int(failed), 1)]

    def cancel(self, trial_ids: list[str]) -> None:
        self.running = [t for t in self.running if t.trial_id not in trial_ids]

    def pending(self) -> int:
        return len(self.running)

    def close(self) -> None:
        self.running = []

    def __enter__(self) -> Arrivals:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def search(root: Path, newest_first: bool) -> tuple[list[tuple[str | None, int]], int]:
    """One bisection with learned rates and 3 probes in flight: what it submitted, and its culprit."""
    repo = make_flaky_repo(root)
    spec_path = write_spec(root, repo, commits_extra="  bad_end_trials: 4\n", extra="execution:\n  parallel: 3\n")
    spec = load_spec(spec_path)
    study = prepare(spec, spec_path, Config())
    culprit_at = repo.first_parent.index(repo.culprit)
    rates = {sha: 0.3 for sha in repo.first_parent[culprit_at:]}
    runner = Arrivals(3, rates, newest_first)
    with open_commits_store(study, fresh=False) as store:
        probe(study, store, replayed(study, store), lambda target, logs: runner)
        strategy = replayed(study, store)
    gc.collect()  # GitPython's repository objects sit in cycles; their cat-file processes go with them
    return runner.submitted, strategy.result().culprit


@pytest.mark.slow  # two real repositories and two searches of a dozen batches: seconds
def test_the_same_probes_whatever_order_parallel_results_land_in(tmp_path):
    oldest, culprit = search(tmp_path / "oldest-first", newest_first=False)
    newest, same_culprit = search(tmp_path / "newest-first", newest_first=True)
    assert len(oldest) > 12  # a real search, several batches of three
    assert newest == oldest and same_culprit == culprit
