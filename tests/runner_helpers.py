"""Helpers shared by the runner tests (`drain` is the contract kit's)."""

from __future__ import annotations

from pathlib import Path

from heisenbisect.testing.runner_contract import drain  # noqa: F401  (re-exported for the tests)


def stdout_of(log_path: str | Path) -> str:
    """What a trial printed on stdout, from its labelled log (``--- stdout (N bytes) ---``)."""
    text = Path(log_path).read_text()
    if not text.startswith("--- stdout"):
        return text  # a log the runner wrote itself (a lost worker): no sections
    body = text.split("\n", 1)[1]
    return body.split("--- stderr (", 1)[0]
