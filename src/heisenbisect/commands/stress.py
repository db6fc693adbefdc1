"""`bisect stress --url URL`: the tool-calling stress workload against any OpenAI-compatible server."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from heisenbisect.errors import HeisenbisectError
from heisenbisect.user_text import capped

EXIT_CORRUPTED = 1
EXIT_NO_EVIDENCE = 2  # every session failed: the server, not the model, is the problem
API_KEY_ENV = "OPENAI_API_KEY"


def register(subparsers) -> None:
    from heisenbisect.checks.registry import tallied

    classes = ", ".join(kind for kind, _ in tallied({}))  # as the tally line names them
    parser = subparsers.add_parser(
        "stress",
        help="run concurrent multi-turn tool-calling sessions against a server and count corrupted ones",
        description="Run N concurrent sessions x R rounds of tool calling against URL/v1/chat/completions "
        f"(SGLang, vLLM, any OpenAI-compatible server), classify each session ({classes}) "
        "and end with a CORRUPTION tally line. Exits 0 when no session was "
        "corrupted, 1 when some were, 2 when every session failed with an error. -v also prints "
        "each bad response; -q prints the tally line alone.",
    )
    parser.add_argument(
        "--url",
        required=True,
        help="the server's base URL, with or without /v1: http://127.0.0.1:30000, https://host/v1",
    )
    parser.add_argument("--sessions", type=_positive, default=60, help="sessions in all")
    parser.add_argument(
        "--rounds", type=_positive, default=4, help="tool-calling rounds per session"
    )
    parser.add_argument(
        "--concurrency",
        type=_positive,
        help="sessions in flight at once (default: all of them, at most 1024)",
    )
    parser.add_argument("--model", help="model name to request (default: the first in /v1/models)")
    parser.add_argument("--max-tokens", type=_positive, default=512, help="max_tokens per request")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature")
    parser.add_argument(
        "--request-timeout",
        type=_seconds,
        default=300.0,
        help="seconds each request may take in all, a slow or trickling answer's too; past it "
        "the session is an error",
    )
    parser.add_argument(
        "--max-response-bytes",
        type=_positive,
        default=16 << 20,
        help="bytes one response (a body or a whole event stream) may have; past it the session "
        "is an error, which keeps memory bounded",
    )
    parser.add_argument(
        "--stream",
        nargs="?",
        const="true",
        default="false",
        choices=["true", "false", "both"],
        help="stream responses (`--stream` alone: true); both: every other session streams",
    )
    parser.add_argument(
        "--api-key", help=f"the server's API key (default: ${API_KEY_ENV}); never printed or saved"
    )
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument(
        "--ca-cert", metavar="FILE", help="verify an https server against this CA bundle"
    )
    tls.add_argument(
        "--insecure", action="store_true", help="do not verify an https server's certificate"
    )
    parser.add_argument(
        "--tools", type=Path, help="a JSON file with a list of OpenAI tools (default: built-in)"
    )
    parser.add_argument("--seed", type=int, default=0, help="picks each session's prompts")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="first answer every session alone (concurrency 1, temperature 0, one seed), then "
        "count answers under load that differ (diverged; near-ties set aside with top-2 "
        "logprobs) and say which layer broke: numerics, parser or scheduler/cache",
    )
    parser.add_argument(
        "--reference-margin",
        type=_nats,
        default=0.5,
        help="with --reference: a divergence where the alone answer's top-1 and top-2 logprobs "
        "are closer than this (nats) is a near-tie, not evidence",
    )
    parser.add_argument(
        "--json",
        type=Path,
        help="also write the evidence here: server URL, model and version, settings, counts, "
        "metrics, and the first 20 bad sessions of each class with their request and response "
        "(streamed: its chunks)",
    )
    parser.set_defaults(handler=run)


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _nats(text: str) -> float:
    value = float(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of nats >= 0, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from heisenbisect.checks.reference import ReferenceSettings
    from heisenbisect.checks.reference_layers import findings
    from heisenbisect.targets.openai.stress import run_stress
    from heisenbisect.targets.openai.tools import ToolSet
    from heisenbisect.targets.openai.workload import StressSettings

    settings = StressSettings(
        sessions=args.sessions,
        rounds=args.rounds,
        concurrency=args.concurrency,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        request_timeout=args.request_timeout,
        max_response_bytes=args.max_response_bytes,
        model=args.model,
        tools=ToolSet(_load_tools(args.tools)),
        seed=args.seed,
        stream=args.stream,
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        verify=args.ca_cert or not args.insecure,
        checks=(
            {"reference": ReferenceSettings(enabled=True, margin=args.reference_margin)}
            if args.reference
            else {}
        ),
    )
    result = run_stress(args.url, settings)
    verbosity = getattr(args, "verbosity", 0)
    if verbosity >= 0:
        server = result.server
        if server:
            print(
                f"server {server.url} model {capped(server.model)} "
                f"version {server.version or 'unknown'}"
            )
        for session in result.kept:  # the lowest-numbered bad sessions of each class
            if session.detail:
                mode = " (streamed)" if session.stream else ""
                print(f"session {session.index}{mode}: {session.kind}: {session.detail}")
                if verbosity > 0 and session.excerpt:
                    print(f"    {session.excerpt}")
        metrics = result.metrics()
        latency = (
            f"latency p50={metrics['latency_p50_s']:.3f}s p95={metrics['latency_p95_s']:.3f}s"
            if "latency_p50_s" in metrics
            else "no request answered"
        )
        print(f"wall={result.wall_s:.1f}s tokens/s={metrics['tokens_per_s']:.1f} {latency}")
        for line in findings(metrics):
            print(line)
    if args.json:
        args.json.write_text(json.dumps(result.evidence(settings), indent=2, ensure_ascii=False))
    print(result.tally_line())
    if result.errors == result.total:
        print(f"error: every session failed, e.g. {result.kept[0].detail}", file=sys.stderr)
        return EXIT_NO_EVIDENCE
    return EXIT_CORRUPTED if result.corrupted else 0


def _load_tools(path: Path | None) -> list | None:
    if path is None:
        return None
    try:
        tools = json.loads(path.read_text())
    except OSError as exc:
        raise HeisenbisectError(f"--tools {path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise HeisenbisectError(
            f"{path}:{exc.lineno}:{exc.colno}: --tools: not JSON: {exc.msg}"
        ) from None
    if not isinstance(tools, list):
        raise HeisenbisectError(
            f"{path}: --tools: expected a JSON list of tools, got {type(tools).__name__}"
        )
    return tools
