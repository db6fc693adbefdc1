"""`bisect versions` refuses bad input with one line and exit 2, before installing anything."""

from __future__ import annotations

import sys

import pytest

from bisect_cli import bisect, bisect_here, bisect_in_process
from heisenbisect.commands.versions import resume_command
from heisenbisect.errors import HeisenbisectError
from wheelhouse import write_wheel


@pytest.fixture
def wheels(tmp_path):
    for version in ("1.0.0", "1.1.0", "1.2.0", "1.3.0rc1", "1.3.0"):
        write_wheel(tmp_path, "mypkg", version, {"mypkg/__init__.py": ""})
    return tmp_path


@pytest.mark.parametrize(
    ("good", "bad", "says"),
    [
        ("1.2.0", "1.0.0", "versions: --good 1.2.0 is not older than --bad 1.0.0"),
        ("1.0.0", "2.0.0", "versions: --bad 2.0.0: mypkg 2.0.0 is not in "),
        ("1.2.0", "1.3.0", "versions: nothing to bisect: mypkg 1.3.0 directly follows 1.2.0"),
        ("one", "1.3.0", "--good: 'one' is not a version (PEP 440)"),
    ],
)
def test_a_range_that_cannot_be_bisected_is_refused(wheels, tmp_path, capsys, good, bad, says):
    argv = ["versions", "mypkg", "--good", good, "--bad", bad, "--find-links", str(wheels)]
    argv += ["--out", str(tmp_path / "out"), "--", "python", "-c", "pass"]
    done = bisect_in_process(capsys, *argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {says}") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()  # nothing made, nothing installed


def test_an_end_missing_from_the_folder_lists_what_is_there(wheels, tmp_path):
    argv = ["versions", "mypkg", "--good", "0.9.0", "--bad", "1.3.0", "--find-links", str(wheels)]
    done = bisect(*argv, "--", "python", "-c", "pass")
    assert "(its versions, newest last: 1.0.0, 1.1.0, 1.2.0, 1.3.0rc1, 1.3.0)" in done.stderr


def test_no_command_and_a_pattern_without_version_are_refused(wheels, tmp_path):
    base = ["versions", "mypkg", "--good", "1.0.0", "--bad", "1.3.0", "--find-links", str(wheels)]
    done = bisect(*base, "--out", str(tmp_path))
    assert done.returncode == 2
    assert "versions: give the command to run after '--'" in done.stderr
    with pytest.raises(HeisenbisectError, match="--tag-pattern: must hold {version}"):
        bisect_here([*base, "--tag-pattern", "release-", "--", "python"])


def test_the_resume_line_never_carries_fresh(monkeypatch):
    argv = ["bisect", "versions", "p", "--fresh", "--good", "1", "--bad", "2", "--", "x", "--fresh"]
    monkeypatch.setattr(sys, "argv", argv)
    assert resume_command() == "bisect versions p --good 1 --bad 2 -- x --fresh"
