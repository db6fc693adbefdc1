"""A culprit version that fresh runs do not confirm is not blamed: a real wheelhouse whose
versions from 1.4.0 on fail only in their first runs after an install (a cold cache), so the
search meets the failure and names 1.4.0, and the verification's fresh runs at 1.4.0 and
1.3.0 pass alike: "NOT verified", exit 1, and no continuation into the commits between."""

from __future__ import annotations

import json
import subprocess

import pytest

from bisect_cli import bisect
from wheelhouse import write_cold_releases

pytestmark = pytest.mark.slow

VERSIONS = [f"1.{i}.0" for i in range(8)]
CHECK = ["python", "-c", "import coldpkg, sys; sys.exit(coldpkg.check())"]


def test_a_culprit_whose_failure_fresh_runs_do_not_reproduce_is_not_verified(tmp_path):
    wheels, repo, out = tmp_path / "wheels", tmp_path / "repo", tmp_path / "out"
    wheels.mkdir()
    write_cold_releases(wheels, VERSIONS, "1.4.0", 3)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # no tags: never reached
    argv = [
        "versions", "coldpkg", "--good", "1.0.0", "--bad", "1.7.0", "--find-links", str(wheels),
        "--repo", str(repo), "--out", str(out), "--parallel", "1", "--plain", "--", *CHECK,
    ]  # fmt: skip
    done = bisect(*argv, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "unconfirmed: coldpkg 1.4.0 (posterior" in done.stdout  # never called the culprit
    assert not any(line.startswith("culprit") for line in done.stdout.splitlines())
    assert "NOT verified (the culprit's fresh runs fit a good version's failure rate)" in (
        done.stdout
    )
    assert "continuing into the commits" not in done.stderr
    folder = out / "versions-coldpkg"
    assert not (folder / "commits.json").exists()
    results = json.loads((folder / "results.json").read_text())
    assert results["state"] == "not_verified" and results["culprit"] == "1.4.0"
    verification = results["verification"]
    assert verification["state"] == "not_verified"
    assert verification["culprit"]["failed"] <= 3 and verification["runs"] > 0
    report = (folder / "versions.md").read_text()
    assert "**Unconfirmed: coldpkg 1.4.0" in report and "- verification: NOT verified" in report
    assert f"{verification['runs']} verification runs" in report

    again = bisect(*argv, cwd=tmp_path)  # resumed: the stored verification decides again
    assert again.returncode == 1 and "NOT verified" in again.stdout
    assert json.loads((folder / "results.json").read_text())["verification"] == verification
