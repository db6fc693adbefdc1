"""The gpu_race trial program itself: needs torch (skipped without it) and, for a decode, a CUDA GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heisenbisect.targets.protocol import SKIP_EXIT_CODE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu_race"
SESSIONS = 64  # examples/gpu_race/workload.py

torch = pytest.importorskip("torch")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def run_decode(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "HEISENBISECT_SEED": "3", "HEISENBISECT_RESULT": str(tmp_path / "result.json"), **env}
    return subprocess.run([sys.executable, "decode.py"], cwd=EXAMPLE, env=full, capture_output=True, text=True,
                          timeout=120)


def test_an_unknown_level_is_untestable(tmp_path):
    done = run_decode(tmp_path, RACE_BATCH="7")
    assert done.returncode == SKIP_EXIT_CODE
    assert "RACE_BATCH" in done.stderr


@pytest.mark.gpu
@needs_cuda
def test_a_serialized_indexer_never_corrupts_and_reports_throughput(tmp_path):
    done = run_decode(tmp_path, RACE_OVERLAP="0")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "result.json").read_text())
    assert report["failures"] == 0 and report["total"] == SESSIONS
    assert report["metrics"]["tokens_per_s"] > 0
