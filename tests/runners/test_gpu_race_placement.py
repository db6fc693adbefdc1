"""GPU placement (`execution.trials_per_gpu`): each local trial sees one GPU, never more than N trials on it.

The gpu_race verdicts depend on how many trials share a GPU (docs/gpu-race/README.md), so
the spec fixes it. Real trial processes record which GPU they saw and when they ran; no GPU
is needed, since a trial only reads ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.loader import load_spec
from heisenbisect.hypotheses.model import Execution
from heisenbisect.records import Config, Trial
from heisenbisect.reports import environment
from heisenbisect.runners.gpu_slots import GpuSlots, visible_gpus
from heisenbisect.runners.local import LocalRunner
from heisenbisect.runners.registry import gpus_per_trial
from heisenbisect.store import Store
from heisenbisect.studies.run_record import record_start
from heisenbisect.study_meta import environment_of
from heisenbisect.targets.command import CommandTarget
from runner_helpers import drain

# Each trial appends "<gpu> start" and "<gpu> end" to a shared file around a short sleep.
TRIAL = (
    'echo "$CUDA_VISIBLE_DEVICES start" >> "$LEDGER"; sleep 0.3; echo "$CUDA_VISIBLE_DEVICES end" >> "$LEDGER"; '
    'echo "{\\"failures\\": 0, \\"total\\": 1}"'
)


def test_no_gpu_shares_more_than_its_seats_and_every_gpu_is_used(tmp_path: Path):
    ledger = tmp_path / "ledger"
    target = CommandTarget(argv=("sh", "-c", TRIAL), timeout_s=30, extra_env={"LEDGER": str(ledger)})
    slots = GpuSlots(["0", "1"], trials_per_gpu=2)
    trials = [Trial(f"t{i}", Config(), i, i, env={"CUDA_VISIBLE_DEVICES": "7"}) for i in range(12)]
    with LocalRunner(target, tmp_path / "logs", parallel=16, gpu_slots=slots) as runner:
        assert runner.capacity == 4  # 2 GPUs x 2 seats, though parallel asks for 16
        for trial in trials:
            runner.submit(trial)
        outcomes = drain(runner, len(trials))
    assert sorted(o.trial_id for o in outcomes) == sorted(t.trial_id for t in trials)
    running = {"0": 0, "1": 0}
    peak = {"0": 0, "1": 0}
    for gpu, event in (line.split() for line in ledger.read_text().splitlines()):
        running[gpu] += 1 if event == "start" else -1  # the placement overrides the trial's own "7"
        peak[gpu] = max(peak[gpu], running[gpu])
    assert peak == {"0": 2, "1": 2}


def test_visible_gpus_follow_cuda_visible_devices():
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 3"}) == ["2", "3"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}) == []
    with pytest.raises(HeisenbisectError, match="trials_per_gpu: no GPU visible"):
        GpuSlots([], trials_per_gpu=1)


def test_ray_gets_a_fraction_of_a_gpu_per_trial():
    assert gpus_per_trial(Execution(trials_per_gpu=4)) == 0.25
    assert gpus_per_trial(Execution(trials_per_gpu=1)) == 1
    assert gpus_per_trial(Execution(gpus_per_trial=0.5, trials_per_gpu=4)) == 0.5  # an explicit value wins
    assert gpus_per_trial(Execution()) == 0


def load_spec_text(folder: Path, execution: str):
    path = folder / "spec.yaml"
    path.write_text(
        "study: placed\ntarget:\n  command: [\"true\"]\n"
        "factors:\n  - {name: f, kind: env, var: F, levels: [\"0\", \"1\"]}\n" + execution
    )
    return load_spec(path)


def test_the_report_names_the_trials_really_in_flight_not_the_specs_ask(tmp_path: Path):
    """A spec asking for 8 at once with one trial per GPU runs one at a time on one GPU: the
    environment section says so (it once printed "8 trials in parallel; 1 trials share each GPU")."""
    spec = load_spec_text(tmp_path, "execution:\n  parallel: 8\n  trials_per_gpu: 1\n")
    store = Store(tmp_path / "study.sqlite")
    runner = LocalRunner(
        CommandTarget(argv=("true",), timeout_s=5), tmp_path / "logs", parallel=8, gpu_slots=GpuSlots(["0"], 1)
    )
    record_start(store, spec, tmp_path, "local", runner.capacity)
    runner_row = next(line for line in environment.markdown_lines(environment_of(store)) if "| runner |" in line)
    assert "local, one trial at a time; one trial per GPU at a time" in runner_row
