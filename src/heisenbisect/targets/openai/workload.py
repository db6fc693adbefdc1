"""The stress workload: concurrent multi-turn tool-calling sessions against an OpenAI-compatible API.

Each session asks for a tool in every round, feeds the tool results back, and ends at the
first bad response: the first finding of the checks the settings turn on (`heisenbisect.checks`),
put each round's request and reply. Sessions share the server's batches, which is the point:
the story's corruption only appeared at batch size > 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import ssl
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from heisenbisect import signals
from heisenbisect.checks import reference, registry
from heisenbisect.checks.base import Check, CheckSettings, Finding, Reply, State
from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.registry import (
    VERSION_PATHS,
)  # where servers of the known stacks say what they are

try:
    import httpx
except ImportError:  # an optional extra
    raise HeisenbisectError(
        "the server target and `bisect stress` need httpx: pip install 'heisenbisect[serve]'"
    ) from None
from heisenbisect.targets.openai.redact import redact, secret_forms
from heisenbisect.targets.openai.streaming import (
    DeltaError,
    StreamedCompletion,
    StreamFormatError,
    parse_event_line,
)
from heisenbisect.targets.openai.tally import Requests, Tally
from heisenbisect.targets.openai.tools import DEFAULT_SYSTEM_PROMPT, ToolSet
from heisenbisect.user_text import capped

CANCEL_POLL_S = 0.1
EXCERPT_CHARS = 240
INFO_TIMEOUT_S = 5.0
# a response (a body, or a whole event stream) past this is an error session: a completion of
# 512 tokens is ~100 KB streamed; the cap bounds each session's memory (benchmarks/stress_memory.py)
MAX_RESPONSE_BYTES = 16 << 20
# sessions in flight when --concurrency is not given: each holds a connection and its messages
# (benchmarks/stress_sessions_memory.py); a --concurrency given is taken as it is
MAX_IN_FLIGHT = 1024
POOL = 64  # connections per HTTP client: more sessions in flight share several clients
StreamMode = Literal["false", "true", "both"]


class StressCancelled(Exception):
    """The caller's cancel flag was set while sessions were running."""


class StressTimeout(Exception):
    """The whole workload ran past its deadline."""


@dataclass(frozen=True)
class StressSettings:
    sessions: int = 60
    rounds: int = 4
    concurrency: int | None = None  # sessions in flight at once; None = all, up to MAX_IN_FLIGHT
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
    # each check's settings by its name; a check left out runs at its defaults (`checks.registry`)
    checks: Mapping[str, CheckSettings] = field(default_factory=dict)
    version_paths: tuple[str, ...] = (
        VERSION_PATHS  # asked in order for the server's version (its stack's)
    )

    def streams(self, session: int) -> bool:
        return self.stream == "true" or (self.stream == "both" and session % 2 == 1)

    def secrets(self) -> tuple[str, ...]:
        """What must never be printed or written (see `redact`)."""
        return secret_forms([self.api_key])

    def evidence(self) -> dict[str, Any]:
        """The settings as they go into JSON output and logs: no API key, tools by name."""
        out = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("api_key", "tools", "checks", "version_paths")
        }
        out["tools"] = self.tools.names
        out["checks"] = [check.name for check, _ in registry.active(self.checks)]
        out["api_key"] = "(set)" if self.api_key else None
        return out


