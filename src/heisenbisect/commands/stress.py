"""`bisect stress --url URL`: the tool-calling stress workload against any OpenAI-compatible server."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from heisenbisect.errors import HeisenbisectError

EXIT_CORRUPTED = 1
EXIT_NO_EVIDENCE = 2  # every session failed: the server, not the model, is the problem


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "stress",
        help="run concurrent multi-turn tool-calling sessions against a server and count corrupted ones",
        description="Run N concurrent sessions x R rounds of tool calling against URL/v1/chat/completions "
        "(SGLang, vLLM, any OpenAI-compatible server), classify each session (leak, malformed, "
        "no_tool, error, ok) and end with a CORRUPTION tally line. Exits 0 when no session was "
        "corrupted, 1 when some were, 2 when every session failed with an error.",
    )
    parser.add_argument("--url", required=True, help="the server's base URL, e.g. http://127.0.0.1:30000")
    parser.add_argument("--sessions", type=_positive, default=60)
    parser.add_argument("--rounds", type=_positive, default=4)
    parser.add_argument("--concurrency", type=_positive, help="sessions in flight at once (default: all)")
    parser.add_argument("--model", help="model name to request (default: the first in /v1/models)")
    parser.add_argument("--max-tokens", type=_positive, default=512)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--request-timeout", type=float, default=300.0, help="seconds per request")
    parser.add_argument("--tools", type=Path, help="a JSON file with a list of OpenAI tools (default: built-in)")
    parser.add_argument("--seed", type=int, default=0, help="picks each session's prompts")
    parser.add_argument("--json", type=Path, help="also write the result (counts, metrics, sessions) here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every bad session's response")
    parser.set_defaults(handler=run)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from heisenbisect.runners.sglang.tools import ToolSet
    from heisenbisect.runners.sglang.workload import StressSettings, run_stress

    settings = StressSettings(
        sessions=args.sessions, rounds=args.rounds, concurrency=args.concurrency,
        max_tokens=args.max_tokens, temperature=args.temperature,
        request_timeout=args.request_timeout, model=args.model,
        tools=ToolSet(_load_tools(args.tools)), seed=args.seed,
    )
    result = run_stress(args.url, settings)
    for session in result.sessions:
        if session.detail:
            print(f"session {session.index}: {session.kind.value}: {session.detail}")
            if args.verbose and session.excerpt:
                print(f"    {session.excerpt}")
    metrics = result.metrics()
    latency = (f"latency p50={metrics['latency_p50_s']:.3f}s p95={metrics['latency_p95_s']:.3f}s"
               if "latency_p50_s" in metrics else "no request answered")
    print(f"wall={result.wall_s:.1f}s tokens/s={metrics['tokens_per_s']:.1f} {latency}")
    if args.json:
        args.json.write_text(json.dumps({
            "counts": {k.value: v for k, v in result.counts().items()},
            "corrupted": result.corrupted,
            "sessions": [{"index": s.index, "class": s.kind.value, "rounds_done": s.rounds_done,
                          "detail": s.detail} for s in result.sessions],
            "metrics": metrics,
        }, indent=2))
    print(result.tally_line())
    if result.errors == len(result.sessions):
        print(f"error: every session failed, e.g. {result.sessions[0].detail}", file=sys.stderr)
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
        raise HeisenbisectError(f"{path}:{exc.lineno}:{exc.colno}: --tools: not JSON: {exc.msg}") from None
    if not isinstance(tools, list):
        raise HeisenbisectError(f"{path}: --tools: expected a JSON list of tools, got {type(tools).__name__}")
    return tools
