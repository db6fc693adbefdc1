"""The cpu_race example: its server follows the trial protocol, and its race is real.

Every run here is a real process of `examples/cpu_race/server.py`, configured through
the example's own hypotheses file, as `bisect run` would configure it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heisenbisect.hypotheses import load_spec
from heisenbisect.targets.protocol import SKIP_EXIT_CODE, Report, parse_report

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cpu_race"
SPEC = load_spec(EXAMPLE / "hypotheses.yaml")
ELIMINATING = ["overlap=0", "precision=fp8", "graph=0", "batch=1"]
RUNS_PER_ELIMINATING_CONFIG = 16
# Measured baseline run-failure rate: 8-18% on a loaded 2-core machine (docs/cpu_race.md).
# Even at 5%, 120 runs without a failure happen with probability 0.95**120 = 0.2%.
BASELINE_RUN_BOUND = 120


def config_env(key: str) -> dict[str, str]:
    assignments = dict(part.split("=") for part in key.split(",")) if key != "baseline" else {}
    environment = SPEC.environment(SPEC.config_from_assignments(assignments))
    return {name: value for name, value in environment.items() if value is not None}


def run_server(tmp_path: Path, seed: int, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
    result = tmp_path / f"result-{seed}.json"
    done = subprocess.run(
        [sys.executable, "server.py"],
        cwd=EXAMPLE,
        env={"PATH": "/usr/bin:/bin", **env, "HEISENBISECT_SEED": str(seed), "HEISENBISECT_RESULT": str(result)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, result


def run_report(tmp_path: Path, seed: int, env: dict[str, str]) -> Report:
    done, result = run_server(tmp_path, seed, env)
    assert done.returncode == 0, done.stderr
    return parse_report(result.read_text())


def test_spec_names_the_seven_factors_with_the_failing_baseline_first():
    assert [f.name for f in SPEC.factors] == [
        "overlap", "precision", "graph", "batch", "cache", "topk_v2", "debug_sync",
    ]
    assert config_env("baseline") == {
        "RACE_OVERLAP": "1", "RACE_PRECISION": "bf16", "RACE_GRAPH": "1", "RACE_BATCH": "8",
        "RACE_CACHE": "0", "RACE_TOPK_V2": "1", "RACE_DEBUG_SYNC": "0",
    }
    assert SPEC.execution.parallel == 2


def test_result_file_follows_the_protocol(tmp_path):
    done, result = run_server(tmp_path, 7, config_env("baseline"))
    assert done.returncode == 0, done.stderr
    report = parse_report(result.read_text())
    assert report.total == 60 and 0 <= report.failures <= 60
    assert report.metrics["tokens_per_s"] > 0
    assert done.stdout.strip().splitlines()[-1] == result.read_text()


def test_an_unknown_level_is_untestable_not_a_failure(tmp_path):
    done, result = run_server(tmp_path, 1, {**config_env("baseline"), "RACE_BATCH": "eight"})
    assert done.returncode == SKIP_EXIT_CODE
    assert "RACE_BATCH" in done.stderr and "'eight'" in done.stderr
    assert not result.exists()


@pytest.mark.parametrize("key", ELIMINATING)
def test_an_eliminating_change_never_corrupts_a_session(tmp_path, key):
    env = config_env(key)
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(lambda seed: run_report(tmp_path, seed, env), range(RUNS_PER_ELIMINATING_CONFIG)))
    assert [r.failures for r in reports] == [0] * RUNS_PER_ELIMINATING_CONFIG
    assert all(r.metrics["slow_paths"] == 0 for r in reports)  # no reader ever saw a reused batch


def test_the_baseline_corrupts_sessions_within_a_bounded_number_of_runs(tmp_path):
    env = config_env("baseline")
    with ThreadPoolExecutor(2) as pool:
        for first in range(0, BASELINE_RUN_BOUND, 2):
            reports = list(pool.map(lambda seed: run_report(tmp_path, seed, env), (first, first + 1)))
            if any(r.failures for r in reports):
                return
    pytest.fail(f"the baseline did not fail once in {BASELINE_RUN_BOUND} runs")


@pytest.fixture(scope="module")
def server():
    """server.py as a module, for its pure functions; its import-time BLAS setting is undone."""
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    spec = importlib.util.spec_from_file_location("cpu_race_server", EXAMPLE / "server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if before is None:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
    yield module
    del sys.modules[spec.name]


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.lists(st.integers(-3, 3), min_size=40, max_size=40), min_size=1, max_size=4))
def test_both_top_k_paths_agree_with_the_stable_sort_definition(server, rows):
    """The topk_v2 decoy changes the code path, never the answer (ties included)."""
    scores = np.array(rows, np.float32)
    expected = np.stack([server.top_k_reference(row) for row in scores])
    assert np.array_equal(server.top_k_by_partition(scores), expected)
    assert np.array_equal(server.top_k_by_sort(scores), expected)
