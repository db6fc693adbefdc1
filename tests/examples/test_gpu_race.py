"""The gpu_race example: its verifier, spec and history builder on any machine; its race on a GPU.

The verifier and the workload are numpy alone, so CI checks them without torch. The trial
program itself needs torch and CUDA: those tests skip cleanly without them.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from heisenbisect.hypotheses import load_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu_race"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"gpu_race_{name}", EXAMPLE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


workload = load("workload")


@pytest.fixture(scope="module")
def reference():
    data = workload.Workload.generate(7)
    return data, workload.Reference.of(data)


def honest_output(reference, order: str = "stable") -> workload.IndexerOutput:
    """What a correct indexer returns: the K best positions (ties broken as ``order`` says)."""
    scores = reference.scores if order == "stable" else reference.scores[:, :, ::-1]
    positions = np.argsort(-scores, axis=2, kind="stable")[:, :, : workload.TOP_K]
    if order != "stable":
        positions = workload.WINDOW - 1 - positions
    values = np.take_along_axis(reference.scores, positions, axis=2)
    selected = np.take_along_axis(reference.key_sums, positions, axis=2)
    return workload.IndexerOutput(positions, values, selected)


def test_a_correct_indexer_passes_whichever_tied_positions_it_picks(reference):
    _, ref = reference
    ties = sum(len(row) - len(set(row)) for row in ref.scores[:4, 0])
    assert ties > 0  # small integers: tied scores are common, so the tie rule matters
    assert workload.corrupted_sessions(ref, honest_output(ref)) == set()
    assert workload.corrupted_sessions(ref, honest_output(ref, order="last")) == set()


def test_a_torn_read_is_caught_whichever_read_saw_the_next_step(reference):
    data, ref = reference
    good = honest_output(ref)
    # read 2 saw the next step's keys: right positions and scores, wrong key sums
    selected = good.selected.copy()
    selected[5, 3] = np.take_along_axis(ref.key_sums[5, 4], good.positions[5, 3], axis=0)
    assert workload.corrupted_sessions(ref, workload.IndexerOutput(good.positions, good.values, selected)) == {5}
    # both reads saw the next step: a self-consistent answer for the wrong window
    positions, values, selected = (a.copy() for a in (good.positions, good.values, good.selected))
    next_step = honest_output(ref)
    for array, source in ((positions, next_step.positions), (values, next_step.values), (selected, next_step.selected)):
        array[9, 2] = source[9, 3]
    assert workload.corrupted_sessions(ref, workload.IndexerOutput(positions, values, selected)) == {9}
    # a repeated position
    positions = good.positions.copy()
    positions[11, 0, 1] = positions[11, 0, 0]
    assert 11 in workload.corrupted_sessions(ref, workload.IndexerOutput(positions, good.values, good.selected))


def test_the_reference_scores_are_exact_integers(reference):
    data, ref = reference
    window = data.keys[3, 2 : 2 + workload.WINDOW].astype(np.int64)
    per_head = window @ data.queries[3, 2].astype(np.int64)
    exact = np.maximum(per_head, 0) @ data.head_weights.astype(np.int64)
    assert np.array_equal(ref.scores[3, 2], exact.astype(np.float32))
    assert exact.max() < 2**24  # float32 holds every score exactly


def test_the_spec_validates_with_the_story_factors():
    spec = load_spec(EXAMPLE / "hypotheses.yaml")
    assert [f.name for f in spec.factors] == ["overlap", "precision", "graph", "batch", "topk", "layout"]
    assert spec.execution.trials_per_gpu == 16
    assert len(spec.arms()) == 6


def test_the_alone_spec_places_one_trial_per_gpu():
    spec = load_spec(EXAMPLE / "alone.yaml")
    assert [f.name for f in spec.factors] == ["graph"]
    assert spec.execution.trials_per_gpu == 1


def test_the_history_repo_introduces_the_race_at_the_culprit(tmp_path):
    repo = tmp_path / "history"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "make_history_repo.py"), str(repo), "--commits", "12", "--culprit", "7",
         "--untestable", "2"], capture_output=True, text=True, check=True,
    )
    assert "culprit" in done.stdout
    log = subprocess.run(["git", "-C", str(repo), "log", "--first-parent", "--format=%H %s", "main"],
                         capture_output=True, text=True, check=True).stdout.splitlines()[::-1]
    assert len(log) == 13  # 12 commits and the merge of the side branch
    culprit = next(i for i, line in enumerate(log) if "overlap with the main stream" in line)

    def overlap_default(sha: str) -> str:
        source = subprocess.run(["git", "-C", str(repo), "show", f"{sha}:decode.py"],
                                capture_output=True, text=True, check=True).stdout
        return source.split('choice("RACE_OVERLAP", "')[1][0]

    assert [overlap_default(line.split()[0]) for line in log] == ["0"] * culprit + ["1"] * (len(log) - culprit)
    markers = [subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", line.split()[0]],
                              capture_output=True, text=True, check=True).stdout.split() for line in log]
    assert sum("BROKEN" in m or "UNTESTABLE" in m for m in markers) == 2
    spec = load_spec(repo.with_suffix(".yaml"))
    assert spec.commits is not None and spec.commits.build == "test ! -e BROKEN"