@dataclass(frozen=True)
class SessionResult:
    index: int
    kind: str  # a session class: `checks.registry.session_classes`
    rounds_done: int
    detail: str = ""
    excerpt: str = ""  # the offending response, shortened, for the log
    stream: bool = False
    evidence: dict[str, Any] | None = (
        None  # a bad session's last request and full response (or deltas)
    )


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
    """A pass's sessions as `tally.Tally` keeps them: ``tally`` counts every session by class,
    ``kept`` holds the lowest-numbered bad sessions of each class (the examples), ``total`` all."""

    kept: tuple[SessionResult, ...]
    tally: Counter[str]
    wall_s: float
    completion_tokens: int
    requests: int  # answered requests
    latencies_s: tuple[float, ...]  # every answered request's, or a uniform sample past `LATENCIES`
    server: ServerInfo | None = None
    reference: Mapping[str, float] = field(default_factory=dict)  # `reference_pass`'s metrics
    check_metrics: Mapping[str, float] = field(default_factory=dict)  # `Check.metrics`, by name

    @property
    def total(self) -> int:
        return sum(self.tally.values())

    def counts(self) -> Counter[str]:
        return Counter(self.tally)

    @property
    def corrupted(self) -> int:
        corrupted = registry.corrupted_classes()
        return sum(n for kind, n in self.tally.items() if kind in corrupted)

    @property
    def errors(self) -> int:
        return self.tally[registry.ERROR]

    def tally_line(self) -> str:
        n = self.total
        rate = 100.0 * self.corrupted / n if n else 0.0
        parts = " ".join(f"{kind}={count}" for kind, count in registry.tallied(self.counts()))
        return f"CORRUPTION sessions: {self.corrupted}/{n} = {rate:.1f}% ({parts})"

    def metrics(self) -> dict[str, float]:
        """Throughput, latency percentiles (absent when no request answered) and class counts."""
        counts = self.counts()
        metrics = {
            "tokens_per_s": self.completion_tokens / self.wall_s if self.wall_s > 0 else 0.0,
            "requests": float(self.requests),
            "wall_s": self.wall_s,
            **{f"sessions_{kind}": float(counts[kind]) for kind in registry.session_classes()},
            **self.reference,
            **self.check_metrics,
        }
        if self.latencies_s:
            p50, p95 = np.percentile(np.asarray(self.latencies_s), [50, 95])
            metrics.update(latency_p50_s=float(p50), latency_p95_s=float(p95))
        return metrics

    def evidence(self, settings: StressSettings) -> dict[str, Any]:
        """Everything to attach to an upstream bug report: server, settings, tallies, and the kept
        bad sessions (the `tally.KEEP` lowest-numbered of each class)."""
        return {
            "server": self.server.evidence() if self.server else None,
            "workload": settings.evidence(),
            "counts": dict(self.counts()),
            "corrupted": self.corrupted,
            "tally": self.tally_line(),
            "metrics": self.metrics(),
            "sessions": [
                {
                    "index": s.index,
                    "class": s.kind,
                    "stream": s.stream,
                    "rounds_done": s.rounds_done,
                    "detail": s.detail,
                    **({"evidence": s.evidence} if s.evidence else {}),
                }
                for s in self.kept
            ],
        }


def api_base(url: str) -> str:
    """The server's base URL without ``/v1``: ``http://h:p``, ``http://h:p/``, ``http://h:p/v1`` alike.

    A prefix a proxy adds (``https://gw/sglang/v1``) is kept.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise HeisenbisectError(
            f"--url: expected http://HOST:PORT or https://HOST[:PORT][/v1], got {url!r}"
        )
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port <= 65535:
        raise HeisenbisectError(f"--url: the port must be 1 to 65535, got {url!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def tls_verify(settings: StressSettings) -> ssl.SSLContext:
    """One TLS context for all the workload's clients (each would load the CA bundle again)."""
    if isinstance(settings.verify, str):
        try:
            return ssl.create_default_context(cafile=settings.verify)
        except (OSError, ssl.SSLError) as exc:
            raise HeisenbisectError(f"--ca-cert {settings.verify}: cannot load: {exc}") from None
    return httpx.create_ssl_context(verify=settings.verify)


def _signals_cancel(stop: threading.Event, arrived: list[int]) -> list[int]:
    """Let SIGTERM and SIGHUP set ``stop`` instead of raising `Stopped` inside whichever task
    runs (that task's exception was then never retrieved: a traceback after "interrupted"); the
    signals taken over. Main thread only, and only those `signals` handles."""
    if threading.current_thread() is not threading.main_thread():
        return []
    loop = asyncio.get_running_loop()
    taken: list[int] = [signum for signum in signals.STOP_SIGNALS if signals.ours(signum)]

    def arrive(signum: int) -> None:
        arrived.append(signum)
        stop.set()

    for signum in taken:
        loop.add_signal_handler(signum, arrive, signum)
    return taken


