"""The store records its schema version: a store from a newer heisenbisect is refused before any
trial (naming its version, the file untouched); an older one is migrated with nothing lost."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from pathlib import Path

from first_schema import write_first_schema_store
from heisenbisect.cli import main
from heisenbisect.store import SCHEMA_VERSION, Store

SPEC = """\
study: schema
target:
  command: [{python}, -c, 'print(chr(123) + "\\"failures\\": 0" + chr(125))']
factors:
  - {{name: MODE, levels: [a, b]}}
statistics: {{max_trials: 2, first_look: 2}}
"""


def write_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(SPEC.format(python=sys.executable))
    return spec


def test_a_store_from_a_newer_version_is_refused_before_any_trial(tmp_path, capsys):
    spec = write_spec(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--plain"]) in (0, 1, 3)  # a store of this version
    store = out / "schema" / "study.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        trials = db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(out), "--plain"]) == 2
    err = capsys.readouterr().err
    assert "written by a newer heisenbisect (store schema 99; this one reads up to" in err
    assert "pip install -U heisenbisect" in err and "Traceback" not in err
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0] == trials


def test_a_store_of_the_first_schema_is_migrated_with_its_trials(tmp_path):
    with Store(write_first_schema_store(tmp_path / "study.sqlite")) as store:
        assert store.meta("schema_version") == str(SCHEMA_VERSION)
        [(_, outcome)] = store.outcomes()
        assert (outcome.trial_id, outcome.failures, outcome.total, outcome.env_reads) == ("old-0", 1, 4, None)
