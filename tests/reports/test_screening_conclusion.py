"""The conclusion's sentence about arms that never failed but are not yet `eliminates`.

An interim report once said "No run failed (`graph=0` in 35), but that is too few to claim
zero: 29 runs without a failure are needed": 35 runs were enough; what was missing was the
arm's next look (docs/gpu-race/, the Ray run of alone.yaml).
"""

from __future__ import annotations

from pathlib import Path

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.hypotheses.loader import load_spec
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.reports.screening import conclusion

BASE = Config()
EAGER = Config((("graph", "0"),))
SETTINGS = ScreeningSettings(confidence=0.95, zero_rate=0.1, max_trials=80, first_look=10)


def spec_of(folder: Path):
    path = folder / "spec.yaml"
    path.write_text(
        "study: s\ntarget:\n  command: [\"true\"]\n"
        "factors:\n  - {name: graph, kind: env, var: G, levels: [\"1\", \"0\"]}\n"
        "statistics:\n  zero_rate: 0.1\n  max_trials: 80\n"
    )
    return load_spec(path)


def observed(base_runs: int, eager_runs: int) -> Screening:
    """Baseline failing 2 runs in 5, the arm never failing; observed in the order the tool runs them."""
    screening = Screening(BASE, [EAGER], SETTINGS)
    n = 0
    for i in range(max(base_runs, eager_runs)):
        for config, runs, failures in ((BASE, base_runs, 8 if i % 5 < 2 else 0), (EAGER, eager_runs, 0)):
            if i < runs:
                screening.observe(config, Outcome(f"t{n}", config.key, n, TrialStatus.OK, failures, 64))
                n += 1
    return screening


def test_an_interim_arm_with_enough_clean_runs_waits_for_its_next_look(tmp_path: Path):
    result = observed(base_runs=36, eager_runs=35).result()
    assert not result.finished and result.arms[0].failed_runs == 0
    text = conclusion(spec_of(tmp_path), result)
    assert "`graph=0` in 35): enough runs to claim zero, which the arm's next look will check" in text
    assert "too few" not in text


def test_an_interim_arm_with_too_few_clean_runs_says_how_many_it_needs(tmp_path: Path):
    text = conclusion(spec_of(tmp_path), observed(base_runs=20, eager_runs=20).result())
    assert "No run failed (`graph=0` in 20), but that is too few to claim zero: 29 runs" in text


def test_the_arm_eliminates_at_the_look_where_it_has_enough(tmp_path: Path):
    text = conclusion(spec_of(tmp_path), observed(base_runs=40, eager_runs=40).result())
    assert text.startswith("`graph=0` drives the failure to zero")