def _give_back(taken: list[int]) -> None:
    loop = asyncio.get_running_loop()
    for signum in taken:
        handler = signal.getsignal(signum)
        loop.remove_signal_handler(signum)
        signal.signal(signum, handler)


async def supervised(
    workload: Coroutine[Any, Any, StressResult],
    cancelled: threading.Event | None,
    deadline_s: float | None,
    arrived: list[int] | None = None,
) -> StressResult:
    """``workload``'s result, unless ``cancelled`` is set or ``deadline_s`` passes first.

    The cancellation is asked again at every poll until the work has stopped: AnyIO (under httpx)
    can swallow a task's cancellation that lands while it opens a connection
    (agronholm/anyio#1214), and the request then waits out its whole timeout: a closed runner
    hung for 450 s and more, once in several full test runs under load."""
    work = asyncio.ensure_future(workload)
    cancelled = cancelled or threading.Event()
    taken = _signals_cancel(cancelled, arrived if arrived is not None else [])
    try:
        return await _until_done(work, cancelled, deadline_s)
    finally:
        _give_back(taken)


async def _until_done(
    work: asyncio.Future[StressResult], cancelled: threading.Event, deadline_s: float | None
) -> StressResult:
    deadline = None if deadline_s is None else time.monotonic() + deadline_s
    while not work.done():
        await asyncio.wait({work}, timeout=CANCEL_POLL_S)
        if work.done():
            break
        if (cancelled is not None and cancelled.is_set()) or (
            deadline and time.monotonic() >= deadline
        ):
            while not work.done():
                work.cancel()
                await asyncio.wait({work}, timeout=CANCEL_POLL_S)
            await asyncio.gather(
                work, return_exceptions=True
            )  # its ending, whatever it was, is read
            if cancelled is not None and cancelled.is_set():
                raise StressCancelled()
            raise StressTimeout(f"stress workload ran past {deadline_s:g}s")
    return work.result()


Replay = Callable[[Mapping[str, Any]], Any]  # a recorded completion for a request, or None
Observe = Callable[[SessionResult], None]  # told of each session as it ends


async def stress_workload(
    base_url: str,
    settings: StressSettings,
    scratch: Mapping[str, dict[str, Any]] | None = None,
    indices: Sequence[int] | None = None,
    replay: Replay | None = None,
    observe: Observe | None = None,
) -> StressResult:
    """One pass: the sessions ``indices`` (default: all); ``scratch``: a check's run scratch to
    use (the reference passes'); ``replay``: answers not to ask the server again; ``observe``:
    told of each session as it ends (what the pass's result does not keep).

    A pool of workers, one per session in flight, takes the sessions in order: no task per
    session is made up front, so memory follows the sessions in flight, not their number."""
    chosen = range(settings.sessions) if indices is None else indices
    concurrency = settings.concurrency or min(settings.sessions, MAX_IN_FLIGHT)
    # httpcore's pool scans its connections per request, quadratically: past `POOL` in flight the
    # sessions share several clients (1 024 in one pool ran 8 000 sessions in 10 minutes)
    pools = -(-min(concurrency, len(chosen) or 1) // POOL)
    per_pool = -(-concurrency // pools)
    limits = httpx.Limits(max_connections=per_pool, max_keepalive_connections=per_pool)
    timeout = httpx.Timeout(settings.request_timeout, connect=min(30.0, settings.request_timeout))
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    verify = tls_verify(settings)
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(
                    base_url=base_url,
                    limits=limits,
                    timeout=timeout,
                    headers=headers,
                    verify=verify,
                )
            )
            for _ in range(pools)
        ]
        client = clients[0]
        model = settings.model or await served_model(client, settings)
        version, source = await server_version(client, settings)
        server = ServerInfo(base_url, model, version, source)
        checks = registry.active(settings.checks)
        given = scratch or {}
        trial_scratch = {check.name: given.get(check.name, {}) for check, _ in checks}
        fixed_ids = reference.NAME in trial_scratch  # the passes must send the same requests
        requests = Requests()
        tally: Tally[SessionResult] = Tally()
        queue = iter(chosen)
        started = time.monotonic()

        async def worker(client: httpx.AsyncClient) -> None:
            for index in queue:  # shared: each worker takes the next session not yet taken
                states = [
                    (check, State(check_settings, trial=trial_scratch[check.name]))
                    for check, check_settings in checks
                ]
                session = await _session(
                    client, model, settings, index, states, requests, replay, fixed_ids
                )
                tally.add(session)
                if observe is not None:
                    observe(session)

        workers = min(concurrency, len(chosen))
        await asyncio.gather(*(worker(clients[k % pools]) for k in range(workers)))
        wall = time.monotonic() - started
    measured = {
        name: value
        for check, _ in checks
        for name, value in check.metrics(trial_scratch[check.name]).items()
    }
    return StressResult(
        tally.kept(),
        tally.counts,
        wall,
        requests.tokens,
        requests.seen,
        tuple(requests.values),
        server,
        check_metrics=measured,
    )


