"""SIGTERM and SIGHUP stop a command the way Ctrl-C does, then it exits 128 + the signal.

Slurm's scancel, Kubernetes, ``timeout`` and a dropped SSH session send SIGTERM or SIGHUP, not
SIGINT. Both are turned into `Stopped`, a `KeyboardInterrupt`, raised in the main thread, so
every path that already handles Ctrl-C (trials stopped with their trees, worktrees removed, the
store closed, the resume command printed) handles them too. Once one arrived, further ones are
only noted, so the cleanup they asked for is not itself interrupted. A signal the process was
started with ignored stays ignored: ``nohup bisect run`` survives the hangup it asked to.

``ray.init`` installs its own SIGTERM handler (``sys.exit``) and Ray's core worker a native one
that prints a stack dump; `reinstall` puts ours back after Ray connects.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The command was asked to stop by ``signum``."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_active = False  # inside `stopping_on_signals`
_stopping: int | None = None  # the stop signal that arrived; later ones are only noted


@contextlib.contextmanager
def stopping_on_signals() -> Iterator[None]:
    """Within this block, SIGTERM and SIGHUP raise `Stopped` (main thread only; elsewhere a no-op)."""
    global _active, _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    _active, _stopping = True, None
    _install()
    try:
        yield
    finally:
        _active = False
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within this block SIGINT, SIGTERM and SIGHUP are held, then raised as they would have been
    once it ends: a cleanup that must finish (a pool's worktrees removed) is not cut short between
    two of its steps. A signal ignored or left to the system's default keeps that. Main thread only;
    elsewhere a no-op (Python runs signal handlers in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    held = {
        signum: handler
        for signum in (signal.SIGINT, *STOP_SIGNALS)
        if callable(handler := signal.getsignal(signum))
    }
    for signum in held:
        signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)
        if arrived:
            signal.raise_signal(arrived[0])


def install_at_start() -> None:
    """The `bisect` script's first act (`heisenbisect.entry`): SIGTERM and SIGHUP raise `Stopped`
    from here on, so one arriving while the command line is still importing ends it as Ctrl-C does."""
    global _stopping
    _stopping = None
    _install()


def reinstall() -> None:
    """Take the signals back from a library that replaced our handlers (Ray), if we had them."""
    if _active and threading.current_thread() is threading.main_thread():
        _install()


def signal_of(interrupt: KeyboardInterrupt) -> int:
    """The signal behind an interrupt: its own for `Stopped`, else the stop signal that arrived
    (a library may re-raise `Stopped` as a plain KeyboardInterrupt, as Ray's ``wait`` does), else SIGINT."""
    if isinstance(interrupt, Stopped):
        return interrupt.signum
    return _stopping or signal.SIGINT


def received() -> int | None:
    """The stop signal that arrived in the current command, if one did."""
    return _stopping


def ours(signum: int) -> bool:
    """Whether ``signum`` is handled by `Stopped` right now (an event loop may take it over)."""
    return signal.getsignal(signum) is _handle


def stop(signum: int) -> None:
    """Raise `Stopped` for a signal that was caught elsewhere (an event loop's handler), as
    ours would have raised it."""
    global _stopping
    _stopping = _stopping or signum
    raise Stopped(signum)


def _install() -> None:
    for signum in STOP_SIGNALS:
        if (
            signal.getsignal(signum) != signal.SIG_IGN
        ):  # ignored by whoever started us (nohup's SIGHUP): stays so
            signal.signal(signum, _handle)


def _handle(signum: int, frame: FrameType | None) -> None:
    global _stopping
    if _stopping:
        return  # already stopping: let the cleanup finish
    _stopping = signum
    raise Stopped(signum)
