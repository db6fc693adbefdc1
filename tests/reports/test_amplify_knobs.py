"""amplify.md says when the best setting sits on a bound of its search range ("widen the range"),
and which way each knob helps (an importance bar alone does not say whether to raise or lower it).

A search's trials are real Optuna trials in a real in-memory study: the objective rises as gap_ms
falls, so the best sits at gap_ms's low bound, and sessions does not matter."""

from __future__ import annotations

import numpy as np
import optuna

from heisenbisect.hypotheses.model import Knob
from heisenbisect.reports.amplify import knob_importances, knob_section
from heisenbisect.reports.amplify_knobs import helps, knob_lines, on_bound

GAP = Knob(name="gap_ms", type="float", low=0.05, high=5.0, log=True)
SESSIONS = Knob(name="sessions", type="int", low=8, high=480)
MODE = Knob(name="mode", type="choice", choices=["a", "b"])


def searched() -> tuple[optuna.Study, list]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    distributions = {
        "gap_ms": optuna.distributions.FloatDistribution(0.05, 5.0, log=True),
        "sessions": optuna.distributions.IntDistribution(8, 480),
    }
    rng = np.random.default_rng(1)
    for _ in range(30):
        gap, sessions = float(np.exp(rng.uniform(np.log(0.05), np.log(5.0)))), int(rng.integers(8, 481))
        value = 2.0 - np.log(gap) + rng.normal(0, 0.1)
        study.add_trial(optuna.trial.create_trial(params={"gap_ms": gap, "sessions": sessions},
                                                  distributions=distributions, value=value))
    study.add_trial(optuna.trial.create_trial(params={"gap_ms": 0.05, "sessions": 60},
                                              distributions=distributions, value=5.1))
    return study, study.get_trials(deepcopy=False)


def test_a_best_setting_on_a_bound_says_widen_the_range_and_each_knob_shows_its_direction():
    study, trials = searched()
    lines = knob_lines([GAP, SESSIONS], {"gap_ms": 0.05, "sessions": 60}, trials, knob_importances(study, trials))
    gap, sessions = lines
    assert (gap.bound, sessions.bound) == ("low", None)
    assert gap.rho is not None and gap.rho < -0.8  # lower gap_ms, more evidence per second
    assert helps(gap) == "lower" and helps(sessions) is None
    text = "\n".join(knob_section(lines))
    assert "| `gap_ms` | 0.05 | 0.05 .. 5 (log) | **on its low** | lower gives more evidence (Spearman rho -1.00, p < 1e-4) |" in text
    assert "| `sessions` | 60 | 8 .. 480 | inside | none clear (Spearman rho " in text
    assert "**Widen the range.** The best setting sits on a bound of the search: `gap_ms` at its low (0.05)." in text
    inside = "\n".join(knob_section(knob_lines([GAP], {"gap_ms": 0.4}, trials, {})))
    assert "Widen the range" not in inside and "| inside |" in inside


def test_on_bound_reads_log_ranges_integers_and_choices():
    assert on_bound(GAP, 0.0505) == "low"  # within 2% of the log range
    assert on_bound(GAP, 4.95) == "high"
    assert on_bound(GAP, 0.06) is None
    assert on_bound(SESSIONS, 480) == "high" and on_bound(SESSIONS, 470) is None
    assert on_bound(MODE, "a") is None  # a choice has no range to widen
