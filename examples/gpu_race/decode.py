"""A decode step with the story's two-stream race, on a real GPU, as a heisenbisect trial.

The main stream gathers a batch's index keys into one static buffer (what a CUDA graph is
captured with), then runs its own attention over the batch's context. The "indexer" runs on
a second stream: it waits for the gather, spends a while on its own work, then reads the
static buffer twice (to score every key, then to sum the keys). Nothing orders the main
stream's next gather after those reads: when the indexer is still reading when the main
stream rewrites the buffer for the next step, it returns scores or keys of the wrong step.
Nothing here draws a number to decide that; the verifier (``workload.py``) recomputes every
result from host data nobody overwrites.

Config from ``RACE_*`` variables (README.md); the trial protocol's ``HEISENBISECT_SEED`` and
``HEISENBISECT_RESULT``. An unknown level exits 125 ("untestable"); no CUDA device exits 125.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from workload import (
    MAX_CONTEXT,
    SESSIONS,
    STEPS,
    TOP_K,
    WINDOW,
    IndexerOutput,
    Reference,
    Workload,
    corrupted_sessions,
)

UNTESTABLE = 125  # the trial protocol's "cannot test this config"
HIDDEN = 512  # the main stream's width: one context token is HIDDEN bf16 values
SPIN_CYCLES = 24_000  # the indexer's own work before it reads, in GPU cycles: calibrated on an H200 (docs/gpu-race)


class BadConfig(ValueError):
    """A RACE_* variable has a value this program does not know."""


@dataclass(frozen=True)
class Settings:
    overlap: bool  # the indexer on its own stream (SGLANG_OPT_USE_MULTI_STREAM_OVERLAP)
    precision: str  # "bf16": index the static buffer; "fp8": a private per-step copy made on the main stream
    graph: bool  # capture each batch's decode in a CUDA graph; False: eager launches
    batch: int  # sessions decoded together
    topk: str  # "topk" (torch.topk) or "sort" (a full sort): the same answer
    pad_mb: int  # MiB allocated before every buffer: moves every address, changes no work
    spin: int  # GPU cycles of indexer work before its reads

    @classmethod
    def from_env(cls, env: dict[str, str]) -> "Settings":
        def choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
            value = env.get(name, default)
            if value not in allowed:
                raise BadConfig(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
            return value

        def number(name: str, default: str, valid) -> int:
            text = env.get(name, default)
            if not text.isdigit() or not valid(int(text)):
                raise BadConfig(f"{name}: unsupported value {text!r}")
            return int(text)

        return cls(
            overlap=choice("RACE_OVERLAP", "1", ("0", "1")) == "1",
            precision=choice("RACE_PRECISION", "bf16", ("bf16", "fp8")),
            graph=choice("RACE_GRAPH", "1", ("0", "1")) == "1",
            batch=number("RACE_BATCH", "8", lambda b: 1 <= b <= SESSIONS and SESSIONS % b == 0),
            topk=choice("RACE_TOPK", "topk", ("topk", "sort")),
            pad_mb=number("RACE_PAD_MB", "0", lambda mb: mb <= 4096),
            spin=number("RACE_SPIN", str(SPIN_CYCLES), lambda cycles: cycles <= 10**8),
        )


class Decoder:
    """The model's buffers on the GPU, and one batch's decode as a capturable function."""

    def __init__(self, settings: Settings, workload: Workload):
        self.settings = settings
        self.workload = workload
        cuda = torch.device("cuda")
        batch = settings.batch
        self.padding = torch.empty(settings.pad_mb << 20, dtype=torch.uint8, device=cuda)
        self.keys = torch.from_numpy(workload.keys).to(cuda).to(torch.bfloat16)  # the index-K cache
        self.queries = torch.from_numpy(workload.queries).to(cuda).float()
        self.head_weights = torch.from_numpy(workload.head_weights).to(cuda).float()
        generator = torch.Generator(device=cuda).manual_seed(0)
        self.context = torch.randn(batch * MAX_CONTEXT, HIDDEN, device=cuda, generator=generator).bfloat16()
        self.attention_query = torch.randn(HIDDEN, batch, device=cuda, generator=generator).bfloat16()
        self.attention = torch.empty(batch * MAX_CONTEXT, batch, dtype=torch.bfloat16, device=cuda)
        self.mlp = (torch.randn(HIDDEN, HIDDEN, device=cuda, generator=generator) / HIDDEN**0.5).bfloat16()
        self.hidden = torch.zeros(batch, HIDDEN, dtype=torch.bfloat16, device=cuda)
        self.static_keys = torch.zeros(batch, WINDOW, self.keys.shape[2], dtype=torch.bfloat16, device=cuda)
        if settings.precision == "fp8":
            self.private = torch.empty(STEPS, *self.static_keys.shape, dtype=torch.float8_e4m3fn, device=cuda)
        self.scores = torch.empty(STEPS, batch, WINDOW, device=cuda)
        self.key_sums = torch.empty(STEPS, batch, WINDOW, device=cuda)
        self.positions = torch.zeros(SESSIONS, STEPS, TOP_K, dtype=torch.int64, device=cuda)
        self.values = torch.zeros(SESSIONS, STEPS, TOP_K, device=cuda)
        self.selected = torch.zeros(SESSIONS, STEPS, TOP_K, device=cuda)
        self.side = torch.cuda.Stream()  # the indexer's stream

    def index(self, step: int, keys: torch.Tensor, queries: torch.Tensor) -> None:
        """The indexer: its own work, then two reads of ``keys`` with compute between them."""
        if self.settings.spin:
            torch.cuda._sleep(self.settings.spin)
        per_head = torch.matmul(keys.float(), queries)  # read 1: every key, every head
        self.scores[step].copy_(torch.matmul(per_head.relu_(), self.head_weights))
        torch.sum(keys.float(), dim=2, out=self.key_sums[step])  # read 2: what sparse attention reads

    def attend(self, tokens: int) -> None:
        """The main stream's own work for a step: attention over the batch's context, one MLP."""
        torch.matmul(self.context[:tokens], self.attention_query, out=self.attention[:tokens])
        pooled = self.attention[:tokens].amax(dim=0)
        self.hidden.copy_(torch.tanh((self.hidden + pooled[:, None]) @ self.mlp))

    def decode_batch(self, first: int) -> None:
        """Every step of the sessions ``first .. first + batch``, then their top-k results."""
        batch, overlap = self.settings.batch, self.settings.overlap
        tokens = int(self.workload.context[first : first + batch].sum())
        main = torch.cuda.current_stream()
        for step in range(STEPS):
            if batch > 1:
                self.static_keys.copy_(self.keys[first : first + batch, step : step + WINDOW])  # the gather
                keys = self.static_keys
                if self.settings.precision == "fp8":
                    keys = self.private[step]
                    keys.copy_(self.static_keys)  # lossless for |k| <= 8; nobody rewrites it this replay
            else:
                keys = self.keys[first : first + 1, step : step + WINDOW]  # the session's own cache
            queries = self.queries[first : first + batch, step]
            if overlap:
                gathered = torch.cuda.Event()
                gathered.record(main)
                self.side.wait_event(gathered)
                with torch.cuda.stream(self.side):
                    self.index(step, keys, queries)
            else:
                self.index(step, keys, queries)
            self.attend(tokens)
            # The bug: the next step's gather rewrites static_keys with nothing ordering it
            # after the indexer's reads of this step.
        if overlap:
            main.wait_stream(self.side)  # the join a graph capture needs; results are read after it
        self.finish(first)

    def finish(self, first: int) -> None:
        batch = self.settings.batch
        if self.settings.topk == "topk":
            values, positions = torch.topk(self.scores, TOP_K, dim=2)
        else:
            ordered, order = torch.sort(self.scores, dim=2, descending=True)
            values, positions = ordered[:, :, :TOP_K], order[:, :, :TOP_K]
        selected = torch.gather(self.key_sums, 2, positions)
        self.positions[first : first + batch].copy_(positions.transpose(0, 1))
        self.values[first : first + batch].copy_(values.transpose(0, 1))
        self.selected[first : first + batch].copy_(selected.transpose(0, 1))

    def warm_up(self) -> None:
        """One eager batch on a side stream before any capture (cuBLAS handles, workspaces)."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self.decode_batch(0)
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()

    def serve(self) -> tuple[float, float]:
        """Decode every session; returns (seconds decoding, seconds capturing graphs)."""
        decoding = capturing = 0.0
        for first in range(0, SESSIONS, self.settings.batch):
            if self.settings.graph:
                started = time.perf_counter()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    self.decode_batch(first)
                capturing += time.perf_counter() - started
                started = time.perf_counter()
                graph.replay()
            else:
                started = time.perf_counter()
                self.decode_batch(first)
            torch.cuda.synchronize()
            decoding += time.perf_counter() - started
        return decoding, capturing

    def output(self) -> IndexerOutput:
        return IndexerOutput(self.positions.cpu().numpy(), self.values.cpu().numpy(), self.selected.cpu().numpy())


def run_decoder(settings: Settings, workload: Workload, reference: Reference) -> tuple[dict, set[int]]:
    """One trial: warm up, decode, verify; the trial protocol's report and the corrupted sessions."""
    decoder = Decoder(settings, workload)
    decoder.warm_up()
    decoding, capturing = decoder.serve()
    corrupted = corrupted_sessions(reference, decoder.output())
    report = {
        "failures": len(corrupted),
        "total": SESSIONS,
        "metrics": {"tokens_per_s": SESSIONS * STEPS / decoding, "capture_s": capturing},
    }
    return report, corrupted


def main() -> int:
    try:
        settings = Settings.from_env(dict(os.environ))
    except BadConfig as exc:
        print(f"gpu_race: {exc}", file=sys.stderr)
        return UNTESTABLE
    if not torch.cuda.is_available():
        print("gpu_race: no CUDA device", file=sys.stderr)
        return UNTESTABLE
    workload = Workload.generate(int(os.environ.get("HEISENBISECT_SEED", "0")))
    report, _ = run_decoder(settings, workload, Reference.of(workload))
    line = json.dumps(report)
    if result := os.environ.get("HEISENBISECT_RESULT"):
        Path(result).write_text(line)
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
