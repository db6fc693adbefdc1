"""The stress workload: concurrent multi-turn tool-calling sessions against an OpenAI-compatible API.

Each session asks for a tool in every round, feeds the tool results back, and ends at the
first bad response (see `classify`). Sessions share the server's batches, which is the point:
the story's corruption only appeared at batch size > 1.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heisenbisect.errors import HeisenbisectError

try:
    import httpx
except ImportError:  # an optional extra
    raise HeisenbisectError("the SGLang target and `bisect stress` need httpx: pip install 'heisenbisect[sglang]'") from None
from heisenbisect.runners.sglang.classify import (
    CORRUPTED,
    Finding,
    SessionClass,
    classify_message,
)
from heisenbisect.runners.sglang.tools import DEFAULT_SYSTEM_PROMPT, ToolSet

CANCEL_POLL_S = 0.1
EXCERPT_CHARS = 240


class StressCancelled(Exception):
    """The caller's cancel flag was set while sessions were running."""


class StressTimeout(Exception):
    """The whole workload ran past its deadline."""


@dataclass(frozen=True)
class StressSettings:
    sessions: int = 60
    rounds: int = 4
    concurrency: int | None = None  # sessions in flight at once; None = all of them
    max_tokens: int = 512
    temperature: float = 0.0
    request_timeout: float = 300.0
    model: str | None = None  # None = the first model the server lists
    tools: ToolSet = field(default_factory=ToolSet)
    system_prompt: str | None = None
    seed: int = 0


@dataclass(frozen=True)
class SessionResult:
    index: int
    kind: SessionClass
    rounds_done: int
    detail: str = ""
    excerpt: str = ""  # the offending response, shortened, for the log


@dataclass(frozen=True)
class StressResult:
    sessions: tuple[SessionResult, ...]
    wall_s: float
    completion_tokens: int
    latencies_s: tuple[float, ...]

    def counts(self) -> Counter[SessionClass]:
        return Counter(s.kind for s in self.sessions)

    @property
    def corrupted(self) -> int:
        return sum(1 for s in self.sessions if s.kind in CORRUPTED)

    @property
    def errors(self) -> int:
        return self.counts()[SessionClass.ERROR]

    def tally_line(self) -> str:
        counts, n = self.counts(), len(self.sessions)
        rate = 100.0 * self.corrupted / n if n else 0.0
        parts = " ".join(f"{k.value}={counts[k]}" for k in (
            SessionClass.LEAK, SessionClass.MALFORMED, SessionClass.NO_TOOL, SessionClass.ERROR, SessionClass.OK))
        return f"CORRUPTION sessions: {self.corrupted}/{n} = {rate:.1f}% ({parts})"

    def metrics(self) -> dict[str, float]:
        """Throughput, latency percentiles (absent when no request answered) and class counts."""
        counts = self.counts()
        metrics = {
            "tokens_per_s": self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0,
            "requests": float(len(self.latencies_s)),
            "wall_s": self.wall_s,
            **{f"sessions_{k.value}": float(counts[k]) for k in SessionClass},
        }
        if self.latencies_s:
            p50, p95 = np.percentile(np.asarray(self.latencies_s), [50, 95])
            metrics.update(latency_p50_s=float(p50), latency_p95_s=float(p95))
        return metrics


def run_stress(
    base_url: str,
    settings: StressSettings,
    cancelled: threading.Event | None = None,
    deadline_s: float | None = None,
) -> StressResult:
    """Run the workload to completion (blocking); raises StressCancelled / StressTimeout."""
    return asyncio.run(_supervised(base_url.rstrip("/"), settings, cancelled, deadline_s))


async def _supervised(
    base_url: str, settings: StressSettings, cancelled: threading.Event | None, deadline_s: float | None
) -> StressResult:
    work = asyncio.ensure_future(_stress(base_url, settings))
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    while not work.done():
        await asyncio.wait({work}, timeout=CANCEL_POLL_S)
        if work.done():
            break
        if (cancelled is not None and cancelled.is_set()) or (deadline and time.monotonic() >= deadline):
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            if cancelled is not None and cancelled.is_set():
                raise StressCancelled()
            raise StressTimeout(f"stress workload ran past {deadline_s:g}s")
    return work.result()


