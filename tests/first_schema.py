"""A store as the first heisenbisect wrote it, for the tests of its migration: no schema
version and no env_reads column, holding one finished baseline trial (``old-0``: 1 of 4 failed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

FIRST_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, trial_id TEXT NOT NULL UNIQUE, config_key TEXT NOT NULL,
    config TEXT NOT NULL, idx INTEGER NOT NULL, status TEXT NOT NULL, failures INTEGER NOT NULL,
    total INTEGER NOT NULL, metrics TEXT NOT NULL, duration_s REAL NOT NULL, log_path TEXT,
    detail TEXT NOT NULL, finished_at REAL NOT NULL
);
INSERT INTO outcomes (trial_id, config_key, config, idx, status, failures, total, metrics, duration_s,
                      log_path, detail, finished_at)
VALUES ('old-0', 'baseline', '{"changes": [], "commit": null}', 0, 'ok', 1, 4, '{}', 0.5, NULL, 'exit 1', 0);
"""


def write_first_schema_store(path: Path) -> Path:
    """Write the first schema's store at ``path``; return ``path``."""
    with sqlite3.connect(path) as db:
        db.executescript(FIRST_SCHEMA)
    db.close()  # the context manager commits but leaves the connection open
    return path
