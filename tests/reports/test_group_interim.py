"""An interim group report says what is still running (issue 23): the members of a clearing group
not yet decided are listed as such, not among the changes decided by their own arm, and the
study's trials are counted once."""

from __future__ import annotations

import random
from pathlib import Path

from heisenbisect.decide.group.records import Role
from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.decide.screening import ScreeningSettings
from heisenbisect.flag_simulation import scenario
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config
from heisenbisect.reports.context import ReportContext
from heisenbisect.reports.group import conclusion, markdown, results_json

SETTINGS = GroupSettings(ScreeningSettings(confidence=0.95, zero_rate=0.05, min_reduction=0.5, max_trials=480, first_look=15))


def test_an_open_clearing_group_is_not_yet_decided_and_trials_are_counted_once():
    truth = scenario(16, rate=0.5, eliminators=1, breakers=0, seed=3)
    strategy = GroupScreening(Config(), list(truth.changes), SETTINGS)
    rng, trials = random.Random(1), 0
    while not any(a.role is Role.CLEAR and a.open and a.state.evidence.runs >= 5 for a in strategy.arms):
        (config,) = strategy.propose({}, 1)
        strategy.observe(config, truth.outcome(config, trials, rng))
        trials += 1
    result = strategy.result()
    factors = [{"name": f, "var": f"APP_{f.upper()}", "levels": ["0", "1"]} for f, _ in truth.changes]
    spec = Spec.model_validate({"study": "g", "target": {"command": "true"}, "factors": factors,
                                "execution": {"parallel": 8, "trials_per_gpu": 8}})
    text = markdown(spec, "spec.yaml", result, [], ReportContext(), Path("."))

    [clearing] = [a for a in result.arms if a.role == "clear" and a.open]
    pending = text[text.index("## In a clearing group, not yet decided"):]
    decided = text[text.index("## Changes decided by their own arm"):text.index("## In a clearing group")]
    for factor, level in clearing.changes:
        assert f"`{factor}={level}`" in pending.split("\n\n")[1] and f"`{factor}={level}`" not in decided
    assert "measured at up to 8 trials in flight, at most 8 per GPU" in text
    assert f"**Trials.** {trials} in all, each counted once" in text
    data = results_json(spec, result)
    assert data["trials_total"] == trials
    parts = data["trials_by_part"]  # issue 38: where the trials went, adding up to every one of them
    assert sum(parts.values()) == trials and parts["baseline"] == data["baseline"]["trials"]
    assert f"**Cost by part.** the baseline: {parts['baseline']}; " in text
    member = next(a for a in data["arms"] if (a["factor"], a["level"]) == clearing.changes[0])
    assert member["group_trials"] >= member["trials"] == clearing.result.runs


def test_one_reducer_only_suppresses_it():
    """The conclusion's verb agrees with how many reducers there are (the H200 report said "suppress")."""
    truth = scenario(8, rate=0.5, eliminators=1, reducer=0.1, breakers=0, seed=4)
    strategy = GroupScreening(Config(), list(truth.changes), SETTINGS)
    rng, trials = random.Random(2), 0
    while not strategy.result().finished and trials < 20_000:
        (config,) = strategy.propose({}, 1)
        strategy.observe(config, truth.outcome(config, trials, rng))
        trials += 1
    result = strategy.result()
    factors = [{"name": f, "var": f"APP_{f.upper()}", "levels": ["0", "1"]} for f, _ in truth.changes]
    spec = Spec.model_validate({"study": "g", "target": {"command": "true"}, "factors": factors})
    [(factor, level)] = [v.change for v in result.changes if v.verdict == "reduces"]
    assert f"`{factor}={level}` only suppresses it." in conclusion(spec, result)


def test_the_group_reports_commands_name_the_store_it_came_from(tmp_path, monkeypatch):
    """The H200 report said `bisect run spec.yaml` for a study run with `--out .gpu-study`: that
    command starts another study. Its commands keep `--out`, as typed from the folder it ran in."""
    monkeypatch.chdir(tmp_path)
    truth = scenario(8, rate=0.5, eliminators=1, breakers=0, seed=3)
    strategy = GroupScreening(Config(), list(truth.changes), SETTINGS)
    (config,) = strategy.propose({}, 1)
    strategy.observe(config, truth.outcome(config, 0, random.Random(1)))
    factors = [{"name": f, "var": f"APP_{f.upper()}", "levels": ["0", "1"]} for f, _ in truth.changes]
    spec = Spec.model_validate({"study": "g", "target": {"command": "true"}, "factors": factors})
    elsewhere = markdown(spec, "spec.yaml", strategy.result(), [], ReportContext(), tmp_path / ".gpu-study" / "g")
    assert "bisect run spec.yaml --out .gpu-study      # resumes" in elsewhere
    default = markdown(spec, "spec.yaml", strategy.result(), [], ReportContext(), tmp_path / "reports" / "g")
    assert "bisect run spec.yaml      # resumes" in default and "--out" not in default
