"""What a study records about its own runs in its store's meta table: the keys, read back.

The studies write these keys when they run (`studies.run_record`), the reports render what they
hold, and ``bisect report`` reads them again elsewhere: all of them find the names here, below
both. The store itself writes ``created_at`` when it is made.
"""

from __future__ import annotations

import json

from heisenbisect.store import Store

META_KEY = "environment"  # the machine and runner of the latest run of the study
FINISHED_KEY = "finished_at"
CREATED_KEY = "created_at"
# one per run of the study: started_at, load_start, in_flight, finished_at, load_end
SESSIONS_KEY = "sessions"


def sessions_of(store: Store) -> list[dict]:
    """Every run of the study so far, oldest first (none in a store older than this record)."""
    return json.loads(store.meta(SESSIONS_KEY) or "[]")


def environment_of(store: Store) -> dict | None:
    """Where and how the study ran, with its start, its end and every session; None when
    unrecorded."""
    text = store.meta(META_KEY)
    if not text:
        return None
    environment = json.loads(text)
    created, finished = store.meta(CREATED_KEY), store.meta(FINISHED_KEY)
    environment["created_at"] = float(created) if created else None
    environment["finished_at"] = float(finished) if finished else None
    environment["sessions"] = sessions_of(store)
    return environment
