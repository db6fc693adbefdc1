"""The stress workload as one blocking call, the reference pass first when its check is on: the
entry `bisect stress` and the server target use (above the workload and the reference pass,
which both build on the workload's types)."""

from __future__ import annotations

import asyncio
import functools
import threading

from heisenbisect import signals
from heisenbisect.checks import reference, registry
from heisenbisect.checks.reference_book import Book
from heisenbisect.targets.openai.reference_pass import with_reference
from heisenbisect.targets.openai.workload import (
    StressCancelled,
    StressResult,
    StressSettings,
    api_base,
    stress_workload,
    supervised,
)


def run_stress(
    base_url: str,
    settings: StressSettings,
    cancelled: threading.Event | None = None,
    deadline_s: float | None = None,
    reference_book: Book | None = None,
) -> StressResult:
    """Run the workload to completion (blocking); raises StressCancelled / StressTimeout.

    With the reference check on, each session is first answered alone (`reference_pass`);
    ``reference_book`` keeps those answers for the next run against the same launch."""
    base = api_base(base_url)
    if reference.NAME in {check.name for check, _ in registry.active(settings.checks)}:
        book = Book() if reference_book is None else reference_book
        work = with_reference(settings, book, functools.partial(stress_workload, base))
    else:
        work = stress_workload(base, settings)
    arrived: list[int] = []
    try:
        return asyncio.run(supervised(work, cancelled, deadline_s, arrived))
    except StressCancelled:
        if arrived:
            signals.stop(arrived[0])
        raise
