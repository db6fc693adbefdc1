"""The `bisect` script's first instruction: the stop signals are handled before anything loads.

Importing the command line (argparse, the command's module, and through it numpy or Ray) takes
seconds on a loaded machine. A SIGINT, SIGTERM or SIGHUP in that time, or after the command
returned while the interpreter winds down, still ends the command with 128 + the signal and one
line: no traceback, no silent death (`cli.main` and the studies handle the signals from there
on, printing the resume command once a store exists).

The first statements below run while this module is imported, before the rest of it: until
`main` is under way a signal ends the process at once (nothing has started that needs cleaning
up). What comes before them, the interpreter's own start, ``site`` and the script's
``import re, sys``, keeps Python's defaults (docs/reliability.md, "Signals before entry.py").
"""

from __future__ import annotations

import os
import signal


def _stop_at_start(signum: int, frame: types.FrameType | None) -> None:
    """Nothing has started that needs cleaning up: one line, and 128 + the signal."""
    try:
        os.write(2, b"interrupted\n")
    except OSError:  # the terminal is gone (a dropped SSH session's SIGHUP)
        pass
    os._exit(128 + signum)


# ignored by whoever started us (a background job's SIGINT, nohup's SIGHUP): they stay ignored
_IGNORED = frozenset(
    s
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    if signal.getsignal(s) == signal.SIG_IGN
)
for _signum in {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} - _IGNORED:
    signal.signal(_signum, _stop_at_start)

import sys  # noqa: E402  (after the handlers: they come first)
import types  # noqa: E402

from heisenbisect import signals  # noqa: E402


def main() -> int:
    try:
        signals.install_at_start()  # from here SIGTERM and SIGHUP raise `Stopped`, caught below
        if signal.getsignal(signal.SIGINT) is _stop_at_start:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # and Ctrl-C KeyboardInterrupt
        from heisenbisect.cli import main as command_line

        code = command_line()
    except KeyboardInterrupt as exc:
        signum = signals.signal_of(exc)
        signal.signal(
            signal.SIGINT, signal.SIG_IGN
        )  # a second Ctrl-C must not interrupt the message
        print("interrupted", file=sys.stderr)
        code = 128 + signum
    for signum in {signal.SIGINT, *signals.STOP_SIGNALS} - _IGNORED:
        signal.signal(
            signum, _exit_now
        )  # the interpreter is winding down: nothing left to clean up
    return code


def _exit_now(signum: int, frame: types.FrameType | None) -> None:
    os._exit(128 + signum)
