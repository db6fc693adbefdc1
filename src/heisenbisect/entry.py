"""The `bisect` script's first instruction: the stop signals are handled before anything loads.

Importing the command line (argparse, the command's module, and through it numpy, scipy or
Ray) takes seconds on a loaded machine. A SIGINT, SIGTERM or SIGHUP in that time, or after
the command returned while the interpreter winds down, still ends the command with 128 + the
signal and one line: no traceback, no silent death (`cli.main` and the studies handle the
signals from there on, printing the resume command once a store exists).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from heisenbisect import signals


def main() -> int:
    signals.install_at_start()
    try:
        from heisenbisect.cli import main as command_line

        code = command_line()
    except KeyboardInterrupt as exc:
        signum = signals.signal_of(exc)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not interrupt the message
        print("interrupted", file=sys.stderr)
        code = 128 + signum
    for signum in (signal.SIGINT, *signals.STOP_SIGNALS):
        signal.signal(signum, _exit_now)  # the interpreter is winding down: nothing left to clean up
    return code


def _exit_now(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)
