"""One sqlite file per study: every finished trial, committed as it arrives; the basis of resume.

Reports and resumed runs read outcomes back in arrival order (``seq``), so replaying a
sequential strategy over the store reaches exactly the decisions the live run reached.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import resource
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from heisenbisect.errors import DiskFullError, HeisenbisectError, StoreMismatchError
from heisenbisect.lock import NOT_WRITABLE, WRITABLE
from heisenbisect.records import Config, EnvReads, Outcome, TrialStatus
from heisenbisect.user_text import capped

if TYPE_CHECKING:
    from heisenbisect.lock import StudyLock

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
    finished_at REAL NOT NULL,
    env_reads TEXT
);
CREATE INDEX IF NOT EXISTS outcomes_by_config ON outcomes (config_key, idx);
"""
# columns added since the first schema, with their type: a store made before one gains it
# empty on opening (NULL: not recorded then), so old stores keep resuming and reporting
ADDED_COLUMNS = {"env_reads": "TEXT"}
# columns a store can do without, with what a trial stored without one reads as (a store from
# before the column, or one a script rewrote); the others make a trial and cannot be guessed
OPTIONAL_COLUMNS = {
    **ADDED_COLUMNS,
    "metrics": "TEXT NOT NULL DEFAULT '{}'",
    "duration_s": "REAL NOT NULL DEFAULT 0",
    "log_path": "TEXT",
    "detail": "TEXT NOT NULL DEFAULT ''",
    "finished_at": "REAL NOT NULL DEFAULT 0",
}
REQUIRED_COLUMNS = ("seq", "trial_id", "config_key", "config", "idx", "status", "failures", "total")
START_OVER = "rerun with --fresh to move it aside and start over"
# the store's layout, recorded in meta: 1 the first, 2 with env_reads. An older store (or one
# from before the version was recorded) is migrated on opening; a newer one is refused unread
SCHEMA_VERSION = 2
VERSION_KEY = "schema_version"
# the version of the rule the stored identity was made by (`studies.identity`); a store bound
# before versions were recorded has none and was made by rule 1
IDENTITY_VERSION_KEY = "identity_version"
FIRST_IDENTITY_VERSION = 1


