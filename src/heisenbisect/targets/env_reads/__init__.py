"""Which of a trial's env-factor variables its Python processes read (issue 21).

A factor whose variable the target never reads cannot change anything: screened, it looks
exactly like a decoy. So each trial of a command target runs with ``hook/sitecustomize.py``
first on its PYTHONPATH, watching the factors' variable names in every Python process of
the trial (see that file for what it records and how), and the trial's `Outcome` carries
what was read (`records.EnvReads`). What escapes it is in docs/refusals.md: non-Python
code (a shell wrapper, C ``getenv``), ``env -i``, ``python -I``/``-S``/``-E``, a target
that sets its own PYTHONPATH for a child.
"""

from __future__ import annotations

import functools
import os
import py_compile
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.records import EnvReads

HOOK_DIR = (
    Path(__file__).resolve().parent / "hook"
)  # holds only sitecustomize.py: all of it goes on PYTHONPATH
WATCH_VAR = "HEISENBISECT_WATCH_VARS"
READS_DIR_VAR = "HEISENBISECT_READS_DIR"
RECORDS_FILE = "reads"
KEPT_COPY_SITES = 5


def tracking_environment(
    env: Mapping[str, str], watched: Iterable[str], folder: Path
) -> dict[str, str]:
    """The variables that switch tracking on in a trial whose environment is ``env``: the hook
    before the trial's own PYTHONPATH, the names to watch, and where to write."""
    compiled_hook()
    pythonpath = env.get("PYTHONPATH")
    return {
        "PYTHONPATH": os.pathsep.join([str(HOOK_DIR), pythonpath]) if pythonpath else str(HOOK_DIR),
        WATCH_VAR: "=".join(sorted(set(watched))),  # '=' is in no variable's name
        READS_DIR_VAR: str(folder),
    }


@functools.cache
def compiled_hook() -> None:
    """Byte-compile the hook for this interpreter once, so that no trial process compiles it
    (Python reads a cached ``.pyc`` even under PYTHONDONTWRITEBYTECODE, which stops it writing
    one); a read-only install is left to the interpreter."""
    try:
        py_compile.compile(str(HOOK_DIR / "sitecustomize.py"), doraise=True)
    except (OSError, py_compile.PyCompileError):
        pass


def reads_folder(log_path: Path) -> Path:
    """A trial's records folder, beside its log; emptied before the trial, removed after it."""
    folder = log_path.with_name(log_path.name + ".reads")
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@dataclass
class Records:
    """What a trial's processes wrote: who started, who read which name, who copied the environment."""

    processes: set[str] = field(default_factory=set)
    readers: dict[str, set[str]] = field(default_factory=dict)  # name -> pids
    copies: dict[str, set[str]] = field(default_factory=dict)  # file:line -> pids

    @classmethod
    def read(cls, folder: Path) -> Records:
        records = cls()
        try:
            text = (folder / RECORDS_FILE).read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            return records
        for line in text.split("\n"):
            fields = [_unescape(f) for f in line.split("\t")]
            if len(fields) == 2 and fields[1] == "start":
                records.processes.add(fields[0])
            elif len(fields) == 3 and fields[1] == "read":
                records.readers.setdefault(fields[2], set()).add(fields[0])
            elif len(fields) == 3 and fields[1] == "copy":
                records.copies.setdefault(fields[2], set()).add(fields[0])
        return records

    def summary(self) -> EnvReads | None:
        """The outcome's record; None when no Python process started tracking."""
        if not self.processes:
            return None
        return EnvReads(
            processes=len(self.processes),
            names={name: len(pids) for name, pids in sorted(self.readers.items())},
            copied_at=tuple(sorted(self.copies))[:KEPT_COPY_SITES],
        )


def collect(folder: Path) -> EnvReads | None:
    """Read a finished trial's records, then remove its folder."""
    summary = Records.read(folder).summary()
    shutil.rmtree(folder, ignore_errors=True)
    return summary


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, chars = [], iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append({"t": "\t", "n": "\n"}.get(nxt, nxt))
        else:
            out.append(ch)
    return "".join(out)
