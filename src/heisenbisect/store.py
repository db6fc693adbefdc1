"""One sqlite file per study: every finished trial, committed as it arrives; the basis of resume.

Reports and resumed runs read outcomes back in arrival order (``seq``), so replaying a
sequential strategy over the store reaches exactly the decisions the live run reached.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from heisenbisect.errors import StoreMismatchError
from heisenbisect.records import Config, Outcome, TrialStatus

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trial_id TEXT NOT NULL UNIQUE,
    config_key TEXT NOT NULL,
    config TEXT NOT NULL,
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,
    failures INTEGER NOT NULL,
    total INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    duration_s REAL NOT NULL,
    log_path TEXT,
    detail TEXT NOT NULL,
    finished_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_by_config ON outcomes (config_key, idx);
"""


def fingerprint(identity: dict) -> str:
    """A stable hash of whatever makes stored trials comparable (target, factors, range)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Store:
    """The study's durable record. Thread-compatible: use from one thread (the engine's)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)  # autocommit: each write lands
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- identity --------------------------------------------------------------------------

    def bind(self, identity: dict, description: str) -> None:
        """Tie the store to a spec identity; refuse if it already holds trials of another."""
        wanted = fingerprint(identity)
        row = self._db.execute("SELECT value FROM meta WHERE key='fingerprint'").fetchone()
        if row is None or self.count() == 0:
            self._set("fingerprint", wanted)
            self._set("identity", json.dumps(identity, sort_keys=True, default=str))
            self._set("created_at", str(time.time()))
            return
        if row[0] != wanted:
            old = json.loads(self.meta("identity") or "{}")
            changed = sorted(k for k in set(old) | set(identity) if old.get(k) != _plain(identity.get(k)))
            raise StoreMismatchError(
                f"{self.path}: holds {self.count()} trials of a different {description} "
                f"(changed: {', '.join(changed) or 'unknown'}); rerun with --fresh to move them "
                "aside and start over"
            )

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _set(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    # -- outcomes --------------------------------------------------------------------------

    def record(self, outcome: Outcome, config: Config) -> None:
        """Commit one finished trial; a trial id stored twice is a bug and raises."""
        self._db.execute(
            "INSERT INTO outcomes (trial_id, config_key, config, idx, status, failures, total,"
            " metrics, duration_s, log_path, detail, finished_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                outcome.trial_id,
                outcome.config_key,
                json.dumps({"changes": list(config.changes), "commit": config.commit}),
                outcome.index,
                outcome.status.value,
                outcome.failures,
                outcome.total,
                json.dumps(dict(outcome.metrics)),
                outcome.duration_s,
                outcome.log_path,
                outcome.detail,
                time.time(),
            ),
        )

    def outcomes(self) -> list[tuple[Config, Outcome]]:
        """Every stored outcome with its config, in arrival order."""
        rows = self._db.execute(
            "SELECT config, trial_id, config_key, idx, status, failures, total, metrics,"
            " duration_s, log_path, detail FROM outcomes ORDER BY seq"
        ).fetchall()
        return [(_config(row[0]), _outcome(row[1:])) for row in rows]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]

    def used_indices(self, config_key: str) -> set[int]:
        rows = self._db.execute("SELECT idx FROM outcomes WHERE config_key=?", (config_key,))
        return {r[0] for r in rows}


def _plain(value: object) -> object:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _config(text: str) -> Config:
    data = json.loads(text)
    return Config(changes=tuple(tuple(pair) for pair in data["changes"]), commit=data["commit"])


def _outcome(row: tuple) -> Outcome:
    trial_id, config_key, idx, status, failures, total, metrics, duration, log_path, detail = row
    return Outcome(
        trial_id=trial_id,
        config_key=config_key,
        index=idx,
        status=TrialStatus(status),
        failures=failures,
        total=total,
        metrics=json.loads(metrics),
        duration_s=duration,
        log_path=log_path,
        detail=detail,
    )


def move_aside(path: Path) -> Path | None:
    """Rename an old store (and its WAL files) instead of deleting it: nothing recorded is lost."""
    path = Path(path)
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.stem}.{stamp}{path.suffix}")
    for suffix in ("", "-wal", "-shm"):
        old = Path(str(path) + suffix)
        if old.exists():
            old.rename(Path(str(target) + suffix))
    return target
