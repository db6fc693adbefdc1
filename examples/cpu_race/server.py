"""A toy decode server with a real use-after-release race between two threads.

Run by heisenbisect as a trial (see README.md): it reads its config from ``RACE_*``
environment variables and the trial protocol's ``HEISENBISECT_SEED`` /
``HEISENBISECT_RESULT``, serves 60 sessions, verifies every indexer result against
an independent recomputation, and reports how many sessions were corrupted.
Nothing here decides to fail: a session is corrupted only when the indexer thread
really read a staging buffer that the main thread had already handed to the next batch.
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

import numpy as np  # noqa: E402

SESSIONS = 60
STEPS = 8  # decode steps per session
WINDOW = int(os.environ.get("CAL_WINDOW", 1024))
DIM = 64
TOP_K = 16
HIDDEN = int(os.environ.get("CAL_HIDDEN", 1024))
LAYERS = int(os.environ.get("CAL_LAYERS", 1))
UNTESTABLE = 125  # the trial protocol's "cannot test this config"


class BadConfig(ValueError):
    """A RACE_* variable has a value this server does not know."""


@dataclass(frozen=True)
class Settings:
    overlap: bool  # indexer on its own thread (the alternate stream)
    precision: str  # "bf16": index the shared staging batch; "fp8": a private quantized copy
    graph: bool  # replay with static buffers and no host sync; False = eager
    batch: int  # sessions decoded together
    cache: bool  # the indexer snapshots the batch into its persistent cache first
    topk_v2: bool  # partition-based top-k instead of a sort
    debug_sync: bool  # canary: check the staging batch after every gather, and log it

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
    queries: np.ndarray  # (SESSIONS, STEPS, DIM) float32
    hidden: np.ndarray  # (SESSIONS, HIDDEN) float32, the main thread's own activations
    weights: tuple[np.ndarray, ...]  # LAYERS of (HIDDEN, HIDDEN)

    @classmethod
    def generate(cls, seed: int) -> "Workload":
        rng = np.random.default_rng(seed)
        keys = rng.integers(-8, 9, size=(SESSIONS, STEPS + WINDOW, DIM)).astype(np.float32)
        queries = rng.integers(-8, 9, size=(SESSIONS, STEPS, DIM)).astype(np.float32)
        hidden = rng.standard_normal((SESSIONS, HIDDEN)).astype(np.float32)
        scale = np.float32(1 / np.sqrt(HIDDEN))
        weights = tuple(
            rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) * scale for _ in range(LAYERS)
        )
        return cls(keys, queries, hidden, weights)

    def window(self, session: int, step: int) -> np.ndarray:
        return self.keys[session, step : step + WINDOW]


def top_k_sort(scores: np.ndarray) -> np.ndarray:
    """The K best positions, ties to the lower position, in position order."""
    return np.sort(np.argsort(-scores, kind="stable")[:TOP_K])


def top_k_partition(scores: np.ndarray) -> np.ndarray:
    """Same answer as `top_k_sort`, by partition around the K-th best score."""
    threshold = np.partition(scores, scores.size - TOP_K)[scores.size - TOP_K]
    above = np.flatnonzero(scores > threshold)
    ties = np.flatnonzero(scores == threshold)[: TOP_K - above.size]
    return np.sort(np.concatenate([above, ties]))


class StaticBatch:
    """The batch buffer a CUDA graph is captured with: one address, rewritten every step.

    ``generation`` is stamped at the start of every gather; the indexer checks it once
    before reading, which catches a batch rewritten long ago but not one rewritten mid-read.
    """

    def __init__(self, rows: int):
        self.keys = np.zeros((rows, WINDOW, DIM), np.float32)
        self.generation = -1

    def gather(self, generation: int, sessions: list[int], step: int, workload: "Workload") -> np.ndarray:
        self.generation = generation
        for row, session in enumerate(sessions):
            self.keys[row] = workload.window(session, step)
        return self.keys[: len(sessions)]


@dataclass
class IndexJob:
    step: int
    sessions: list[int]
    keys: np.ndarray  # what the indexer reads: the static batch, a private copy, or a KV view
    queries: np.ndarray  # (len(sessions), DIM), owned by the job
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
        self._top_k = top_k_partition if settings.topk_v2 else top_k_sort
        self._cache = np.zeros((settings.batch, WINDOW, DIM), np.float32) if settings.cache else None
        self.results: dict[tuple[int, int], IndexResult] = {}
        self.slow_paths = 0

    def run(self, job: IndexJob) -> None:
        keys = job.keys
        if job.batch is not None and job.batch.generation != job.generation:
            # The batch was rewritten before we started: re-gather from the KV cache.
            self.slow_paths += 1
            keys = np.stack([self._workload.window(s, job.step) for s in job.sessions])
        elif self._cache is not None:
            keys = self._cache[: len(job.sessions)]
            np.copyto(keys, job.keys)
        scores = np.matmul(keys, job.queries[:, :, None])[:, :, 0]
        for row, session in enumerate(job.sessions):
            positions = self._top_k(scores[row])
            selected = keys[row, positions].sum(axis=1)
            self.results[(session, job.step)] = IndexResult(positions, selected)
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


def serve(settings: Settings, workload: Workload, log) -> tuple[Indexer, float]:
    """Decode every session; returns the indexer (with its results) and the serving time."""
    indexer = Indexer(settings, workload)
    worker = IndexerThread(indexer) if settings.overlap else None
    batch = StaticBatch(settings.batch) if settings.batch > 1 else None
    generation = 0
    started = time.perf_counter()
    for first in range(0, SESSIONS, settings.batch):
        sessions = list(range(first, min(first + settings.batch, SESSIONS)))
        hidden = workload.hidden[sessions]
        for step in range(STEPS):
            generation += 1
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
            for weight in workload.weights:  # the main stream's own work for this step
                hidden = np.tanh(hidden @ weight)
            if not settings.graph:
                job.done.wait()  # eager: the host synchronizes before the batch is rewritten
            # The bug: in graph mode nothing orders the next gather after the indexer's reads.
    if worker is not None:
        worker.close()
    return indexer, time.perf_counter() - started


def canary_check(keys: np.ndarray, sessions: list[int], step: int, workload: Workload, log) -> None:
    """The story's canary: the static batch is always pristine right after the gather."""
    for row, session in enumerate(sessions):
        if not np.array_equal(keys[row], workload.window(session, step)):
            raise AssertionError(f"staging row {row} differs from session {session}'s keys")
    print(f"canary ok: step {step} sessions {sessions[0]}..{sessions[-1]}", file=log)


def corrupted_sessions(indexer: Indexer, workload: Workload) -> set[int]:
    """Sessions with any indexer result that differs from an independent recomputation."""
    corrupted = set()
    for session in range(SESSIONS):
        for step in range(STEPS):
            window = workload.window(session, step)
            positions = top_k_sort(window @ workload.queries[session, step])
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
    if "CAL_SWITCH" in os.environ:
        sys.setswitchinterval(float(os.environ["CAL_SWITCH"]))
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
