"""`bisect report` reads a store that `bisect run` would refuse only for the target's files.

A report runs no trial, so neither an edited target script nor a store written before the
target's files were hashed can mix trials of two experiments; it warns and renders what was
stored. Other factors or another target are still refused (the arms would not be the stored
ones). `bisect run` refuses such a store and names both ways out (docs/refusals.md).
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.store import fingerprint

FLAKY = 'echo "{\\"failures\\": $(( HEISENBISECT_SEED % 2 )), \\"total\\": 1}"\n'


def write_study(tmp_path: Path, levels: str = '["0", "1"]') -> Path:
    (tmp_path / "flaky.sh").write_text(FLAKY)
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: old-store
        target:
          command: [/bin/sh, flaky.sh]
          files: [flaky.sh]
        factors:
          - name: fixed
            var: FIXED
            levels: {levels}
        statistics:
          max_trials: 10
          first_look: 10
        """))
    return spec


@dataclass
class Done:
    returncode: int
    stderr: str


@pytest.fixture
def bisect(capsys):
    """``bisect ARGS --out tmp/out`` in this process (the trials are real processes all the same)."""

    def run(tmp_path: Path, *args: str) -> Done:
        capsys.readouterr()
        code = main([*args, "--out", str(tmp_path / "out")])
        return Done(code, capsys.readouterr().err)

    return run


def forget_target_files(store: Path) -> None:
    """Make the store look written by a heisenbisect from before the target's files were hashed."""
    with sqlite3.connect(store) as db:
        identity = json.loads(db.execute("SELECT value FROM meta WHERE key='identity'").fetchone()[0])
        del identity["target_files"]
        db.execute("UPDATE meta SET value=? WHERE key='identity'", (json.dumps(identity, sort_keys=True),))
        db.execute("UPDATE meta SET value=? WHERE key='fingerprint'", (fingerprint(identity),))


def stored_trials(tmp_path: Path) -> int:
    return json.loads((tmp_path / "out" / "old-store" / "results.json").read_text())["arms"][0]["trials"]


def test_a_store_from_before_the_hash_is_refused_by_run_and_rendered_by_report(tmp_path, bisect):
    spec = write_study(tmp_path)
    assert bisect(tmp_path, "run", str(spec), "--plain").returncode == 1  # 10 runs cannot claim zero
    store = tmp_path / "out" / "old-store" / "study.sqlite"
    forget_target_files(store)
    (tmp_path / "out" / "old-store" / "results.json").unlink()

    refused = bisect(tmp_path, "run", str(spec), "--plain")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1:] == [
        f"error: {store}: holds 20 trials of a different spec (changed: target_files; this store predates the "
        "recording of target_files); `bisect report` still renders them; rerun with --fresh to move them aside "
        "and start over"
    ]

    reported = bisect(tmp_path, "report", str(spec))
    assert reported.returncode == 1, reported.stderr  # the stored study's own code: undecided
    assert reported.stderr.strip().splitlines() == [
        f"warning: {store}: holds 20 trials of a different target (changed: target_files; this store predates "
        "the recording of target_files); running nothing, the report shows the trials as they ran"
    ]
    assert stored_trials(tmp_path) == 10
    assert bisect(tmp_path, "report", str(spec)).returncode == 1  # the store is left as it was: still old
    assert bisect(tmp_path, "run", str(spec), "--plain").returncode == 2


def test_report_renders_an_edited_script_but_refuses_other_factors(tmp_path, bisect):
    spec = write_study(tmp_path)
    assert bisect(tmp_path, "run", str(spec), "--plain").returncode == 1
    (tmp_path / "flaky.sh").write_text("# edited\n" + FLAKY)
    reported = bisect(tmp_path, "report", str(spec))
    assert reported.returncode == 1 and "changed: target_files)" in reported.stderr
    assert stored_trials(tmp_path) == 10

    write_study(tmp_path, levels='["0", "2"]')
    refused = bisect(tmp_path, "report", str(spec))
    assert refused.returncode == 2
    assert "(changed: factors); report them with the spec they ran under, or start over with " \
           "`bisect run --fresh`" in refused.stderr
