"""Stores fail in one line (issue 37): a zero-length, foreign, corrupt or read-only study store,
or one with a garbage schema version, is one line naming the file and what to do, exit 2, from
`bisect run` and `bisect report` alike; `bisect report` then overwrites no report. A store from
before a column was added migrates with its trials."""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.store import Store
from test_store_schema import write_spec

REPORTS = ("report.md", "results.json", "paste.md")


def populated(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(spec, --out, store) of a finished study, its WAL folded into the file."""
    spec, out = write_spec(tmp_path), tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--plain"]) in (0, 1, 3)
    store = out / "schema" / "study.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return spec, out, store


def refused_in_one_line(capsys, argv: list[str], *words: str) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = "".join(
        line for line in capsys.readouterr().err.splitlines(True) if not line.startswith("warning:")
    )  # the spec's own warning (a small budget) aside
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


def empty(store: Path) -> None:
    store.write_bytes(b"")


def foreign(store: Path) -> None:
    store.unlink()
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    db.close()


def garbage_version(store: Path) -> None:
    with sqlite3.connect(store) as db:
        db.execute("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'")
    db.close()


def corrupt_page(store: Path) -> None:
    data = bytearray(store.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page : 3 * page] = b"\xa5" * (2 * page)  # the pages after the header's
    store.write_bytes(bytes(data))


FAULTS = {
    "a zero-length file": (empty, "empty file"),
    "a foreign sqlite file": (foreign, "not a heisenbisect study store"),
    "a garbage schema version": (garbage_version, "unreadable store schema version 'abc'"),
    "a corrupt page": (corrupt_page, "--fresh"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_a_broken_store_is_one_line_and_report_overwrites_nothing(tmp_path, capsys, case):
    spec, out, store = populated(tmp_path)
    fault, words = FAULTS[case]
    fault(store)
    damaged = store.read_bytes()
    reports = {name: (store.parent / name).read_bytes() for name in REPORTS}
    line = refused_in_one_line(capsys, ["run", str(spec), "--out", str(out), "--plain"], words)
    assert str(store) in line
    refused_in_one_line(capsys, ["report", str(spec), "--out", str(out)], str(store), words)
    assert store.read_bytes() == damaged, "the damaged store was changed"
    assert {name: (store.parent / name).read_bytes() for name in REPORTS} == reports
    assert "newer heisenbisect" not in line


def test_a_store_without_a_later_column_migrates_with_its_trials(tmp_path, capsys):
    spec, out, store = populated(tmp_path)
    with sqlite3.connect(store) as db:
        trials = db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
        db.execute("ALTER TABLE outcomes DROP COLUMN detail")
        db.execute("ALTER TABLE outcomes DROP COLUMN metrics")
    db.close()
    capsys.readouterr()
    assert main(["report", str(spec), "--out", str(out)]) in (0, 1, 3)
    assert "Traceback" not in capsys.readouterr().err
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] == trials
        assert db.execute("SELECT DISTINCT detail, metrics FROM outcomes").fetchall() == [("", "{}")]
    db.close()


def test_a_read_only_study_folder_is_one_line_without_fresh(tmp_path, capsys):
    spec = write_spec(tmp_path)
    out = tmp_path / "ro"
    out.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(out)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        assert main(["run", str(spec), "--out", str(out), "--plain"]) in (0, 1, 3)
        subprocess.run(["mount", "-o", "remount,ro", str(out)], check=True)
        line = refused_in_one_line(capsys, ["run", str(spec), "--out", str(out), "--plain"])
        assert "read-only" in line.lower() and "--fresh" not in line
    finally:
        subprocess.run(["umount", "-l", str(out)], capture_output=True)


FULL_SPEC = """\
study: full
target:
  command: [{python}, -c, "import json; print(json.dumps(dict(failures=0, total=10)))"]
factors:
  - {{name: MODE, levels: [a, b]}}
statistics: {{max_trials: 30, first_look: 30}}
"""


def size_limited(limit: int):
    """A child's preexec: files it writes stop at ``limit`` bytes, each write past it failing
    with EFBIG (SIGXFSZ ignored, which would kill it), as a full disk fails a write."""

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


def bisect_child(argv: list[str], cwd: Path, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "heisenbisect", *argv], cwd=cwd, text=True,
                          capture_output=True, timeout=300, preexec_fn=preexec)


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 256 KiB tmpfs (root only), a disk that fills up for real."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.mark.slow
@pytest.mark.parametrize("disk", ["file size limit", "tiny tmpfs"])
def test_a_full_disk_keeps_every_finished_trial_and_prints_the_resume_command(tmp_path, request, disk):
    (tmp_path / "spec.yaml").write_text(FULL_SPEC.format(python=sys.executable))
    if disk == "tiny tmpfs":
        out, preexec = request.getfixturevalue("tiny_tmpfs"), None
    else:
        out, preexec = tmp_path / "out", size_limited(200_000)
    done = bisect_child(["run", "spec.yaml", "--out", str(out), "--plain"], tmp_path, preexec)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors == done.stderr.splitlines()[-1:], done.stderr
    store = out / "full" / "study.sqlite"
    line = errors[0]
    assert str(store) in line and "the disk is full" in line and "every finished trial is kept" in line
    kept = int(re.search(r"\((\d+) in the store\)", line).group(1))
    command = line.split("resume with: ")[1]
    assert command == f"bisect run spec.yaml --out {out} --plain"
    with Store(store) as reopened:
        assert reopened.count() == kept > 0
    if disk == "tiny tmpfs":  # room again
        subprocess.run(["mount", "-o", "remount,size=8m", str(out)], check=True)
    resumed = bisect_child(shlex.split(command)[1:], tmp_path)
    assert resumed.returncode in (0, 1, 3), resumed.stderr
    assert f"resuming full: {kept} finished trials reused" in resumed.stderr
    with Store(store) as reopened:
        assert reopened.count() > kept


def as_a_user_without_override() -> list[str]:
    """The prefix that runs a command as a user whom file modes bind: none for a user; for root,
    setpriv without the capabilities that override them (another uid could not run this
    Python, under /root); a skip where neither can be had."""
    if os.geteuid() != 0:
        return []
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    probe = subprocess.run([*prefix, "true"], capture_output=True) if shutil.which("setpriv") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("running as root, and setpriv cannot drop the capabilities that override file modes")
    return prefix


@pytest.mark.parametrize("command", ["run", "report"])
def test_a_read_only_study_folder_is_one_line_naming_it(tmp_path, command):
    """chmod, not a read-only mount: the folder is not writable to this user."""
    prefix = as_a_user_without_override()
    spec, out, store = populated(tmp_path)
    folder = store.parent
    reports = {name: (folder / name).read_bytes() for name in REPORTS}
    folder.chmod(0o555)
    try:
        argv = [command, str(spec), "--out", str(out), *(["--plain"] if command == "run" else [])]
        done = subprocess.run([*prefix, sys.executable, "-m", "heisenbisect", *argv],
                              capture_output=True, text=True, timeout=120)
    finally:
        folder.chmod(0o755)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert errors == [f"error: {folder}: the study folder is not writable (Permission denied); "
                      "make it writable, or give another --out"] or errors == [
        f"error: {folder}: the study folder is not writable; make it writable, or give another --out"
    ], done.stderr
    assert {name: (folder / name).read_bytes() for name in REPORTS} == reports
