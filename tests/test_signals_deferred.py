"""`signals.deferred`: a signal arriving inside the block is raised once the block has ended, as the
handler in place would have raised it, so a cleanup is never cut between two of its steps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from heisenbisect import signals


def test_a_sigint_inside_the_block_is_raised_after_it_and_the_block_finishes():
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            subprocess.run([sys.executable, "-c", "pass"], check=True)  # the main thread waits here
            finished.append("after the signal")
    assert finished == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_stop_signal_is_raised_as_stopped_with_its_number():
    with signals.stopping_on_signals():
        with pytest.raises(signals.Stopped) as stopped:
            with signals.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                assert signals.received() is None  # not yet: held
        assert stopped.value.signum == signal.SIGTERM


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals.deferred():
            os.kill(os.getpid(), signal.SIGHUP)
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
