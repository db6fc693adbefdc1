"""One driver per study folder: an OS lock held for the driver's life, and the run token it marks.

Two drivers on one study would run the same trials twice and race on the store; so the
driver holds ``fcntl.flock`` on ``<study>/.lock``, which the kernel releases however the driver
ends (``kill -9`` included), and a second driver is refused at once, naming the first's pid.

The lock file also records the holder's run token, which every process the driver starts
carries (`targets.process`). A driver whose reaper died with it (both killed at once) leaves
that token behind; the next driver to take the lock kills whatever still carries it before it
starts a trial of its own.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from pathlib import Path

from heisenbisect.errors import HeisenbisectError
from heisenbisect.markers import TOKENS_VAR, kill_marked, new_token

LOCK_NAME = ".lock"
NOT_WRITABLE = (
    "the study folder is not writable"  # a read-only folder, as the lock and store say it
)
WRITABLE = "make it writable, or give another --out"


class StudyBusyError(HeisenbisectError):
    """Another driver holds the study's lock: wait for it, stop it, or use another ``--out``."""


class StudyLock:
    """The held lock on one study folder; `release` (or process death) frees it.

    Re-entrant within a process: a study kind that opens a second store in the same folder
    (amplify's confirmation inside its search) shares the lock, released with the last holder.
    """

    def __init__(self, folder: Path, fd: int, token: str, previous_tokens: str | None):
        self.folder = folder
        self._fd: int | None = fd
        self.token = token
        self._previous_tokens = previous_tokens
        self._holders = 1

    @classmethod
    def acquire(cls, folder: Path) -> StudyLock:
        """Lock ``folder`` (created if needed), kill a dead driver's leftovers, mark this run."""
        folder = Path(folder).resolve()
        with _registry_lock:
            held = _held.get(folder)
            if held is not None:
                held._holders += 1
                return held
            lock = cls._take(folder)
            _held[folder] = lock
            return lock

    @classmethod
    def _take(cls, folder: Path) -> StudyLock:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if folder.is_dir() and not os.access(folder, os.W_OK):
                raise HeisenbisectError(
                    f"{folder}: {NOT_WRITABLE} ({exc.strerror}); {WRITABLE}"
                ) from None
            raise HeisenbisectError(
                f"{folder}: cannot create the study folder: {exc.strerror}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd).split()
            os.close(fd)
            who = f"pid {holder[0]}" if holder else "another process"
            raise StudyBusyError(
                f"{folder}: another bisect ({who}) is running this study; wait for it or stop it"
            ) from None
        fields = _read(fd).split()
        if len(fields) >= 2:
            _reap_leftovers(fields[1], fields[0])
        token = new_token()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {token}\n".encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise HeisenbisectError(
                f"{folder / LOCK_NAME}: cannot write the study lock: {exc.strerror}"
            ) from None
        previous = os.environ.get(TOKENS_VAR)
        os.environ[TOKENS_VAR] = ":".join(t for t in (previous, token) if t)
        return cls(folder, fd, token, previous)

    def release(self) -> None:
        """Unlock once the last holder releases (idempotent); later children no longer carry the token."""
        with _registry_lock:
            if self._fd is None:
                return
            self._holders -= 1
            if self._holders > 0:
                return
            _held.pop(self.folder, None)
        if self._previous_tokens is None:
            os.environ.pop(TOKENS_VAR, None)
        else:
            os.environ[TOKENS_VAR] = self._previous_tokens
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> StudyLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


_held: dict[Path, StudyLock] = {}  # this process's locks, by folder
_registry_lock = threading.Lock()


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 256, 0).decode(errors="replace")
    except OSError:
        return ""


def _reap_leftovers(token: str, pid: str) -> None:
    killed = kill_marked([token])
    if killed:
        print(
            f"killed {killed} processes left running by an earlier driver (pid {pid}) of this study",
            file=sys.stderr,
        )
