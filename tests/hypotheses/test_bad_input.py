"""Every bad input is one line and exit 2, and `bisect validate` and `bisect run` agree on it.

Specs, study names, output folders (a file, read-only, full) and stores (corrupt, busy, --fresh).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.hypotheses.loader import MAX_NODES
from heisenbisect.store import move_aside
from refused import one_line, refused_alike

QUICK = "command: [/bin/sh, -c, 'sleep ${PAUSE:-0}; echo \"{\\\"failures\\\": 0, \\\"total\\\": 1}\"']"
GOOD = f"""\
study: quick
target:
  {QUICK}
factors:
  - name: MODE
    levels: [a, b]
statistics:
  max_trials: 2
  first_look: 2
"""

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)

BAD_SPECS = {
    "binary": b"\x00\x01\x02study: x\n",
    "not utf-8": "study: caf\xe9\ntarget: {command: [/bin/true]}\n".encode("latin-1"),
    "empty": b"",
    "complex key": b"? [a, b]\n: 1\ntarget: {command: [/bin/true]}\n",
    "python tag": b"target: !!python/object/apply:os.system ['echo owned']\n",
    "invalid date": b"target: {command: [/bin/true], timeout: 2024-13-45}\n",
    "5000 brackets": b"target: " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "alias bomb": BOMB.encode(),
    "recursive alias": b"target: &t {command: [/bin/true], env: *t}\n",
    "env name with =": b"target: {command: [/bin/true], env: {'A=B': '1'}}\n",
    "env name with NUL": b'target: {command: [/bin/true], env: {"A\\0B": "1"}}\n',
    "env value with NUL": b'target: {command: [/bin/true], env: {A: "1\\0"}}\n',
    "factor var with =": b"target: {command: [/bin/true]}\nfactors: [{name: F, var: 'A=B', levels: [a, b]}]\n",
    "factor level with NUL": b'target: {command: [/bin/true]}\nfactors: [{name: F, levels: [a, "b\\0"]}]\n',
    "study ..": b"study: '..'\ntarget: {command: [/bin/true]}\n",
    "study .": b"study: '.'\ntarget: {command: [/bin/true]}\n",
    "study 300 chars": b"study: " + b"s" * 300 + b"\ntarget: {command: [/bin/true]}\n",
    "study with a slash": b"study: a/b\ntarget: {command: [/bin/true]}\n",
}


@pytest.mark.parametrize("case", BAD_SPECS)
def test_a_bad_spec_is_one_line_exit_2_in_validate_and_run(tmp_path, capsys, case):
    spec = tmp_path / "hypotheses.yaml"
    spec.write_bytes(BAD_SPECS[case])
    refused = refused_alike(capsys, spec, "run", tmp_path / "out")
    if "alias" in case:  # refused by counting, before anything is expanded
        assert f"aliases expand to more than {MAX_NODES} values" in refused
    assert str(spec) in refused


def test_an_unreadable_spec_is_one_line(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 2  # a folder
    assert "cannot read the hypotheses file" in one_line(capsys)


def test_a_date_where_text_is_expected_stays_text(tmp_path, capsys):
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text("question: 2024-13-45\ntarget: {command: [/bin/true]}\nfactors: [{name: D, levels: [2024-01-01, 2024-13-45]}]\n")
    assert main(["validate", str(spec)]) == 0


def test_a_spec_named_dots_gets_a_study_folder_of_its_own(tmp_path, capsys):
    spec = tmp_path / "...yaml"
    spec.write_text("target: {command: [/bin/true]}\n")
    assert main(["validate", str(spec)]) == 0
    assert "study 'study'" in capsys.readouterr().out


# -- output folders and stores -------------------------------------------------------------------


def write_good(tmp_path: Path) -> Path:
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(GOOD)
    return spec


def test_an_out_that_is_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main(["run", str(write_good(tmp_path)), "--out", str(tmp_path / "file")]) == 2
    assert "cannot create the study folder: Not a directory" in one_line(capsys)


@pytest.fixture
def tmpfs(tmp_path):
    """Mount small tmpfs folders (root only); unmounted afterwards."""
    mounted: list[Path] = []

    def mount(name: str, options: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
        if done.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_out_is_one_line(tmp_path, tmpfs, capsys):
    out = tmpfs("ro", "ro,size=64k")
    assert main(["run", str(write_good(tmp_path)), "--out", str(out)]) == 2
    assert "Read-only file system" in one_line(capsys)


def test_a_full_disk_is_one_line(tmp_path, tmpfs, capsys):
    out = tmpfs("full", "size=64k")
    with open(out / "filler", "wb") as filler:
        try:
            filler.write(b"x" * 1024 * 1024)
        except OSError:
            pass
    assert main(["run", str(write_good(tmp_path)), "--out", str(out), "--plain"]) == 2
    assert "no space left on device" in one_line(capsys).lower()


def test_a_disk_that_fills_while_opening_the_store_is_not_called_corrupt(tmp_path, tmpfs, capsys):
    out = tmpfs("nearly", "size=256k")
    (out / "filler").write_bytes(b"x" * 200 * 1024)
    assert main(["run", str(write_good(tmp_path)), "--out", str(out), "--plain"]) == 2
    line = one_line(capsys)
    assert "no space left on device" in line and "--fresh" not in line


def test_a_corrupt_store_is_one_line_naming_the_fresh_remedy(tmp_path, capsys):
    spec = write_good(tmp_path)
    store = tmp_path / "out" / "quick" / "study.sqlite"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"not a database\n" * 300)
    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--plain"]) == 2
    assert "rerun with --fresh" in one_line(capsys)
    fresh = [sys.executable, "-m", "heisenbisect", "run", str(spec), "--out", str(tmp_path / "out"), "--fresh"]
    assert "Traceback" not in subprocess.run(fresh, capture_output=True, text=True).stderr
    (kept,) = (tmp_path / "out" / "quick" / "previous").glob("*/study.sqlite")
    assert kept.read_bytes() == b"not a database\n" * 300


def stored(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def test_move_aside_never_reuses_a_folder_within_a_second(tmp_path):
    kept = []
    for i in range(3):
        (tmp_path / "study.sqlite").write_text(str(i))
        kept.append(move_aside(tmp_path, [tmp_path / "study.sqlite"]))
    assert len(set(kept)) == 3
    assert [(k / "study.sqlite").read_text() for k in kept] == ["0", "1", "2"]


@pytest.mark.slow
def test_two_fresh_at_once_lose_nothing(tmp_path):
    spec = write_good(tmp_path)
    out = tmp_path / "out"
    bisect = [sys.executable, "-m", "heisenbisect", "run", str(spec), "--out", str(out), "--plain"]
    assert subprocess.run(bisect, capture_output=True).returncode != 2
    first = stored(out / "quick" / "study.sqlite")
    env = {**os.environ, "PAUSE": "0.3"}
    runs = [subprocess.Popen([*bisect, "--fresh"], stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    codes = [(run.wait(120), run.stderr.read()) for run in runs]
    refused = [err for code, err in codes if code == 2]
    assert all("another bisect" in err for err in refused)
    kept = sorted((out / "quick" / "previous").glob("*/study.sqlite"))
    assert len(kept) == 2 - len(refused)
    assert stored(kept[0]) == first
    assert all(stored(k) > 0 for k in kept) and stored(out / "quick" / "study.sqlite") > 0
    assert (kept[0].parent / "logs").is_dir() and (kept[0].parent / "report.md").exists()


def test_one_process_may_open_two_stores_of_a_study_and_the_last_close_unlocks(tmp_path, capsys):
    from heisenbisect.lock import StudyLock
    from heisenbisect.studies.common import open_store

    search = open_store(tmp_path / "amplify.sqlite", {"a": 1}, fresh=False)
    confirm = open_store(tmp_path / "confirm.sqlite", {"a": 1}, fresh=False)
    confirm.close()
    confirm.close()  # idempotent: the search still holds the study
    other = subprocess.run(
        [sys.executable, "-c", f"from heisenbisect.lock import StudyLock; StudyLock.acquire({str(tmp_path)!r})"],
        capture_output=True, text=True,
    )
    assert "StudyBusyError" in other.stderr
    search.close()
    again = subprocess.run(other.args, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    StudyLock.acquire(tmp_path).release()
