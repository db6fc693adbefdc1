"""The gpu_race workload and its verifier, in numpy alone (no torch: CI checks them without a GPU).

The data are small integers, so every score the indexer computes on the GPU is an exact
float32 sum whatever the order of summation: a mismatch against this module's recomputation
can only come from the indexer having read wrong data. The arrays here live on the host and
nobody overwrites them; the GPU gets copies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SESSIONS = 64
STEPS = 8  # decode steps per session
WINDOW = 2048  # index keys the indexer scores per session and step
DIM = 64  # index-key width
HEADS = 8  # indexer heads: score = sum_h w_h * relu(q_h . key), as DeepSeek's lightning indexer
TOP_K = 16
MIN_CONTEXT, MAX_CONTEXT = 512, 32768  # each session's context (what the main stream's attention reads)


@dataclass(frozen=True)
class Workload:
    """Every session's index keys (append-only, never rewritten), queries and context length."""

    keys: np.ndarray  # (SESSIONS, STEPS + WINDOW, DIM) int8 in -8..8
    queries: np.ndarray  # (SESSIONS, STEPS, DIM, HEADS) int8 in -8..8
    head_weights: np.ndarray  # (HEADS,) int8 in 1..4
    context: np.ndarray  # (SESSIONS,) int64, log-uniform in MIN_CONTEXT..MAX_CONTEXT

    @classmethod
    def generate(cls, seed: int) -> "Workload":
        rng = np.random.default_rng(seed)
        keys = rng.integers(-8, 9, size=(SESSIONS, STEPS + WINDOW, DIM), dtype=np.int8)
        queries = rng.integers(-8, 9, size=(SESSIONS, STEPS, DIM, HEADS), dtype=np.int8)
        head_weights = rng.integers(1, 5, size=HEADS, dtype=np.int8)
        log_context = rng.uniform(np.log(MIN_CONTEXT), np.log(MAX_CONTEXT), size=SESSIONS)
        return cls(keys, queries, head_weights, np.exp(log_context).astype(np.int64))

    def windows(self, step: int) -> np.ndarray:
        """(SESSIONS, WINDOW, DIM) float32: every session's keys that decode step ``step`` indexes."""
        return self.keys[:, step : step + WINDOW].astype(np.float32)


@dataclass(frozen=True)
class IndexerOutput:
    """What the GPU's indexer returned for every (session, step)."""

    positions: np.ndarray  # (SESSIONS, STEPS, TOP_K) window positions it selected
    values: np.ndarray  # (SESSIONS, STEPS, TOP_K) their scores, as it computed them
    selected: np.ndarray  # (SESSIONS, STEPS, TOP_K) the selected keys summed over DIM, as it read them


@dataclass(frozen=True)
class Reference:
    """Scores and key sums of every (session, step, position), recomputed from the pristine keys."""

    scores: np.ndarray  # (SESSIONS, STEPS, WINDOW) float32, exact
    key_sums: np.ndarray  # (SESSIONS, STEPS, WINDOW) float32, exact
    top_values: np.ndarray  # (SESSIONS, STEPS, TOP_K) the K best scores, descending

    @classmethod
    def of(cls, workload: Workload) -> "Reference":
        keys = workload.keys.astype(np.float32)  # (SESSIONS, STEPS + WINDOW, DIM)
        # one product per session for every step's queries at once: every key against every head
        queries = workload.queries.astype(np.float32).transpose(0, 2, 1, 3).reshape(SESSIONS, DIM, STEPS * HEADS)
        per_head = np.matmul(keys, queries).reshape(SESSIONS, STEPS + WINDOW, STEPS, HEADS)
        weights = workload.head_weights.astype(np.float32)
        sums = keys.sum(axis=2)
        scores = np.empty((SESSIONS, STEPS, WINDOW), np.float32)
        key_sums = np.empty((SESSIONS, STEPS, WINDOW), np.float32)
        for step in range(STEPS):
            scores[:, step] = np.maximum(per_head[:, step : step + WINDOW, step], 0) @ weights
            key_sums[:, step] = sums[:, step : step + WINDOW]
        top_values = -np.sort(-scores, axis=2)[:, :, :TOP_K]
        return cls(scores, key_sums, top_values)


def corrupted_sessions(reference: Reference, output: IndexerOutput) -> set[int]:
    """Sessions with any step whose indexer result differs from the recomputation.

    A step is right when its positions are distinct, their scores are the K best (as a
    multiset, so ties may pick either position), the returned scores are the pristine
    scores at those positions, and the returned key sums are the pristine keys' sums there.
    """
    positions = output.positions.astype(np.int64)
    in_range = (positions >= 0) & (positions < WINDOW)
    safe = np.where(in_range, positions, 0)
    pristine_scores = np.take_along_axis(reference.scores, safe, axis=2)
    pristine_sums = np.take_along_axis(reference.key_sums, safe, axis=2)
    ordered = np.sort(positions, axis=2)
    distinct = (np.diff(ordered, axis=2) != 0).all(axis=2)
    right = (
        in_range.all(axis=2)
        & distinct
        & (-np.sort(-output.values, axis=2) == reference.top_values).all(axis=2)
        & (output.values == pristine_scores).all(axis=2)
        & (output.selected == pristine_sums).all(axis=2)
    )
    return {int(s) for s in np.nonzero(~right.all(axis=1))[0]}


def group_tokens(workload: Workload, batch: int) -> list[int]:
    """Context tokens the main stream's attention reads per decode step, for each batch of sessions."""
    return [int(workload.context[first : first + batch].sum()) for first in range(0, SESSIONS, batch)]