async def _stress(base_url: str, settings: StressSettings) -> StressResult:
    concurrency = settings.concurrency or settings.sessions
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(settings.request_timeout, connect=min(30.0, settings.request_timeout))
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout) as client:
        model = settings.model or await served_model(client)
        gate = asyncio.Semaphore(concurrency)
        tokens: list[int] = []
        latencies: list[float] = []
        started = time.monotonic()

        async def gated(index: int) -> SessionResult:
            async with gate:
                return await _session(client, model, settings, index, tokens, latencies)

        results = await asyncio.gather(*(gated(i) for i in range(settings.sessions)))
        wall = time.monotonic() - started
    return StressResult(tuple(results), wall, sum(tokens), tuple(latencies))


async def served_model(client: httpx.AsyncClient) -> str:
    """The first model id in ``/v1/models``: what SGLang serves under ``--served-model-name``."""
    try:
        response = await client.get("/v1/models")
        response.raise_for_status()
        return str(response.json()["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
        raise HeisenbisectError(f"cannot list models at {client.base_url}/v1/models: {exc}") from None


async def _session(
    client: httpx.AsyncClient,
    model: str,
    settings: StressSettings,
    index: int,
    tokens: list[int],
    latencies: list[float],
) -> SessionResult:
    rng = random.Random(settings.seed * 1_000_003 + index)
    tools = settings.tools
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": settings.system_prompt or DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": tools.prompt(rng)[1]},
    ]
    for round_ in range(settings.rounds):
        body = {
            "model": model,
            "messages": messages,
            "tools": tools.specs,
            "tool_choice": "auto",
            "max_tokens": settings.max_tokens,
            "temperature": settings.temperature,
        }
        sent = time.monotonic()
        try:
            response = await client.post("/v1/chat/completions", json=body)
        except httpx.HTTPError as exc:
            return SessionResult(index, SessionClass.ERROR, round_, f"round {round_ + 1}: {type(exc).__name__}: {exc}")
        latencies.append(time.monotonic() - sent)
        if response.status_code != 200:
            return SessionResult(
                index, SessionClass.ERROR, round_, f"round {round_ + 1}: HTTP {response.status_code}",
                response.text[:EXCERPT_CHARS],
            )
        try:
            completion = response.json()
            message = completion["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
        except (ValueError, KeyError, IndexError, TypeError):
            return SessionResult(
                index, SessionClass.ERROR, round_, f"round {round_ + 1}: not a chat completion",
                response.text[:EXCERPT_CHARS],
            )
        usage = completion.get("usage")
        tokens.append(int(usage.get("completion_tokens") or 0) if isinstance(usage, dict) else 0)
        finding: Finding = classify_message(message, tools, tool_required=True)
        if not finding.ok:
            excerpt = json.dumps(message, ensure_ascii=False)[:EXCERPT_CHARS]
            return SessionResult(index, finding.kind, round_, f"round {round_ + 1}: {finding.detail}", excerpt)
        messages.append(_assistant_turn(message))
        for call in message["tool_calls"]:
            arguments = call["function"]["arguments"]
            arguments = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else arguments
            call_id = str(call.get("id") or f"call_{round_}")
            messages.append({
                "role": "tool",
                "tool_call_id": call_id,
                "content": tools.result(call["function"]["name"], arguments or {}, call_id),
            })
        if round_ + 1 < settings.rounds:
            messages.append({"role": "user", "content": tools.prompt(rng)[1]})
    return SessionResult(index, SessionClass.OK, settings.rounds)


def _assistant_turn(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant message as it goes back into the conversation (ids kept, extras dropped)."""
    calls = []
    for i, call in enumerate(message["tool_calls"]):
        function = call["function"]
        arguments = function["arguments"]
        calls.append({
            "id": str(call.get("id") or f"call_{i}"),
            "type": "function",
            "function": {
                "name": function["name"],
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        })
    return {"role": "assistant", "content": message.get("content") or "", "tool_calls": calls}
