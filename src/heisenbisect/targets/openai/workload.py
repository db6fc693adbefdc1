"""The stress workload: concurrent multi-turn tool-calling sessions against an OpenAI-compatible API.

Each session asks for a tool in every round, feeds the tool results back, and ends at the
first bad response (see `classify`). Sessions share the server's batches, which is the point:
the story's corruption only appeared at batch size > 1.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from typing import Any, AsyncIterator, Coroutine, Literal
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.registry import VERSION_PATHS  # where servers of the known stacks say what they are

try:
    import httpx
except ImportError:  # an optional extra
    raise HeisenbisectError("the server target and `bisect stress` need httpx: pip install 'heisenbisect[serve]'") from None
from heisenbisect.targets.openai.classify import (
    CORRUPTED,
    Finding,
    SessionClass,
    classify_message,
    classify_stream,
)
from heisenbisect.targets.openai.redact import redact, secret_forms
from heisenbisect.targets.openai.streaming import (
    DeltaError,
    StreamedCompletion,
    StreamFormatError,
    parse_event_line,
)
from heisenbisect.targets.openai.side_signals import logprob_problem
from heisenbisect.targets.openai.tools import DEFAULT_SYSTEM_PROMPT, ToolSet

CANCEL_POLL_S = 0.1
EXCERPT_CHARS = 240
INFO_TIMEOUT_S = 5.0
# a response (a body, or a whole event stream) past this is an error session: a completion of
# 512 tokens is ~100 KB streamed; the cap bounds each session's memory (benchmarks/stress_memory.py)
MAX_RESPONSE_BYTES = 16 << 20
StreamMode = Literal["false", "true", "both"]


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
    request_timeout: float = 300.0  # each request's whole time, a trickling answer's too
    max_response_bytes: int = MAX_RESPONSE_BYTES
    model: str | None = None  # None = the first model the server lists
    tools: ToolSet = field(default_factory=ToolSet)
    system_prompt: str | None = None
    seed: int = 0
    stream: StreamMode = "false"  # "both": odd-numbered sessions stream, even ones do not
    api_key: str | None = field(default=None, repr=False)  # sent as a bearer token, never recorded
    verify: bool | str = True  # TLS: verify against the system CAs, not at all, or this CA file
    logprobs: bool = False  # ask for logprobs and count a NaN/infinite one as bad_logprobs (side_signals)
    version_paths: tuple[str, ...] = VERSION_PATHS  # asked in order for the server's version (its stack's)

    def streams(self, session: int) -> bool:
        return self.stream == "true" or (self.stream == "both" and session % 2 == 1)

    def secrets(self) -> tuple[str, ...]:
        """What must never be printed or written (see `redact`)."""
        return secret_forms([self.api_key])

    def evidence(self) -> dict[str, Any]:
        """The settings as they go into JSON output and logs: no API key, tools by name."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("api_key", "tools", "version_paths")}
        out["tools"] = self.tools.names
        out["api_key"] = "(set)" if self.api_key else None
        return out


@dataclass(frozen=True)
class SessionResult:
    index: int
    kind: SessionClass
    rounds_done: int
    detail: str = ""
    excerpt: str = ""  # the offending response, shortened, for the log
    stream: bool = False
    evidence: dict[str, Any] | None = None  # a bad session's last request and full response (or deltas)


