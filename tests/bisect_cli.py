"""The `bisect` command line as tests call it: a real process, or the same parser in this one."""
from __future__ import annotations

import subprocess
import sys

from heisenbisect.cli import main, parse


def bisect(*args: str, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """``bisect ARGS`` as a user runs it: a fresh interpreter, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "heisenbisect", *args], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def bisect_here(argv: list[str]) -> int:
    """``bisect ARGV`` in this process, for tests that read its output with capsys; returns the exit code."""
    args = parse(argv)
    return args.handler(args)


def bisect_in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """``bisect ARGS`` through the `main` the script runs, in this process, its output read from
    ``capsys``: for refusals, which as processes would each pay a second or two of imports. A
    traceback fails the test; the caller sets the working folder (``monkeypatch.chdir``)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(["bisect", *args], code, captured.out, captured.err)