async def served_model(client: httpx.AsyncClient, settings: StressSettings) -> str:
    """The first model id in ``/v1/models``: what SGLang serves under ``--served-model-name``."""
    where = f"{client.base_url}/v1/models"
    try:
        status, raw = await asyncio.wait_for(
            _get(client, "/v1/models", settings.max_response_bytes), settings.request_timeout
        )
        if status == 401:
            raise HeisenbisectError(
                f"{where}: 401 Unauthorized: give the server's key with --api-key or OPENAI_API_KEY"
            )
        if status != 200:
            raise HeisenbisectError(f"cannot list models at {where}: HTTP {status}")
        listed = json.loads(raw)
    except asyncio.TimeoutError:
        raise HeisenbisectError(
            f"cannot list models at {where}: no answer within --request-timeout "
            f"{settings.request_timeout:g}s"
        ) from None
    except (httpx.HTTPError, ResponseTooLarge, ValueError, RecursionError) as exc:
        raise HeisenbisectError(
            redact(f"cannot list models at {where}: {exc}", settings.secrets())
        ) from None
    data = listed.get("data") if isinstance(listed, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    if not isinstance(first, dict) or not isinstance(first.get("id"), str) or not first["id"]:
        got = redact(json.dumps(listed)[:120], settings.secrets())
        raise HeisenbisectError(
            f'{where}: expected {{"data": [{{"id": "MODEL", ...}}, ...]}}, got {got}; '
            "name the model with --model"
        )
    return first["id"]


async def server_version(
    client: httpx.AsyncClient, settings: StressSettings
) -> tuple[str | None, str | None]:
    """(version, endpoint) from the first endpoint that reports one; (None, None) when none does."""
    for path in settings.version_paths:
        try:
            status, raw = await asyncio.wait_for(
                _get(client, path, settings.max_response_bytes), INFO_TIMEOUT_S
            )
            body = json.loads(raw) if status == 200 else None
        except (
            httpx.HTTPError,
            ResponseTooLarge,
            ValueError,
            RecursionError,
            asyncio.TimeoutError,
        ):
            continue
        if isinstance(body, dict) and isinstance(body.get("version"), (str, int, float)):
            # a server's text, kept as evidence and printed: capped (a 5 MB version string)
            return capped(redact(str(body["version"]), settings.secrets())), path
    return None, None


class ResponseTooLarge(Exception):
    """A body or event stream ran past ``max_response_bytes``."""

    def __init__(self, cap: int):
        super().__init__(
            f"the response ran past {cap} bytes (--max-response-bytes, or a spec's "
            "workload.max_response_bytes)"
        )


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
        head, *rest = piece.split(b"\n")
        line += head
        for part in rest:
            yield line.decode("utf-8", errors="replace")
            line = bytearray(part)
    if line:
        yield line.decode("utf-8", errors="replace")


async def _get(client: httpx.AsyncClient, path: str, cap: int) -> tuple[int, bytes]:
    async with client.stream("GET", path) as response:
        return response.status_code, await _capped_bytes(
            response, _Limits(cap, float("inf"), float("inf"))
        )


async def _session(
    client: httpx.AsyncClient,
    model: str,
    settings: StressSettings,
    index: int,
    checks: list[tuple[Check, State]],
    requests: Requests,
    replay: Replay | None = None,
    fixed_ids: bool = False,
) -> SessionResult:
    rng = random.Random(settings.seed * 1_000_003 + index)
    tools = settings.tools
    stream = settings.streams(index)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": settings.system_prompt or DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": tools.prompt(rng)[1]},
    ]

    secrets = settings.secrets()

    def bad(
        kind: str, round_: int, detail: str, excerpt: str, evidence: dict[str, Any]
    ) -> SessionResult:
        return SessionResult(
            index,
            kind,
            max(round_, 0),
            redact(f"{f'round {round_ + 1}' if round_ >= 0 else 'question'}: {detail}", secrets),
            redact(excerpt, secrets)[:EXCERPT_CHARS],
            stream,
            redact(evidence, secrets),
        )

    # plain questions a check asks first (`answers`), each its own conversation: rounds -n..-1
    questions = [
        asked
        for check, state in checks
        if (asked := check.question(state.settings, random.Random(f"{settings.seed}:{index}")))
    ]
    for round_ in range(-len(questions), settings.rounds):
        asking = round_ < 0
        body: dict[str, Any] = {
            "model": model,
            "messages": questions[round_] if asking else messages,
            **({} if asking else {"tools": tools.specs, "tool_choice": "auto"}),
            "max_tokens": settings.max_tokens,
            "temperature": settings.temperature,
        }
        if stream:
            body.update(stream=True, stream_options={"include_usage": True})
        for check, state in checks:
            body.update(check.request_fields(state.settings))
        request = json.loads(json.dumps(body))  # this round's request as sent; messages grow later
        sent = time.monotonic()
        limits = _Limits(
            settings.max_response_bytes,
            time.monotonic() + settings.request_timeout,
            settings.request_timeout,
        )
        recorded = replay(request) if replay is not None else None
        try:
            reply = await (
                _recorded(recorded)
                if recorded is not None
                else _streamed(client, body, limits)
                if stream
                else _plain(client, body, limits)
            )
        except httpx.HTTPError as exc:
            return bad(
                registry.ERROR, round_, f"{type(exc).__name__}: {exc}", "", {"request": request}
            )
        except (ResponseTooLarge, ResponseTooSlow) as exc:
            return bad(registry.ERROR, round_, str(exc), "", {"request": request})
        requests.answered(time.monotonic() - sent)
        evidence = {"request": request, "response": reply.response}
        if reply.error:
            return bad(registry.ERROR, round_, reply.error, reply.excerpt, evidence)
        usage = reply.usage
        requests.tokens += (
            int(usage.get("completion_tokens") or 0) if isinstance(usage, dict) else 0
        )
        message = reply.message
        finding = first_finding(checks, request, reply.checked())
        if finding is not None:
            excerpt = finding.excerpt or json.dumps(message, ensure_ascii=False)
            evidence.update(finding.evidence or {})
            return bad(finding.kind, round_, finding.detail, excerpt, evidence)
        if asking:
            continue
        calls = _runnable_calls(message)
        if fixed_ids:  # a server's random call ids would make every later request a new one
            calls = [{**call, "id": f"call_{round_}_{i}"} for i, call in enumerate(calls)]
        messages.append(_assistant_turn(message, calls))
        for call in calls:
            call_id = str(call.get("id") or f"call_{round_}")
            arguments = _arguments(call["function"])
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": tools.result(call["function"]["name"], arguments, call_id),
                }
            )
        if round_ + 1 < settings.rounds:
            messages.append({"role": "user", "content": tools.prompt(rng)[1]})
    return SessionResult(index, registry.OK, settings.rounds, stream=stream)


