"""A version bisection's folder is not a screening's: `bisect run` on the spec `bisect versions`
wrote is refused (one line, exit 2) before it could overwrite the bisection's results.json, and
the screening's file listing (what `bisect run --fresh` moves aside) leaves its files alone."""

from __future__ import annotations

import pytest
from bisect_cli import bisect
from wheelhouse import write_wheel

from heisenbisect.layout import StudyPaths

pytestmark = pytest.mark.slow


def test_bisect_run_refuses_a_version_bisection_s_folder(tmp_path):
    wheels, out = tmp_path / "wheels", tmp_path / "out"
    wheels.mkdir()
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        write_wheel(wheels, "mypkg", version, {"mypkg/__init__.py": ""})
    argv = ["versions", "mypkg", "--good", "1.0.0", "--bad", "1.2.0", "--find-links", str(wheels)]
    argv += ["--max-trials", "4", "--out", str(out), "--plain", "--", "python", "-c", "pass"]
    done = bisect(*argv, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # the budget spent: undecided
    folder = out / "versions-mypkg"
    answer = (folder / "results.json").read_text()

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
