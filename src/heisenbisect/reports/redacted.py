"""Every file a report writes passes through the study's redactor (`redaction`): no secret of the
spec or of the environment the trials inherited reaches report.md, results.json or paste.md."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.hypotheses.secrets import spec_redactor
from heisenbisect.redaction import MASK, Redactor, remembered


def study_redactor(spec: Spec) -> Redactor:
    """The spec's secrets, the environment's, and any the process met before."""
    return spec_redactor(spec, os.environ).merge(remembered())


def write_all(texts: Mapping[Path, str], redactor: Redactor, paste: Path | None = None) -> None:
    """Write a report's files, each rendered whole before the first is written, redacted; the
    paste (``paste``) says under its title what was redacted (`write_paste`)."""
    for path, text in texts.items():
        (write_paste if path == paste else write)(path, text, redactor)


def write(path: Path, text: str, redactor: Redactor) -> int:
    """Write ``text`` redacted to ``path``; how many secrets were replaced."""
    clean, count = redactor.count(text)
    _replace(path, clean)
    return count


def write_paste(path: Path, text: str, redactor: Redactor) -> int:
    """paste.md, redacted, saying under its title that it was and how many values (a maintainer
    reading ``<redacted:HF_TOKEN>`` knows it was the tool, not a broken copy)."""
    clean, count = redactor.count(text)
    if count:
        names = sorted({m[0][len("<redacted:") : -1] for m in MASK.finditer(clean)})
        note = (
            f"> heisenbisect redacted {count} secret value{'s' if count != 1 else ''} in this "
            f"paste (shown as `<redacted:NAME>`: {', '.join(names)})."
        )
        head, sep, rest = clean.partition("\n\n")
        clean = f"{head}\n\n{note}\n\n{rest}" if sep else f"{clean}\n\n{note}\n"
    _replace(path, clean)
    return count


def _replace(path: Path, text: str) -> None:
    """A temporary file renamed into place: a write cut short (a signal, a full disk) leaves the
    earlier file whole, never half of one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
