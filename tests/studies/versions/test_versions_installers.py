"""`bisect versions --installer`: uv and pip each make the environments of a real wheelhouse
and the bisection names the same culprit; the running environment is left as it was."""

from __future__ import annotations

import json

import pytest

from bisect_cli import bisect
from heisenbisect.targets.installed import find_uv
from wheelhouse import CHECK, CULPRIT, NAME, freeze

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("tool", ["uv", "pip"])
def test_each_installer_makes_the_environments_and_names_the_same_culprit(releases, tmp_path, tool):
    if tool == "uv" and find_uv() is None:
        pytest.skip("uv is not installed (the test extra brings it)")
    before = freeze()
    out = tmp_path / "out"
    argv = [
        "versions", NAME, "--good", "1.0.0", "--bad", "1.19.0", "--installer", tool,
        "--find-links", str(releases.wheels), "--out", str(out), "--parallel", "2", "--plain",
        "--", *CHECK,
    ]  # fmt: skip
    done = bisect(*argv, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = out / f"versions-{NAME}"
    results = json.loads((folder / "results.json").read_text())
    assert results["culprit"] == CULPRIT and results["verification"]["state"] == "verified"
    made = [cfg.read_text() for cfg in (folder / "envs").glob("*/pyvenv.cfg")]
    assert made and all(("uv = " in cfg) == (tool == "uv") for cfg in made)
    assert freeze() == before, "the running environment changed"
