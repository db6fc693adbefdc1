"""A simulated flaky target driven by a ground-truth table, following the trial protocol.

truth.json gives the baseline's run-failure rate and, per factor level, a multiplier
(0 eliminates, between 0 and 1 suppresses, 1 is a decoy). A failed run corrupts a
correlated share of its sessions, as a bad batch does. The seed comes from
HEISENBISECT_SEED, so a trial is reproducible. Used by tests and benchmarks.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from heisenbisect.simulation import FailureModel


def main() -> int:
    truth_path = Path(os.environ.get("SIM_TRUTH", Path(__file__).with_name("truth.json")))
    truth = json.loads(truth_path.read_text())
    rate = truth["baseline_run_rate"]
    for var, multipliers in truth["multipliers"].items():
        value = os.environ.get(var)
        if value is not None and value in multipliers:
            rate *= multipliers[value]
    model = FailureModel(min(rate, 1.0), sessions=truth.get("sessions", 60), severity=truth.get("severity", 0.2))
    failures = model.draw(random.Random(int(os.environ.get("HEISENBISECT_SEED", "0"))))
    throughput = truth.get("tokens_per_s", 1000.0) * truth.get("costs", {}).get(_changed(truth), 1.0)
    result = {"failures": failures, "total": model.sessions, "metrics": {"tokens_per_s": throughput}}
    ledger = os.environ.get("SIM_LEDGER")
    if ledger:  # tests use it to count how often each trial really ran
        with open(ledger, "a") as out:
            out.write(os.environ.get("HEISENBISECT_TRIAL_ID", "?") + "\n")
    Path(os.environ["HEISENBISECT_RESULT"]).write_text(json.dumps(result))
    return 0


def _changed(truth: dict) -> str:
    """The one 'VAR=value' off its baseline (screening changes one factor at a time), or ''."""
    for var, multipliers in truth["multipliers"].items():
        value = os.environ.get(var)
        baseline = next(iter(multipliers))
        if value is not None and value != baseline:
            return f"{var}={value}"
    return ""


if __name__ == "__main__":
    sys.exit(main())
