"""A study owns its kind's lifecycle and takes its runner injected: handed a runner of its own
(here a real local runner that counts what it is given), a study drives it exactly as it drives
the factory's, records it as the runner it ran on, and answers as the CLI does. Runner kinds
come from one registry, which the spec model, ``--runner`` and the Python API all read."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import get_args

import pytest

from commits_repo import make_flaky_repo, write_spec
from heisenbisect.cli import build_parser
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.hypotheses import parse_spec
from heisenbisect.hypotheses.model import Execution
from heisenbisect.records import Outcome, Trial
from heisenbisect.runner_kinds import RUNNER_KINDS
from heisenbisect.runners import registry
from heisenbisect.runners.base import Runner
from heisenbisect.runners.local import LocalRunner
from heisenbisect.store import Store
from heisenbisect.studies.commits.study import bisect_commits
from heisenbisect.studies.options import Options
from heisenbisect.studies.screening import screen
from heisenbisect.study_meta import environment_of
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import CommandTarget
from heisenbisect.targets.commit import CommitTarget

# fails about half the runs at the baseline, never with FIXED=1
FLAKY = """\
import json, os, random
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
rate = 0.0 if os.environ.get("FIXED") == "1" else 0.5
print(json.dumps({"failures": int(rng.random() < rate), "total": 1}))
"""


class CountingRunner(Runner):
    """A real local runner, two trials at once, that keeps what the study handed it."""

    def __init__(self, target: TrialTarget, logs_dir: Path):
        self.target, self.logs_dir = target, logs_dir
        self.inner = LocalRunner(target, logs_dir, parallel=2)
        self.capacity = self.inner.capacity
        self.submitted: list[str] = []

    def submit(self, trial: Trial) -> None:
        self.submitted.append(trial.trial_id)
        self.inner.submit(trial)

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        return self.inner.wait(timeout)

    def cancel(self, trial_ids: list[str]) -> None:
        self.inner.cancel(trial_ids)

    def pending(self) -> int:
        return self.inner.pending()

    def close(self) -> None:
        self.inner.close()


def counting(made: list[CountingRunner]):
    def make(target: TrialTarget, logs_dir: Path) -> Runner:
        made.append(CountingRunner(target, logs_dir))
        return made[-1]

    return make


def stored(store_path: Path) -> tuple[list[str], dict | None]:
    with Store(store_path) as store:
        return [o.trial_id for _, o in store.outcomes()], environment_of(store)


def test_a_screening_runs_on_the_runner_it_is_handed(tmp_path):
    (tmp_path / "flaky.py").write_text(FLAKY)
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(textwrap.dedent("""\
        study: injected
        target:
          command: [python, flaky.py]
        factors:
          - name: fixed
            var: FIXED
            levels: ["0", "1"]
        statistics:
          max_trials: 5
          first_look: 5
        """))
    made: list[CountingRunner] = []
    result = screen(Options(str(spec), str(tmp_path / "out")), runners=counting(made))

    [runner] = made
    trials, environment = stored(result.store)
    assert len(trials) == 10 and sorted(runner.submitted) == sorted(trials)  # every trial ran on it
    assert runner.logs_dir == result.logs and len(list(result.logs.glob("*.log"))) == 10
    assert environment["runner"] == "CountingRunner" and environment["parallel"] == 2  # the report names it
    assert [(a.change, a.runs, a.failed_runs) for a in result.arms] == [("fixed=1", 5, 0)]
    assert result.exit_code == 1 and result.report.exists()  # 5 runs cannot prove zero: inconclusive


@pytest.mark.slow
def test_a_commit_bisection_hands_its_worktree_target_to_the_runner_it_is_given(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    made: list[CountingRunner] = []
    result = bisect_commits(Options(str(spec), str(tmp_path / "out")), [], runners=counting(made))

    assert made  # a runner per phase: the ends first, the search, the verification
    for runner in made:
        assert isinstance(runner.target, CommitTarget)
        assert runner.logs_dir == result.store.parent / "logs" / "commits"
    trials, _ = stored(result.store)
    submitted = {t for runner in made for t in runner.submitted}
    assert set(trials) <= submitted  # (a probe made obsolete is cancelled)
    assert (result.state, result.culprit, result.exit_code) == ("found", repo.culprit, 0)


def test_runner_kinds_come_from_one_registry(tmp_path):
    assert registry.names() == RUNNER_KINDS == get_args(Execution.model_fields["runner"].annotation)
    run = build_parser(["run"])._subparsers._group_actions[0].choices["run"]
    assert tuple(run._option_string_actions["--runner"].choices) == RUNNER_KINDS
    with LocalRunner(CommandTarget(argv=("true",), timeout_s=5), tmp_path, parallel=1) as local:
        assert registry.kind_of(local) == "local"
    with pytest.raises(HeisenbisectError, match=r"^--runner: expected one of 'local', 'ray', got 'slurm'$"):
        registry.checked("slurm", "--runner")
    with pytest.raises(SpecError) as refused:
        parse_spec("study: s\ntarget:\n  command: [python, x.py]\nexecution:\n  runner: slurm\n", "spec.yaml")
    assert refused.value.problems == ["spec.yaml:5:11: execution.runner: Input should be 'local' or 'ray', got 'slurm'"]