@dataclass(frozen=True)
class ServerInfo:
    """What the workload learned about the server before it started."""

    url: str  # the base URL, without /v1
    model: str
    version: str | None = None
    version_source: str | None = None  # the endpoint that told the version

    def evidence(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class StressResult:
    sessions: tuple[SessionResult, ...]
    wall_s: float
    completion_tokens: int
    latencies_s: tuple[float, ...]
    server: ServerInfo | None = None

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
        if counts[SessionClass.BAD_LOGPROBS]:
            parts += f" bad_logprobs={counts[SessionClass.BAD_LOGPROBS]}"
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

    def evidence(self, settings: StressSettings) -> dict[str, Any]:
        """Everything to attach to an upstream bug report: server, settings, tallies, bad sessions."""
        return {
            "server": self.server.evidence() if self.server else None,
            "workload": settings.evidence(),
            "counts": {k.value: v for k, v in self.counts().items()},
            "corrupted": self.corrupted,
            "tally": self.tally_line(),
            "metrics": self.metrics(),
            "sessions": [
                {"index": s.index, "class": s.kind.value, "stream": s.stream, "rounds_done": s.rounds_done,
                 "detail": s.detail, **({"evidence": s.evidence} if s.evidence else {})}
                for s in self.sessions
            ],
        }


def api_base(url: str) -> str:
    """The server's base URL without ``/v1``: ``http://h:p``, ``http://h:p/``, ``http://h:p/v1`` alike.

    A prefix a proxy adds (``https://gw/sglang/v1``) is kept.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise HeisenbisectError(f"--url: expected http://HOST:PORT or https://HOST[:PORT][/v1], got {url!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def tls_verify(settings: StressSettings) -> bool | ssl.SSLContext:
    if isinstance(settings.verify, str):
        try:
            return ssl.create_default_context(cafile=settings.verify)
        except (OSError, ssl.SSLError) as exc:
            raise HeisenbisectError(f"--ca-cert {settings.verify}: cannot load: {exc}") from None
    return settings.verify


def run_stress(
    base_url: str,
    settings: StressSettings,
    cancelled: threading.Event | None = None,
    deadline_s: float | None = None,
) -> StressResult:
    """Run the workload to completion (blocking); raises StressCancelled / StressTimeout."""
    return asyncio.run(supervised(_stress(api_base(base_url), settings), cancelled, deadline_s))


async def supervised(
    workload: Coroutine[Any, Any, StressResult], cancelled: threading.Event | None, deadline_s: float | None
) -> StressResult:
    """``workload``'s result, unless ``cancelled`` is set or ``deadline_s`` passes first.

    The cancellation is asked again at every poll until the work has stopped: AnyIO (under httpx)
    can swallow a task's cancellation that lands while it opens a connection
    (agronholm/anyio#1214), and the request then waits out its whole timeout: a closed runner
    hung for 450 s and more, once in several full test runs under load."""
    work = asyncio.ensure_future(workload)
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    while not work.done():
        await asyncio.wait({work}, timeout=CANCEL_POLL_S)
        if work.done():
            break
        if (cancelled is not None and cancelled.is_set()) or (deadline and time.monotonic() >= deadline):
            while not work.done():
                work.cancel()
                await asyncio.wait({work}, timeout=CANCEL_POLL_S)
            await asyncio.gather(work, return_exceptions=True)  # its ending, whatever it was, is read
            if cancelled is not None and cancelled.is_set():
                raise StressCancelled()
            raise StressTimeout(f"stress workload ran past {deadline_s:g}s")
    return work.result()


async def _stress(base_url: str, settings: StressSettings) -> StressResult:
    concurrency = settings.concurrency or settings.sessions
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(settings.request_timeout, connect=min(30.0, settings.request_timeout))
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout, headers=headers,
                                 verify=tls_verify(settings)) as client:
        model = settings.model or await served_model(client, settings)
        version, source = await server_version(client, settings)
        server = ServerInfo(base_url, model, version, source)
        gate = asyncio.Semaphore(concurrency)
        tokens: list[int] = []
        latencies: list[float] = []
        started = time.monotonic()

        async def gated(index: int) -> SessionResult:
            async with gate:
                return await _session(client, model, settings, index, tokens, latencies)

        results = await asyncio.gather(*(gated(i) for i in range(settings.sessions)))
        wall = time.monotonic() - started
    return StressResult(tuple(results), wall, sum(tokens), tuple(latencies), server)


async def served_model(client: httpx.AsyncClient, settings: StressSettings) -> str:
    """The first model id in ``/v1/models``: what SGLang serves under ``--served-model-name``."""
    where = f"{client.base_url}/v1/models"
    try:
        status, raw = await asyncio.wait_for(_get(client, "/v1/models", settings.max_response_bytes),
                                             settings.request_timeout)
        if status == 401:
            raise HeisenbisectError(f"{where}: 401 Unauthorized: give the server's key with --api-key or OPENAI_API_KEY")
        if status != 200:
            raise HeisenbisectError(f"cannot list models at {where}: HTTP {status}")
        listed = json.loads(raw)
    except asyncio.TimeoutError:
        raise HeisenbisectError(f"cannot list models at {where}: no answer within --request-timeout "
                                f"{settings.request_timeout:g}s") from None
    except (httpx.HTTPError, ResponseTooLarge, ValueError, RecursionError) as exc:
        raise HeisenbisectError(redact(f"cannot list models at {where}: {exc}", settings.secrets())) from None
    data = listed.get("data") if isinstance(listed, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    if not isinstance(first, dict) or not isinstance(first.get("id"), str) or not first["id"]:
        got = redact(json.dumps(listed)[:120], settings.secrets())
        raise HeisenbisectError(f"{where}: expected {{\"data\": [{{\"id\": \"MODEL\", ...}}, ...]}}, got {got}; "
                                "name the model with --model")
    return first["id"]


async def server_version(client: httpx.AsyncClient, settings: StressSettings) -> tuple[str | None, str | None]:
    """(version, endpoint) from the first endpoint that reports one; (None, None) when none does."""
    for path in settings.version_paths:
        try:
            status, raw = await asyncio.wait_for(_get(client, path, settings.max_response_bytes), INFO_TIMEOUT_S)
            body = json.loads(raw) if status == 200 else None
        except (httpx.HTTPError, ResponseTooLarge, ValueError, RecursionError, asyncio.TimeoutError):
            continue
        if isinstance(body, dict) and isinstance(body.get("version"), (str, int, float)):
            return redact(str(body["version"]), settings.secrets()), path
    return None, None


class ResponseTooLarge(Exception):
    """A body or event stream ran past ``max_response_bytes``."""

    def __init__(self, cap: int):
        super().__init__(f"the response ran past {cap} bytes (--max-response-bytes, or a spec's "
                         "workload.max_response_bytes)")


class ResponseTooSlow(Exception):
    """An answer still arriving when its request's time was up."""

    def __init__(self, seconds: float):
        super().__init__(f"no whole answer within --request-timeout {seconds:g}s")


@dataclass(frozen=True)
class _Limits:
    """One request's bounds. httpx's timeout bounds each wait for a byte; ``deadline`` bounds the
    whole answer, checked as each later piece arrives, so a server trickling a byte at a time
    ends within one gap of it, and an answer that came whole is never refused for the client's
    own slowness (a starved event loop on a loaded machine)."""

    cap: int
    deadline: float
    seconds: float

    def check(self, size: int, first: bool) -> None:
        if size > self.cap:
            raise ResponseTooLarge(self.cap)
        if not first and time.monotonic() > self.deadline:
            raise ResponseTooSlow(self.seconds)


async def _capped_bytes(response: httpx.Response, limits: _Limits) -> bytes:
    """The body, read as it arrives and refused past the cap or the deadline (memory stays bounded)."""
    body = bytearray()
    async for piece in response.aiter_bytes():
        first = not body
        body += piece
        limits.check(len(body), first)
    return bytes(body)


async def _capped_lines(response: httpx.Response, limits: _Limits) -> AsyncIterator[str]:
    """The body's lines as they arrive, within the cap and the deadline of ``limits``.

    httpx's own ``aiter_lines`` holds a line until its newline comes, however long it grows.
    """
    size, line = 0, bytearray()
    async for piece in response.aiter_bytes():
        first = size == 0
        size += len(piece)
        limits.check(size, first)
        first, *rest = piece.split(b"\n")
        line += first
        for part in rest:
            yield line.decode("utf-8", errors="replace")
            line = bytearray(part)
    if line:
        yield line.decode("utf-8", errors="replace")


async def _get(client: httpx.AsyncClient, path: str, cap: int) -> tuple[int, bytes]:
    async with client.stream("GET", path) as response:
        return response.status_code, await _capped_bytes(response, _Limits(cap, float("inf"), float("inf")))


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
    stream = settings.streams(index)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": settings.system_prompt or DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": tools.prompt(rng)[1]},
    ]

    secrets = settings.secrets()

    def bad(kind: SessionClass, round_: int, detail: str, excerpt: str, evidence: dict[str, Any]) -> SessionResult:
        return SessionResult(index, kind, round_, redact(f"round {round_ + 1}: {detail}", secrets),
                             redact(excerpt, secrets)[:EXCERPT_CHARS], stream, redact(evidence, secrets))

    for round_ in range(settings.rounds):
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "tools": tools.specs,
            "tool_choice": "auto",
            "max_tokens": settings.max_tokens,
            "temperature": settings.temperature,
        }
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        if settings.logprobs:
            body["logprobs"] = True
        request = json.loads(json.dumps(body))  # this round's request as sent; messages grow later
        sent = time.monotonic()
        limits = _Limits(settings.max_response_bytes, time.monotonic() + settings.request_timeout,
                         settings.request_timeout)
        try:
            reply = await (_streamed(client, body, limits) if stream else _plain(client, body, limits))
        except httpx.HTTPError as exc:
            return bad(SessionClass.ERROR, round_, f"{type(exc).__name__}: {exc}", "", {"request": request})
        except (ResponseTooLarge, ResponseTooSlow) as exc:
            return bad(SessionClass.ERROR, round_, str(exc), "", {"request": request})
        latencies.append(time.monotonic() - sent)
        evidence = {"request": request, "response": reply.response}
        if reply.error:
            return bad(SessionClass.ERROR, round_, reply.error, reply.excerpt, evidence)
        if reply.malformed:
            return bad(SessionClass.MALFORMED, round_, reply.malformed, reply.excerpt, evidence)
        usage = reply.usage
        tokens.append(int(usage.get("completion_tokens") or 0) if isinstance(usage, dict) else 0)
        message = reply.message
        if reply.stream is not None:
            finding: Finding = classify_stream(reply.stream, tools, tool_required=True)
        else:
            finding = classify_message(message, tools, tool_required=True)
        if not finding.ok:
            return bad(finding.kind, round_, finding.detail, json.dumps(message, ensure_ascii=False), evidence)
        if settings.logprobs and (problem := logprob_problem(reply.response)):
            return bad(SessionClass.BAD_LOGPROBS, round_, problem, json.dumps(message, ensure_ascii=False), evidence)
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
    return SessionResult(index, SessionClass.OK, settings.rounds, stream=stream)


