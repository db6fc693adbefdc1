"""A toy decode server with a real use-after-release race between two threads.

Run by heisenbisect as a trial (see README.md): it reads its config from ``RACE_*``
environment variables and the trial protocol's ``HEISENBISECT_SEED`` /
``HEISENBISECT_RESULT``, serves 60 sessions, verifies every indexer result against
an independent recomputation, and reports how many sessions were corrupted.
Nothing here decides to fail: a session is corrupted only when the indexer thread
really read a static batch buffer while the main thread was rewriting it for the next step.
"""

from __future__ import annotations

import os

# One BLAS thread per process: the race is between our two threads, not BLAS's pool.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json  # noqa: E402
import queue  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TextIO  # noqa: E402

import numpy as np  # noqa: E402

UNTESTABLE = 125  # the trial protocol's "cannot test this config"


def stress_setting(name: str, default: float, kind: type, low: float, high: float):
    """A stress knob from the environment (what `bisect amplify` moves); unset, the default.

    An unknown value exits 125 ("untestable") at once, as a bad RACE_* factor level does.
    """
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        print(f"cpu_race: {name} must be a{'n' if kind is int else ''} {kind.__name__} in {low}..{high}, "
              f"got {text!r}", file=sys.stderr)
        sys.exit(UNTESTABLE)
    return value


TOP_K = 16
SESSIONS = stress_setting("RACE_SESSIONS", 60, int, 1, 10000)  # sessions served per run
STEPS = stress_setting("RACE_STEPS", 8, int, 1, 1000)  # decode steps per session
WINDOW = stress_setting("RACE_WINDOW", 1024, int, TOP_K, 65536)  # index keys scored per session and step
DIM = 64
HEADS = 8  # indexer heads: score = sum_h weight_h * relu(query_h . key), as DeepSeek's indexer
HIDDEN = 256  # the main thread's own activations per session
# the main stream's kernels per step: the host waits, GIL and CPU released (RACE_WAIT_MS, default 0.5)
DEVICE_S = stress_setting("RACE_WAIT_MS", 0.5, float, 0.0, 1000.0) / 1000
KERNELS = 8  # kernels per step: one graph replay launches them all, eager launches each


class BadConfig(ValueError):
    """A RACE_* variable has a value this server does not know."""


@dataclass(frozen=True)
class Settings:
    overlap: bool  # indexer on its own thread (the alternate stream)
    precision: str  # "bf16": index the shared static batch; "fp8": a private quantized copy
    graph: bool  # replay with static buffers and no host sync; False = eager
    batch: int  # sessions decoded together
    cache: bool  # a persistent cache buffer: static batches alternate between two buffers
    topk_v2: bool  # partition-based top-k instead of a sort
    debug_sync: bool  # canary: check the static batch after every gather, and log it

    @classmethod
    def from_env(cls, env: dict[str, str]) -> "Settings":
        def flag(name: str, default: str) -> bool:
            value = env.get(name, default)
            if value not in ("0", "1"):
                raise BadConfig(f"{name} must be 0 or 1, got {value!r}")
            return value == "1"

        precision = env.get("RACE_PRECISION", "bf16")
        if precision not in ("bf16", "fp8"):
            raise BadConfig(f"RACE_PRECISION must be bf16 or fp8, got {precision!r}")
        batch_text = env.get("RACE_BATCH", "8")
        if not batch_text.isdigit() or not 1 <= int(batch_text) <= SESSIONS:
            raise BadConfig(f"RACE_BATCH must be an integer in 1..{SESSIONS}, got {batch_text!r}")
        return cls(
            overlap=flag("RACE_OVERLAP", "1"),
            precision=precision,
            graph=flag("RACE_GRAPH", "1"),
            batch=int(batch_text),
            cache=flag("RACE_CACHE", "0"),
            topk_v2=flag("RACE_TOPK_V2", "1"),
            debug_sync=flag("RACE_DEBUG_SYNC", "0"),
        )


