"""A trial's log while the trial runs, so that ``tail -f`` shows what the target prints as it prints it.

Output is appended as it arrives, in arrival order, with a label line whenever the stream
changes (``--- stderr (live) ---``). Each stream is written live only up to its head cap (the
first MiB); the rest stays in memory. When the trial ends, `replace_with` writes the final
log (stdout, then stderr, each its first and last MiB) beside the live one and renames it
into place: a reader sees one or the other, never half of one; ``tail -f`` ends with the live
output, ``tail -F`` goes on with the final log. A driver killed mid-trial leaves the live log.

With a `redaction.Redactor`, both logs are redacted: the live one line by line (a line is held
until its end or `HOLD_BYTES` of it arrive, or the target goes quiet: `release_held`), so a
secret split across two reads is still found.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from heisenbisect.redaction import Redactor

HOLD_BYTES = 16384  # a partial line longer than this is written (redacted) without its end


class LiveLog:
    """The log file of one running trial; opening it is the only write that may raise."""

    def __init__(self, path: Path, redactor: Redactor | None = None):
        self.path = path
        self._redactor = redactor
        self._held: dict[str, bytes] = {}  # per stream: the end of a line not yet written
        self._file: BinaryIO | None = open(
            path, "wb", buffering=0
        )  # unbuffered: a reader sees each chunk
        self._stream: str | None = None
        self._at_line_start = True

    def write(self, stream: str, data: bytes) -> None:
        """Append ``data`` that ``stream`` printed, labelled when the stream changed."""
        if not data:
            return
        if self._redactor is not None:
            data = self._whole_lines(stream, data)
            if not data:
                return
        self._label(stream)
        self._put(data)
        self._at_line_start = data.endswith(b"\n")

    def _whole_lines(self, stream: str, data: bytes) -> bytes:
        """``data``'s complete lines (with what was held of the first), redacted; the rest held."""
        assert self._redactor is not None
        data = self._held.pop(stream, b"") + data
        end = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        if end == 0 and len(data) < HOLD_BYTES:
            self._held[stream] = data
            return b""
        ready, rest = (data[:end], data[end:]) if end else (data, b"")
        if rest:
            self._held[stream] = rest
        return self._redactor.bytes(ready)

    def note(self, stream: str, text: str) -> None:
        """A line of heisenbisect's own about ``stream`` (``[heisenbisect: ...]``)."""
        self._label(stream)
        self._put((b"" if self._at_line_start else b"\n") + f"[heisenbisect: {text}]\n".encode())
        self._at_line_start = True

    def replace_with(self, write_final: Callable[[BinaryIO], None]) -> None:
        """Write the final log with ``write_final`` and rename it over the live one (atomic)."""
        self.close()
        final = self.path.with_name(self.path.name + ".final")
        with open(final, "wb") as log:
            if self._redactor is None:
                write_final(log)
            else:
                whole = io.BytesIO()
                write_final(whole)
                log.write(self._redactor.bytes(whole.getvalue()))
        os.replace(final, self.path)

    def release_held(self) -> None:
        """Write what is held of unfinished lines (redacted): the target went quiet mid-line."""
        for stream, rest in list(self._held.items()):
            self._held.pop(stream)
            assert self._redactor is not None
            self._label(stream)
            self._put(self._redactor.bytes(rest))
            self._at_line_start = rest.endswith(b"\n")

    def close(self) -> None:
        self.release_held()
        file, self._file = self._file, None
        if file is not None:
            file.close()

    def _label(self, stream: str) -> None:
        if stream != self._stream:
            self._put(
                (b"" if self._at_line_start else b"\n") + f"--- {stream} (live) ---\n".encode()
            )
            self._stream, self._at_line_start = stream, True

    def _put(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            self._file.write(data)
        except OSError:  # a full disk: the target runs on; the final log says what it can
            self.close()
