"""How a refused command reads to the tests of bad input: exit 2 and one line, no traceback."""

from __future__ import annotations

from pathlib import Path

from heisenbisect.cli import main


def one_line(capsys) -> str:
    """The one error line (warnings about the spec's budget may come before it)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1, err
    return lines[0]


def refused_alike(capsys, spec: Path, command: str, out: Path) -> str:
    """`bisect validate SPEC` and `bisect COMMAND SPEC --out OUT` both refuse ``spec`` with exit 2
    and the same one line, before the command creates ``out``; return that line."""
    assert main(["validate", str(spec)]) == 2
    refused = one_line(capsys)
    assert main([command, str(spec), "--out", str(out)]) == 2
    assert one_line(capsys) == refused
    assert not out.exists()
    return refused