def fingerprint(identity: dict) -> str:
    """A stable hash of whatever makes stored trials comparable (target, factors, range)."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[
        :16
    ]


class StoreError(HeisenbisectError):
    """The store cannot be read or written: corrupt, unreadable, or on a full disk."""


class StoreFull(StoreError, DiskFullError):
    """The disk (or the file size limit) is full: every trial stored before is kept, and the
    same command resumes once there is room; the command line adds how (`cli`)."""


class IdentityRule(Protocol):
    """How studies make the identity a store is bound to (`studies.identity.RULE`)."""

    version: int

    def upgrade(self, stored: dict, version: int) -> dict:
        """An identity bound under an earlier ``version`` re-derived under this rule; a ValueError
        when one of its parts no longer validates."""
        ...


class Store:
    """The study's durable record. Thread-compatible: use from one thread (the engine's).

    ``lock``, when given, is the driver's `StudyLock`, released when the store closes.
    """

    def __init__(self, path: Path, lock: StudyLock | None = None):
        self.path = Path(path)
        self._lock = lock
        self.full = False  # a write failed for want of room: nothing more is written
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                self._create_aside()
            elif self.path.is_file() and self.path.stat().st_size == 0:
                # a new store is never empty (`_create_aside`): this one lost its contents
                raise StoreError(
                    f"{self.path}: the study store is an empty file (a copy or a write cut "
                    f"short?); restore it from a backup, or {START_OVER}"
                )
            self._db = sqlite3.connect(
                self.path, isolation_level=None
            )  # autocommit: each write lands
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the study store: {_reason(exc)}") from None
        try:
            stored = self._refuse_newer()
            self._refuse_foreign()
            self._db.executescript(SCHEMA)  # first: a reader never sees the file without its tables
            self._add_missing_columns()
            if (
                stored != SCHEMA_VERSION
            ):  # new or migrated; a current store is left unwritten (read-only copies)
                self._set(VERSION_KEY, str(SCHEMA_VERSION))
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("SELECT COUNT(*) FROM outcomes").fetchone()
        except sqlite3.Error as exc:
            self._db.close()
            raise _store_error(self.path, "open", exc) from None

    def _create_aside(self) -> None:
        """A new store appears with its tables: built beside its path and renamed into place, so
        nothing that opens it meanwhile (`bisect report`, a script watching a run) finds an empty file."""
        fresh = self.path.with_name(f".{self.path.name}.{os.getpid()}.new")
        db = sqlite3.connect(fresh, isolation_level=None)
        try:
            db.executescript(SCHEMA)
        finally:
            db.close()
        os.replace(fresh, self.path)

    def _refuse_newer(self) -> int | None:
        """The store's schema version (None: new, or from before it was recorded); a store a newer
        heisenbisect wrote is refused before this one changes anything in it."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (VERSION_KEY,)).fetchone()
        except sqlite3.OperationalError:
            return None  # no meta table: a new file
        if row is None:
            return None
        try:
            version = int(row[0])
        except ValueError:
            self._db.close()
            raise StoreError(
                f"{self.path}: unreadable store schema version {capped(str(row[0]), 40)!r} (not "
                f"written by heisenbisect); {START_OVER}"
            ) from None
        if version > SCHEMA_VERSION:
            self._db.close()
            raise StoreError(
                f"{self.path}: written by a newer heisenbisect (store schema {row[0]}; this one reads up to "
                f"{SCHEMA_VERSION}); upgrade it (pip install -U heisenbisect) to resume or report this study, "
                "or give another --out"
            )
        return version

    def _refuse_foreign(self) -> None:
        """A sqlite file of something else (other tables, or ours without a trial's columns) is
        refused unchanged: never given our tables beside its own."""
        query = "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        tables = {row[0] for row in self._db.execute(query)}
        have = {row[1] for row in self._db.execute("PRAGMA table_info(outcomes)")}
        missing = [c for c in REQUIRED_COLUMNS if c not in have]
        if tables and (not tables <= {"meta", "outcomes"} or ("outcomes" in tables and missing)):
            self._db.close()
            what = (
                f"no {', '.join(missing)} column"
                if "outcomes" in tables and missing
                else (f"tables {', '.join(sorted(tables))}")
            )
            raise StoreError(
                f"{self.path}: not a heisenbisect study store ({what}); give another --out, "
                f"or {START_OVER}"
            )

    def _add_missing_columns(self) -> None:
        have = {row[1] for row in self._db.execute("PRAGMA table_info(outcomes)")}
        for name, kind in OPTIONAL_COLUMNS.items():
            if name not in have:
                self._db.execute(f"ALTER TABLE outcomes ADD COLUMN {name} {kind}")

    def close(self) -> None:
        self._db.close()
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- identity --------------------------------------------------------------------------

    def bind(
        self,
        identity: dict,
        description: str,
        tolerated: tuple[str, ...] = (),
        way_out: str = "rerun with --fresh to move them aside and start over",
        *,
        rule: IdentityRule,
    ) -> list[str]:
        """Tie the store to a spec identity made by ``rule``; refuse if it holds trials of another.

        A store bound under an earlier rule whose identity, re-derived under ``rule``, is this one
        is rebound to it: every trial is kept. A change only in ``tolerated`` parts is not
        refused: they are returned, for a reader that runs no trial (``bisect report``) to warn
        about; the stored identity is kept.
        """
        changed = self.changes(identity, rule)
        if changed and not set(changed) <= set(tolerated):
            raise StoreMismatchError(f"{self.mismatch(changed, description)}; {way_out}")
        unbound = self.meta("fingerprint") is None or self.count() == 0
        # a reader that runs nothing (tolerated parts) leaves an earlier rule's store as it was
        upgraded = not changed and not tolerated and self.identity_version(rule) != rule.version
        if unbound or upgraded:
            self._set("fingerprint", fingerprint(identity))
            self._set("identity", json.dumps(identity, sort_keys=True, default=str))
            self._set(IDENTITY_VERSION_KEY, str(rule.version))
        if unbound:
            self._set("created_at", str(time.time()))
        return changed

    def changes(self, identity: dict, rule: IdentityRule) -> list[str]:
        """The parts of ``identity`` that differ from the stored trials' (none: the same, or no
        trials), the stored identity re-derived under ``rule`` when an earlier rule made it."""
        stored = self.meta("fingerprint")
        if stored is None or self.count() == 0 or stored == fingerprint(identity):
            return []
        old = self._comparable(rule)
        if fingerprint(old) == fingerprint(identity):
            return []
        return sorted(
            k for k in set(old) | set(identity) if old.get(k) != _plain(identity.get(k))
        ) or ["unknown"]

    def _comparable(self, rule: IdentityRule) -> dict:
        """The stored identity as ``rule`` makes it; as stored when a part no longer validates (it
        then differs, and is named as changed)."""
        old = self.stored_identity()
        version = self.identity_version(rule)
        if version == rule.version:
            return old
        try:
            return rule.upgrade(old, version)
        except ValueError:
            return old

    def identity_version(self, rule: IdentityRule) -> int:
        """The version of the rule the stored identity was made by; one that is not a version
        ``rule`` can upgrade from is a `StoreError` naming the file."""
        text = self.meta(IDENTITY_VERSION_KEY)
        if text is None:
            return FIRST_IDENTITY_VERSION
        try:
            version = int(text)
        except ValueError:
            version = 0
        if version > rule.version:
            raise StoreError(
                f"{self.path}: bound by a newer heisenbisect (identity version {version}; this "
                f"one reads up to {rule.version}); upgrade it (pip install -U heisenbisect) to "
                "resume this study, or give another --out"
            )
        if version < FIRST_IDENTITY_VERSION:
            raise StoreError(
                f"{self.path}: unreadable identity version {text!r} in the study store; "
                "rerun with --fresh to move it aside and start over"
            )
        return version

    def stored_identity(self) -> dict:
        return json.loads(self.meta("identity") or "{}")

    def mismatch(self, changed: list[str], description: str) -> str:
        """``holds N trials of a different spec (changed: ...)``, saying which parts it never recorded."""
        old = self.stored_identity()
        unrecorded = [k for k in changed if k not in old and k != "unknown"]
        parts = ", ".join(changed)
        if unrecorded:
            parts += f"; this store predates the recording of {', '.join(unrecorded)}"
        return f"{self.path}: holds {self.count()} trials of a different {description} (changed: {parts})"

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Record a fact about the study beside its trials (the environment a run saw, say)."""
        self._set(key, value)

    def _set(self, key: str, value: str) -> None:
        try:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        except sqlite3.OperationalError as exc:
            raise self._write_error(f"record {key}", exc) from None

    # -- outcomes --------------------------------------------------------------------------

    def record(self, outcome: Outcome, config: Config) -> None:
        """Commit one finished trial; a trial id stored twice is a bug and raises."""
        try:
            self._insert(outcome, config)
        except sqlite3.OperationalError as exc:  # a full disk, a store made read-only
            raise self._write_error(f"record trial {outcome.trial_id}", exc) from None

    def _write_error(self, doing: str, exc: sqlite3.OperationalError) -> StoreError:
        """One line for a write that failed: a full disk (`StoreFull`) or another cause."""
        kept = f"every finished trial is kept ({self.count()} in the store)"
        full = _full(self.path, exc)
        if full:
            self.full = True
            return StoreFull(f"{self.path}: cannot {doing}: {full}; {kept}")
        return StoreError(
            f"{self.path}: cannot {doing}: {_reason(exc)}; {kept}, rerun to resume once that is fixed"
        )

    def _insert(self, outcome: Outcome, config: Config) -> None:
        self._db.execute(
            "INSERT INTO outcomes (trial_id, config_key, config, idx, status, failures, total,"
            " metrics, duration_s, log_path, detail, finished_at, env_reads)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                _reads_text(outcome.env_reads),
            ),
        )

    def outcomes(self) -> list[tuple[Config, Outcome]]:
        """Every stored outcome with its config, in arrival order; a corrupt page or a row that
        is not a trial is a `StoreError` naming the file."""
        try:
            rows = self._db.execute(
                "SELECT config, trial_id, config_key, idx, status, failures, total, metrics,"
                " duration_s, log_path, detail, env_reads FROM outcomes ORDER BY seq"
            ).fetchall()
        except sqlite3.Error as exc:
            raise _store_error(self.path, "read", exc) from None
        try:
            return [(_config(row[0]), _outcome(row[1:])) for row in rows]
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(
                f"{self.path}: a stored trial does not read back ({capped(str(exc), 120)}); "
                f"{START_OVER}"
            ) from None

    def count(self) -> int:
        try:
            return self._db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
        except sqlite3.Error as exc:
            raise _store_error(self.path, "read", exc) from None

    def used_indices(self, config_key: str) -> set[int]:
        rows = self._db.execute("SELECT idx FROM outcomes WHERE config_key=?", (config_key,))
        return {r[0] for r in rows}


def _plain(value: object) -> object:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _config(text: str) -> Config:
    data = json.loads(text)
    return Config(changes=tuple(tuple(pair) for pair in data["changes"]), commit=data["commit"])


def _reads_text(reads: EnvReads | None) -> str | None:
    if reads is None:
        return None
    return json.dumps(
        {
            "processes": reads.processes,
            "names": dict(reads.names),
            "copied_at": list(reads.copied_at),
        }
    )


def _reads(text: str | None) -> EnvReads | None:
    if text is None:
        return None
    data = json.loads(text)
    return EnvReads(data["processes"], data["names"], tuple(data["copied_at"]))


def _outcome(row: tuple) -> Outcome:
    (
        trial_id,
        config_key,
        idx,
        status,
        failures,
        total,
        metrics,
        duration,
        log_path,
        detail,
        reads,
    ) = row
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
        env_reads=_reads(reads),
    )


FULL_BELOW_BYTES = 1024 * 1024  # sqlite says "disk I/O error" when its WAL cannot grow
LIMIT_MARGIN_BYTES = 64 * 1024  # a store file this close to the file size limit cannot grow


def _disk_full(path: Path) -> bool:
    try:
        stats = os.statvfs(path.parent)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < FULL_BELOW_BYTES


def _full(path: Path, exc: sqlite3.Error) -> str | None:
    """Why a write found no room, or None: little space left (sqlite says "disk I/O error" when
    its WAL cannot grow), a store file at the process's file size limit (``ulimit -f``: EFBIG,
    an I/O error or, for a write cut short, "database or disk is full"), or sqlite's own
    "database or disk is full"."""
    if _disk_full(path):
        return "the disk is full (no space left on device)"
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and any(
        f.exists() and f.stat().st_size + LIMIT_MARGIN_BYTES > limit for f in store_files(path)
    ):
        return (
            f"the disk is full for this process (its file size limit, ulimit -f, is {limit} bytes)"
        )
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return "the disk is full"
    return None


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)


def _store_error(path: Path, doing: str, exc: sqlite3.Error) -> StoreError:
    """One line for a store sqlite cannot use: the file, what is wrong, and what to do."""
    reason = _reason(exc)
    full = _full(path, exc)
    if full:
        return StoreFull(
            f"{path}: cannot {doing} the study store: {full}; every finished trial is kept"
        )
    if not os.access(path.parent, os.W_OK):
        return StoreError(f"{path.parent}: {NOT_WRITABLE}; {WRITABLE}")
    if "readonly" in reason:
        return StoreError(f"{path}: the study store is read-only; {WRITABLE}")
    return StoreError(f"{path}: cannot {doing} the study store ({reason}); {START_OVER}")


def store_files(path: Path) -> list[Path]:
    """The store and its WAL companions."""
    return [Path(str(path) + suffix) for suffix in ("", "-wal", "-shm")]


def move_aside(folder: Path, entries: Iterable[Path]) -> Path | None:
    """Move ``entries`` of ``folder`` (a store, its logs, its reports) into a new, unique
    ``folder/previous/<time>-<n>/``, keeping their layout: nothing recorded is lost or overwritten.

    Returns that folder, or None when none of the entries exists. Callers hold the study lock.
    """
    folder = Path(folder)
    existing = [p for p in dict.fromkeys(map(Path, entries)) if p.exists() or p.is_symlink()]
    if not existing:
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in itertools.count(1):
        target = folder / "previous" / f"{stamp}-{n}"
        try:
            target.mkdir(parents=True)  # atomic: two callers never get the same folder
            break
        except FileExistsError:
            continue
    for entry in existing:
        destination = target / entry.relative_to(folder)
        destination.parent.mkdir(parents=True, exist_ok=True)
        entry.rename(destination)
    return target