@dataclass
class _Reply:
    """One round's answer: the message (assembled, if streamed), or why there is none."""

    response: Any  # what goes into the evidence: the JSON body, the text, or every streamed chunk
    message: dict[str, Any] = field(default_factory=dict)
    usage: Any = None
    stream: StreamedCompletion | None = None
    error: str = ""  # the request failed: an error session
    malformed: str = ""  # the stream cannot be put together as a client would: a corrupted one
    excerpt: str = ""


async def _plain(client: httpx.AsyncClient, body: dict[str, Any], limits: _Limits) -> _Reply:
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        text = (await _capped_bytes(response, limits)).decode("utf-8", errors="replace")
    if response.status_code != 200:
        return _Reply({"status": response.status_code, "text": text},
                      error=f"HTTP {response.status_code}", excerpt=text)
    try:
        completion = json.loads(text)
        message = completion["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return _Reply({"status": 200, "text": text}, error="not a chat completion", excerpt=text)
    return _Reply(completion, message, completion.get("usage"))


async def _streamed(client: httpx.AsyncClient, body: dict[str, Any], limits: _Limits) -> _Reply:
    collected = StreamedCompletion()
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        if response.status_code != 200:
            text = (await _capped_bytes(response, limits)).decode(errors="replace")
            return _Reply({"status": response.status_code, "text": text},
                          error=f"HTTP {response.status_code}", excerpt=text)
        try:
            async for line in _capped_lines(response, limits):
                chunk = parse_event_line(line)
                if chunk is not None:
                    collected.add(chunk)
        except DeltaError as exc:
            return _Reply({"status": 200, "chunks": collected.chunks}, malformed=f"streamed {exc}", excerpt=str(exc))
        except StreamFormatError as exc:
            return _Reply({"status": 200, "chunks": collected.chunks}, error=f"stream: {exc}", excerpt=str(exc))
        except RecursionError:
            return _Reply({"status": 200, "chunks": collected.chunks}, error="stream: an event nested too deep")
    if not collected.chunks:
        return _Reply({"status": 200, "chunks": []}, error="stream: no chunk before the end")
    return _Reply({"status": 200, "chunks": collected.chunks, "assembled": collected.message},
                  collected.message, collected.usage, collected)


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
