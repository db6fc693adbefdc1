"""A cancelled stress workload stops even when a library swallows the cancellation: AnyIO can eat a
task's cancel that lands while it opens a connection (agronholm/anyio#1214), and the request then
waits out its timeout; `bisect run`'s Ctrl-C must not wait with it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from heisenbisect.targets.openai.workload import StressCancelled, StressTimeout, supervised


async def swallows_one_cancel(seconds: float) -> str:
    """Like a connect inside AnyIO's bug: the first cancellation is eaten, the wait goes on."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        pass  # swallowed: the task carries on as if nothing had been asked
    await asyncio.sleep(seconds)
    return "ran to the end"


def test_a_swallowed_cancellation_is_asked_again():
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(StressCancelled):  # raised once the work stopped: it could only run to its end in 1 200 s
        asyncio.run(supervised(swallows_one_cancel(600), cancelled, None))


def test_a_deadline_stops_a_workload_that_swallowed_its_first_cancellation():
    with pytest.raises(StressTimeout, match="ran past 0.2s"):
        asyncio.run(supervised(swallows_one_cancel(600), None, 0.2))


def test_a_workload_left_alone_gives_its_result():
    assert asyncio.run(supervised(swallows_one_cancel(0.01), threading.Event(), None)) == "ran to the end"
