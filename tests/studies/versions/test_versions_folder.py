"""Refusals around a version bisection, with real wheelhouses: a bad end that does not fail and
a range whose older end fails more often are refused (exit 3) before any version is blamed; a
version bisection's folder is not a screening's: `bisect run` on the spec `bisect versions`
wrote is refused (one line, exit 2) before it could overwrite the bisection's results.json, and
the screening's file listing (what `bisect run --fresh` moves aside) leaves its files alone."""

from __future__ import annotations

import json

import pytest

from bisect_cli import bisect
from heisenbisect.layout import StudyPaths
from wheelhouse import write_wheel

pytestmark = pytest.mark.slow


def test_bisect_run_refuses_a_version_bisection_s_folder(tmp_path):
    wheels, out = tmp_path / "wheels", tmp_path / "out"
    wheels.mkdir()
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        write_wheel(wheels, "mypkg", version, {"mypkg/__init__.py": ""})
    argv = ["versions", "mypkg", "--good", "1.0.0", "--bad", "1.2.0", "--find-links", str(wheels)]
    argv += ["--end-runs", "5", "--out", str(out), "--plain", "--", "python", "-c", "pass"]
    done = bisect(*argv, cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith(
        "the bad end does not fail: 0 of 5 runs at the bad end failed; the other end: 0 of 5. "
    )
    assert "needs more runs there (--end-runs)" in done.stdout
    folder = out / "versions-mypkg"
    answer = (folder / "results.json").read_text()
    results = json.loads(answer)
    assert (results["state"], results["culprit"]) == ("does_not_fail", None)
    assert (folder / "versions.md").read_text().startswith(
        "# Version bisection\n\n**Refused: the bad end does not fail"
    )

    ran = bisect("run", str(folder / "spec.yaml"), "--plain", cwd=tmp_path)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert ran.stderr == (
        f"error: bisect run: {folder} holds a version bisection (versions.sqlite); resume it "
        "with `bisect versions` (the line atop its spec.yaml), or give a screening a study of "
        "its own (another study name or --out)\n"
    )
    assert (folder / "results.json").read_text() == answer
    assert not (folder / "study.sqlite").exists()

    listed = {p.relative_to(folder).as_posix() for p in StudyPaths(folder).screening_files()}
    theirs = {"versions.sqlite", "versions.md", "envs", "logs/versions"}
    assert theirs <= {p.relative_to(folder).as_posix() for p in folder.glob("**/*")}
    assert not listed & theirs, listed


def test_a_range_whose_older_end_fails_more_often_is_refused_as_reversed(tmp_path):
    wheels, out = tmp_path / "wheels", tmp_path / "out"
    wheels.mkdir()
    for i, version in enumerate(("1.0.0", "1.1.0", "1.2.0", "1.3.0")):  # 1.2.0 fixed it
        code = "raise SystemExit(1)" if i < 2 else ""
        write_wheel(wheels, "fixpkg", version, {"fixpkg/__init__.py": "", "fixpkg/check.py": code})
    argv = ["versions", "fixpkg", "--good", "1.0.0", "--bad", "1.3.0", "--find-links", str(wheels)]
    argv += ["--out", str(out), "--plain", "--", "python", "-m", "fixpkg.check"]
    done = bisect(*argv, cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith(
        "the range looks reversed: the older version (--good) fails more often than the newer "
        "(--bad); bisect versions finds the version that brought a failure, not one that took "
        "it away (0 of 6 runs at the bad end failed; the other end: 6 of 6)"
    ), done.stdout
    results = json.loads((out / "versions-fixpkg" / "results.json").read_text())
    assert (results["state"], results["culprit"], results["verification"]) == (
        "reversed",
        None,
        None,
    )