@dataclass(frozen=True)
class Workload:
    """Every session's index keys (append-only, never overwritten) and per-step queries.

    Small integers, so every score is an exact float32 sum whatever the summation
    order: a mismatch against the reference can only come from reading wrong data.
    """

    keys: np.ndarray  # (SESSIONS, STEPS + WINDOW, DIM) float32
    queries: np.ndarray  # (SESSIONS, STEPS, DIM, HEADS) float32
    head_weights: np.ndarray  # (HEADS,) float32
    hidden: np.ndarray  # (SESSIONS, HIDDEN) float32, the main thread's own activations
    weight: np.ndarray  # (HIDDEN, HIDDEN), the main thread's one layer

    @classmethod
    def generate(cls, seed: int) -> "Workload":
        rng = np.random.default_rng(seed)
        keys = rng.integers(-8, 9, size=(SESSIONS, STEPS + WINDOW, DIM)).astype(np.float32)
        queries = rng.integers(-8, 9, size=(SESSIONS, STEPS, DIM, HEADS)).astype(np.float32)
        head_weights = rng.integers(1, 5, size=HEADS).astype(np.float32)
        hidden = rng.standard_normal((SESSIONS, HIDDEN)).astype(np.float32)
        scale = np.float32(1 / np.sqrt(HIDDEN))
        weight = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * scale
        return cls(keys, queries, head_weights, hidden, weight)

    def window(self, session: int, step: int) -> np.ndarray:
        return self.keys[session, step : step + WINDOW]

    def index_scores(self, keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """(rows, WINDOW) scores of ``keys`` (rows, WINDOW, DIM) for ``queries`` (rows, DIM, HEADS)."""
        return np.maximum(np.matmul(keys, queries), 0) @ self.head_weights


def top_k_by_sort(scores: np.ndarray) -> np.ndarray:
    """Per row, the TOP_K best positions (ties to the lower position), ascending."""
    return top_k_above(scores, np.sort(scores, axis=1)[:, -TOP_K, None])


def top_k_by_partition(scores: np.ndarray) -> np.ndarray:
    """Same answer as `top_k_by_sort`, finding each row's K-th best score by partition."""
    cut = scores.shape[1] - TOP_K
    return top_k_above(scores, np.partition(scores, cut, axis=1)[:, cut, None])


def top_k_above(scores: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Positions scoring above each row's K-th best score, then its ties in position order."""
    above = scores > threshold
    ties = scores == threshold
    room = TOP_K - above.sum(axis=1, keepdims=True)
    keep = above | (ties & (np.cumsum(ties, axis=1) <= room))
    return np.nonzero(keep)[1].reshape(len(scores), TOP_K)


def top_k_reference(scores: np.ndarray) -> np.ndarray:
    """The definition, for verification only: a stable sort by descending score."""
    return np.sort(np.argsort(-scores, kind="stable")[:TOP_K])


class StaticBatch:
    """The batch buffer a CUDA graph is captured with: one address, rewritten every step.

    ``generation`` is stamped at the start of every gather; the indexer checks it once
    before reading, which catches a batch rewritten long ago but not one rewritten mid-read.
    """

    def __init__(self, rows: int):
        self.keys = np.zeros((rows, WINDOW, DIM), np.float32)
        self.generation = -1

    def gather(self, generation: int, sessions: list[int], step: int, workload: Workload) -> np.ndarray:
        self.generation = generation
        for row, session in enumerate(sessions):
            self.keys[row] = workload.window(session, step)
        return self.keys[: len(sessions)]


@dataclass
class IndexJob:
    step: int
    sessions: list[int]
    keys: np.ndarray  # what the indexer reads: the static batch, a private copy, or a KV view
    queries: np.ndarray  # (len(sessions), DIM, HEADS), owned by the job
    batch: StaticBatch | None  # set when ``keys`` lives in the static batch
    generation: int
    done: threading.Event


@dataclass(frozen=True)
class IndexResult:
    positions: np.ndarray  # the TOP_K best window positions, ascending
    selected: np.ndarray  # the keys at those positions, summed over DIM (what attention reads)


class Indexer:
    """Scores each session's window against its query, keeps the top K and gathers their keys."""

    def __init__(self, settings: Settings, workload: Workload):
        self._workload = workload
        self._top_k = top_k_by_partition if settings.topk_v2 else top_k_by_sort
        self.results: dict[tuple[int, int], IndexResult] = {}
        self.slow_paths = 0

    def run(self, job: IndexJob) -> None:
        keys = job.keys
        if job.batch is not None and job.batch.generation != job.generation:
            # The batch was rewritten before we started: re-gather from the KV cache.
            self.slow_paths += 1
            keys = np.stack([self._workload.window(s, job.step) for s in job.sessions])
        scores = self._workload.index_scores(keys, job.queries)
        positions = self._top_k(scores)
        selected = np.take_along_axis(keys, positions[:, :, None], axis=1).sum(axis=2)
        for row, session in enumerate(job.sessions):
            self.results[(session, job.step)] = IndexResult(positions[row], selected[row])
        job.done.set()


class IndexerThread:
    """The alternate stream: runs index jobs in order on its own thread."""

    def __init__(self, indexer: Indexer):
        self._indexer = indexer
        self._jobs: queue.SimpleQueue[IndexJob | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="indexer", daemon=True)
        self._thread.start()

    def submit(self, job: IndexJob) -> None:
        self._jobs.put(job)

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            self._indexer.run(job)


def serve(settings: Settings, workload: Workload, log: TextIO) -> tuple[Indexer, float]:
    """Decode every session; returns the indexer (with its results) and the serving time."""
    indexer = Indexer(settings, workload)
    worker = IndexerThread(indexer) if settings.overlap else None
    # The cache's persistent buffer joins the pool: consecutive steps use different buffers.
    buffers = 2 if settings.cache else 1
    pool = [StaticBatch(settings.batch) for _ in range(buffers)] if settings.batch > 1 else []
    generation = 0
    started = time.perf_counter()
    for first in range(0, SESSIONS, settings.batch):
        sessions = list(range(first, min(first + settings.batch, SESSIONS)))
        hidden = workload.hidden[sessions]
        for step in range(STEPS):
            generation += 1
            batch = pool[generation % len(pool)] if pool else None
            if batch is None:
                keys = workload.window(sessions[0], step)[None]  # batch 1: the session's own cache
            else:
                keys = batch.gather(generation, sessions, step, workload)
                if settings.debug_sync:
                    canary_check(keys, sessions, step, workload, log)
            if settings.precision == "fp8":
                keys = keys.astype(np.int8)  # lossless for |k| <= 8; the indexer owns this copy
            job = IndexJob(
                step, sessions, keys, workload.queries[sessions, step],
                batch if settings.precision == "bf16" else None, generation, threading.Event(),
            )
            if worker is None:
                indexer.run(job)
            else:
                worker.submit(job)
            hidden = np.tanh(hidden @ workload.weight)  # the main thread's own work for this step
            if settings.graph:
                time.sleep(DEVICE_S)  # one replay of the captured step
            else:
                for _ in range(KERNELS):  # eager: the host dispatches each kernel and waits for it
                    time.sleep(DEVICE_S / KERNELS)
                job.done.wait()  # ... and for the indexer before the batch is rewritten
            # The bug: in graph mode nothing orders the next gather after the indexer's reads.
    if worker is not None:
        worker.close()
    return indexer, time.perf_counter() - started


def canary_check(
    keys: np.ndarray, sessions: list[int], step: int, workload: Workload, log: TextIO
) -> None:
    """The story's canary: the static batch is always pristine right after the gather."""
    for row, session in enumerate(sessions):
        if not np.array_equal(keys[row], workload.window(session, step)):
            raise AssertionError(f"static batch row {row} differs from session {session}'s keys")
    print(f"canary ok: step {step} sessions {sessions[0]}..{sessions[-1]}", file=log)


def corrupted_sessions(indexer: Indexer, workload: Workload) -> set[int]:
    """Sessions with any indexer result that differs from an independent recomputation."""
    corrupted = set()
    for session in range(SESSIONS):
        for step in range(STEPS):
            window = workload.window(session, step)
            scores = workload.index_scores(window[None], workload.queries[session, step][None])[0]
            positions = top_k_reference(scores)
            got = indexer.results[(session, step)]
            if not (
                np.array_equal(got.positions, positions)
                and np.array_equal(got.selected, window[positions].sum(axis=1))
            ):
                corrupted.add(session)
                break
    return corrupted


def main() -> int:
    try:
        settings = Settings.from_env(dict(os.environ))
    except BadConfig as exc:
        print(f"cpu_race: {exc}", file=sys.stderr)
        return UNTESTABLE
    seed = int(os.environ.get("HEISENBISECT_SEED", "0"))
    workload = Workload.generate(seed)
    indexer, elapsed = serve(settings, workload, sys.stderr)
    corrupted = corrupted_sessions(indexer, workload)
    report = {
        "failures": len(corrupted),
        "total": SESSIONS,
        "metrics": {
            "tokens_per_s": SESSIONS * STEPS / elapsed,
            "slow_paths": indexer.slow_paths,
        },
    }
    line = json.dumps(report)
    if result := os.environ.get("HEISENBISECT_RESULT"):
        Path(result).write_text(line)
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
