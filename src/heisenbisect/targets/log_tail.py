"""The end of a log file, read without reading the rest: what ended a run is printed last, and a
trial's log may hold a MiB of each stream. A log that is gone (a study folder moved or tidied
away) is not an error for whoever reads it: it reads as None."""

from __future__ import annotations

import os


def read_tail(path: str | os.PathLike, max_bytes: int) -> str | None:
    """The last ``max_bytes`` of the file as text (bytes that do not decode replaced); None when it cannot be read."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - max_bytes))
            return log.read().decode(errors="replace")
    except OSError:
        return None
