"""`bisect stress` keeps memory bounded whatever the session count (issue 37): the tally counts
every session and keeps only the lowest-numbered bad ones; the workload's peak allocation
barely grows from 100 to 800 sessions against the fake server."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from check_helpers import start_fake
from heisenbisect.targets.openai.tally import Requests, Tally
from heisenbisect.targets.openai.workload import SessionResult


def test_the_tally_counts_every_session_and_keeps_the_lowest_numbered_bad_ones():
    kinds = ["ok", "leak", "error"]
    sessions = [SessionResult(i, kinds[i % 3], 1, "" if i % 3 == 0 else f"bad {i}")
                for i in range(3000)]
    random.Random(7).shuffle(sessions)  # they finish in any order
    tally = Tally(keep=5)
    for session in sessions:
        tally.add(session)
    assert tally.counts == {"ok": 1000, "leak": 1000, "error": 1000} and tally.total == 3000
    assert [(s.index, s.kind) for s in tally.kept()] == [
        (1, "leak"), (2, "error"), (4, "leak"), (5, "error"), (7, "leak"), (8, "error"),
        (10, "leak"), (11, "error"), (13, "leak"), (14, "error")]


def test_latencies_past_the_cap_are_a_sample_of_that_many():
    requests = Requests(cap=100)
    for i in range(10_000):
        requests.answered(float(i))
    assert requests.seen == 10_000 and len(requests.values) == 100
    assert max(requests.values) > 5_000  # a sample of all of them, not the first hundred


@pytest.fixture(scope="module")
def fake_url():
    server = start_fake("--fake-leak-rate", "1", latency="0")
    try:
        yield server.url
    finally:
        server.stop()


PEAKS = """
import gc, json, sys, tracemalloc
from heisenbisect.targets.openai.stress import run_stress
from heisenbisect.targets.openai.workload import StressSettings
out = []
for sessions in map(int, sys.argv[2:]):
    settings = StressSettings(sessions=sessions, rounds=1, concurrency=16, max_tokens=16,
                              request_timeout=120.0)
    gc.collect()
    tracemalloc.start()
    result = run_stress(sys.argv[1], settings)
    out.append([tracemalloc.get_traced_memory()[1], dict(result.counts()),
                [s.index for s in result.kept]])
    tracemalloc.stop()
print(json.dumps(out))
"""


def peaks(url: str, *sessions: int) -> list:
    """[peak traced bytes, counts, kept indices] of each stress, run one after another in a fresh
    Python: under pytest its import hook allocates during the run (httpcore retries a missing
    module's import at each closed connection)."""
    done = subprocess.run([sys.executable, "-c", PEAKS, url, *map(str, sessions)],
                          capture_output=True, text=True, timeout=500, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_peak_memory_barely_grows_with_the_session_count(fake_url):
    """Every session is bad (a leaked token), with its request and response as evidence. Before,
    each session was a task from the start and every result was kept: 2.7 MB at 100 sessions,
    19.6 MB at 800; now the peak follows the sessions in flight (16 here) and the 20 kept."""
    # the first run allocates what is allocated once (imports, caches): not counted
    _, (small, few, _), (large, many, kept) = peaks(fake_url, 100, 100, 800)
    assert (few, many, kept) == ({"leak": 100}, {"leak": 800}, list(range(20)))
    assert large < 2 * small, f"peak {small / 1e6:.1f} MB at 100 sessions, {large / 1e6:.1f} MB at 800"
