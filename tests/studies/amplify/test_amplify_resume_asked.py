"""A kill -9 while Optuna hands out a candidate can leave a trial with some of its attributes
and not others; the resumed search treats it as a candidate killed before its first run (none
of its runs can have started), as it treats one with none. Real Optuna study, real sqlite."""

from __future__ import annotations

import pytest

from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.store import Store
from heisenbisect.studies.amplify.search import new_optuna_study, restored_search

optuna = pytest.importorskip("optuna")

SPEC = """\
study: amp
target:
  command: [python, -c, "print(1)"]
amplify:
  sampler: random
  knobs:
    - {name: load, type: int, var: AMP_LOAD, low: 1, high: 12}
"""


def test_a_candidate_killed_between_its_attributes_is_dropped_not_a_crash(tmp_path):
    amplify = parse_spec(SPEC, "spec.yaml").amplify
    study = new_optuna_study("amp", amplify, f"sqlite:///{tmp_path / 'optuna.db'}")
    half = study.ask()
    half.set_user_attr("config", "load=3")
    half.set_user_attr("changes", [["load", "3"]])  # killed here, before asked_after_runs
    with Store(tmp_path / "amplify.sqlite") as store:
        restored_search(study, amplify, store)
    (trial,) = study.get_trials(deepcopy=False)
    assert trial.state == optuna.trial.TrialState.FAIL