def first_finding(
    checks: list[tuple[Check, State]], request: dict[str, Any], reply: Reply
) -> Finding | None:
    """The first check's finding on ``reply``, in the registry's order; None when all pass."""
    for check, state in checks:
        finding = check.inspect(request, reply, state)
        if finding is not None:
            return finding
    return None


@dataclass
class _Reply:
    """One round's answer: the message (assembled, if streamed), or why there is none."""

    response: Any  # what goes into the evidence: the JSON body, the text, or every streamed chunk
    message: dict[str, Any] = field(default_factory=dict)
    usage: Any = None
    stream: StreamedCompletion | None = None
    error: str = ""  # the request failed: an error session
    unmerged: str = ""  # the stream cannot be put together as a client would: for the checks
    excerpt: str = ""

    def checked(self) -> Reply:
        """The reply as the checks read it."""
        deltas = None if self.stream is None else tuple(self.stream.deltas())
        return Reply(self.message, self.response, deltas, self.unmerged)


async def _plain(client: httpx.AsyncClient, body: dict[str, Any], limits: _Limits) -> _Reply:
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        text = (await _capped_bytes(response, limits)).decode("utf-8", errors="replace")
    if response.status_code != 200:
        return _Reply(
            {"status": response.status_code, "text": text},
            error=f"HTTP {response.status_code}",
            excerpt=text,
        )
    try:
        completion = json.loads(text)
        message = completion["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return _Reply({"status": 200, "text": text}, error="not a chat completion", excerpt=text)
    return _Reply(completion, message, completion.get("usage"))


async def _recorded(completion: dict[str, Any]) -> _Reply:
    """A recorded completion as this round's reply, the server not asked again."""
    return _Reply(completion, completion["choices"][0]["message"], completion.get("usage"))


async def _streamed(client: httpx.AsyncClient, body: dict[str, Any], limits: _Limits) -> _Reply:
    collected = StreamedCompletion()
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        if response.status_code != 200:
            text = (await _capped_bytes(response, limits)).decode(errors="replace")
            return _Reply(
                {"status": response.status_code, "text": text},
                error=f"HTTP {response.status_code}",
                excerpt=text,
            )
        try:
            async for line in _capped_lines(response, limits):
                chunk = parse_event_line(line)
                if chunk is not None:
                    collected.add(chunk)
        except DeltaError as exc:
            return _Reply(
                {"status": 200, "chunks": collected.chunks},
                stream=StreamedCompletion(collected.chunks),
                unmerged=str(exc),
            )
        except StreamFormatError as exc:
            return _Reply(
                {"status": 200, "chunks": collected.chunks},
                error=f"stream: {exc}",
                excerpt=str(exc),
            )
        except RecursionError:
            return _Reply(
                {"status": 200, "chunks": collected.chunks},
                error="stream: an event nested too deep",
            )
    if not collected.chunks:
        return _Reply({"status": 200, "chunks": []}, error="stream: no chunk before the end")
    return _Reply(
        {"status": 200, "chunks": collected.chunks, "assembled": collected.message},
        collected.message,
        collected.usage,
        collected,
    )


def _runnable_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls the session answers: each with a function part that names a function (all of
    them, unless a check that would refuse the rest is turned off)."""
    calls = message.get("tool_calls")
    return (
        [
            c
            for c in calls
            if isinstance(c, dict)
            and isinstance(c.get("function"), dict)
            and isinstance(c["function"].get("name"), str)
        ]
        if isinstance(calls, list)
        else []
    )


def _arguments(function: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments as the tool gets them: ``{}`` for none, or for what is not a JSON object."""
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _assistant_turn(message: dict[str, Any], runnable: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message as it goes back into the conversation (ids kept, extras dropped)."""
    calls = []
    for i, call in enumerate(runnable):
        function = call["function"]
        arguments = function.get("arguments", "")
        calls.append(
            {
                "id": str(call.get("id") or f"call_{i}"),
                "type": "function",
                "function": {
                    "name": function["name"],
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
        )
    return {"role": "assistant", "content": message.get("content") or "", "tool_calls": calls}
