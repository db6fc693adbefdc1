#!/usr/bin/env python3
"""A stand-in for ``python -m sglang.launch_server`` that runs without a GPU, for tests.

It behaves like SGLang where heisenbisect can tell the difference:
- accepts the launch arguments SGLang takes (``--model-path``, ``--host``, ``--port``,
  ``--nccl-port``, ``--tool-call-parser``, ...) and lists them under ``--help``;
- spawns a scheduler (which spawns a TP worker) and a detokenizer, as SGLang's
  multiprocessing does; the scheduler binds the NCCL port and ``SGLANG_TCP_STORE_PORT``,
  so two servers given the same ports collide as real ones would;
- serves ``/health``, ``/health_generate`` (503 until warmed up), ``/v1/models`` and
  ``/v1/chat/completions`` with OpenAI tool calls;
- injects, per request, the corruption seen in real SGLang output, at rates given as
  ``--fake-<kind>-rate`` or ``FAKE_SGLANG_<KIND>_RATE``: ``leak`` (raw DeepSeek markup
  in content, the tool-call parser having given up, or a special token inside the
  arguments), ``truncate`` (arguments cut mid-JSON), ``badname`` (a garbled function
  name), ``badargs`` (arguments off the schema), ``drop`` (no tool call), ``error``
  (HTTP 500) and ``hang`` (no answer);
- streams (``"stream": true``) as SGLang does: server-sent events over chunked transfer,
  the role first, a tool call's id and name in one delta and its arguments in pieces,
  usage last with ``stream_options.include_usage``, then ``[DONE]``; every fault above
  applies to streams too, and three only streams have: ``splittoken`` (leaked markup
  whose special tokens straddle two deltas, ``<|tool_call`` + ``_begin|>``),
  ``renamecall`` (a later delta names another function for the same call) and
  ``changeid`` (a later delta sends a new id), ``noindex`` (argument deltas without the
  call's ``index``, which the OpenAI client refuses); a non-streamed request drawing one
  of those is answered cleanly;
- ``--api-key K`` answers 401 to requests without ``Authorization: Bearer K``;
  ``--fake-echo-auth`` puts the request's ``Authorization`` header into its 401 and 500
  bodies, as some gateways' error pages do;
  ``--ssl-certfile``/``--ssl-keyfile`` serve HTTPS; ``/server_info`` and
  ``/get_server_info`` report the effective server arguments as top-level keys, then
  ``internal_states`` and ``version``, as SGLang 0.5.6 does (``dataclasses.asdict(server_args)``);
- rewrites arguments after parsing as ``ServerArgs.__post_init__`` does, silently:
  ``--enable-dp-attention`` is dropped when ``--dp-size`` is 1, and ``/server_info`` then
  reports it off;
- ``--fake-story`` instead derives the corruption from the story's conditions: CUDA
  graphs on, the bf16 KV path, ``SGLANG_OPT_USE_MULTI_STREAM_OVERLAP`` on, and batch
  size > 1 corrupt ~15% of 4-round sessions (~22% with ``SGLANG_OPT_USE_TOPK_V2=0``);
  disabling CUDA graphs triples the latency, disabling the overlap adds 10%;
- ``--fake-startup crash|hang`` fails or never finishes startup, ``--fake-crash-after N``
  dies at the N-th chat request; a crash leaves the children behind, and
  ``--fake-stubborn`` children ignore SIGTERM, as a wedged scheduler does;
- side signals: ``nanlogprobs`` (a request that asked for logprobs gets a NaN one, the text
  clean) and ``fsm`` (the log says ``Failed to advance FSM``, the answer clean), as rates like
  the faults above;
- well-formed wrongness, as rates like the faults above: ``exchange`` (a batched request gets
  the arguments of a recent request of another session for the same tool: valid JSON that fits
  the schema, answering another question; only while another request is in flight, and never
  with ``--disable-radix-cache``: the fake's exchange lives in its prefix cache), ``garbage``
  (the content before a correct tool call, or a plain answer, is garbage: replacement
  characters, control characters, or one n-gram repeated dozens of times) and ``wronganswer``
  (a plain question gets a wrong answer). The tool calls carry the values the workload's
  built-in prompts ask for, and a plain question (``What is A + B?``, ``Repeat exactly: S``)
  gets its right answer, as any instruction model gives.

Started as ``sglang_fake_server.py serve MODEL ...`` it behaves as vLLM 0.33 does instead:
``vllm serve``'s CLI (the model positional, ``--enforce-eager``, ``--async-scheduling/
--no-async-scheduling``, ``--enable-prefix-caching/--no-enable-prefix-caching``,
``--max-num-seqs``, ...; plain ``--help`` lists only the groups, ``--help=all`` every flag;
an unknown flag dies in argparse), an engine-core child, no listening socket until the engine
is up, then ``/health`` 200 (no ``/health_generate``, no ``/server_info``), ``/version``, and
errors as ``{"error": {"message", "type", "param", "code"}}``. With ``--fake-story`` its
ground truth is: CUDA graphs (no ``--enforce-eager``) with async scheduling (the default) at
batch size > 1 corrupt ~45% of 4-round sessions; ``--enforce-eager`` or
``--no-async-scheduling`` removes it; prefix caching changes nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAULTS = ("error", "hang", "leak", "truncate", "badname", "badargs", "drop", "splittoken", "renamecall", "changeid",
          "noindex", "nanlogprobs", "fsm", "exchange", "garbage", "wronganswer")
STREAM_ONLY = ("renamecall", "changeid", "noindex")
VERSION = "0.5.23"
PARSERS = ("deepseekv3", "deepseekv31", "deepseekv32", "deepseekv4", "kimi_k2")
FALSE_VALUES = ("0", "false", "no", "n")


class Server(ThreadingHTTPServer):
    """The listen backlog of a real server (uvicorn's 2048), not socketserver's 5: twenty
    sessions connecting at once on a loaded machine must not find the queue full."""

    request_queue_size = 2048


def parse_args(argv: list[str]) -> argparse.Namespace:
    if argv[:1] == ["serve"]:
        return parse_vllm_args(argv[1:])
    p = argparse.ArgumentParser(prog="sglang serve")
    p.add_argument("--model-path", "--model", required=True)
    p.add_argument("--served-model-name")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--nccl-port", type=int)
    p.add_argument("--tool-call-parser", choices=PARSERS)
    p.add_argument("--reasoning-parser")
    p.add_argument("--tp-size", "--tp", type=int, default=1)
    p.add_argument("--dp-size", "--dp", type=int, default=1)
    p.add_argument("--enable-dp-attention", action="store_true")
    p.add_argument("--disable-cuda-graph", action="store_true")
    p.add_argument("--disable-radix-cache", action="store_true")
    p.add_argument("--cuda-graph-max-bs", type=int)
    p.add_argument("--kv-cache-dtype", default="auto", choices=["auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2"])
    p.add_argument("--mem-fraction-static", type=float)
    p.add_argument("--max-running-requests", type=int)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--log-level", default="info")
    p.add_argument("--api-key")
    p.add_argument("--ssl-certfile")
    p.add_argument("--ssl-keyfile")
    add_fake_args(p)
    args = p.parse_args(argv)
    args.vllm = False
    return post_init(args)


def add_fake_args(p: argparse.ArgumentParser) -> None:
    """The fake's own knobs, in either mode."""
    env = os.environ
    p.add_argument("--fake-echo-auth", action="store_true")
    for fault in FAULTS:
        p.add_argument(f"--fake-{fault}-rate", type=float, default=float(env.get(f"FAKE_SGLANG_{fault.upper()}_RATE", 0)))
    p.add_argument("--fake-story", action="store_true", default=env.get("FAKE_SGLANG_STORY") == "1")
    p.add_argument("--fake-seed", type=int, default=int(env.get("FAKE_SGLANG_SEED", 0)))
    p.add_argument("--fake-latency", type=float, default=float(env.get("FAKE_SGLANG_LATENCY", 0.005)))
    p.add_argument("--fake-hang-seconds", type=float, default=3600.0)
    p.add_argument("--fake-startup-seconds", type=float, default=float(env.get("FAKE_SGLANG_STARTUP_SECONDS", 0.3)))
    p.add_argument("--fake-startup", choices=["ok", "crash", "hang"], default=env.get("FAKE_SGLANG_STARTUP", "ok"))
    p.add_argument("--fake-stubborn", action="store_true", default=env.get("FAKE_SGLANG_STUBBORN") == "1")
    p.add_argument("--fake-crash-after", type=int, default=int(env.get("FAKE_SGLANG_CRASH_AFTER", 0)),
                   help="die (leaving the children) at this chat request; 0: never")
    add_reference_args(p)


def add_reference_args(p: argparse.ArgumentParser) -> None:
    """Well-formed wrongness, for the reference check: each changes one argument value.

    ``diverge``: only at batch size > 1 (a kernel that is not batch-invariant); ``warmcache``:
    only when the same messages were answered before (a prefix-cache fault); ``streamparse``:
    only the streamed tool call, the generated tokens unchanged (a streaming parser's fault).
    A request asking ``top_logprobs`` gets the tokens of its raw output with a top-2 gap of 6
    nats, except at the token a fault would change, whose gap is ``--fake-tie-gap``."""
    for mode in ("diverge", "warmcache", "streamparse"):
        p.add_argument(f"--fake-{mode}-rate", type=float, default=0.0)
    p.add_argument("--fake-tie-gap", type=float, default=6.0)


VLLM_VERSION = "0.33.0"
VLLM_GROUPS = ("ModelConfig", "CacheConfig", "SchedulerConfig", "Frontend")


def parse_vllm_args(argv: list[str]) -> argparse.Namespace:
    """``vllm serve MODEL [flags]`` as vLLM 0.33 parses it (booleans as ``--x/--no-x``)."""
    p = argparse.ArgumentParser(prog="vllm serve", add_help=False)
    p.add_argument("model_path", metavar="model_tag")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name")
    p.add_argument("--enforce-eager", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--async-scheduling", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--enable-chunked-prefill", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--disable-custom-all-reduce", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--attention-backend")
    p.add_argument("--enable-auto-tool-choice", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument("--tool-call-parser", choices=PARSERS)
    p.add_argument("--api-key")
    p.add_argument("--ssl-certfile")
    p.add_argument("--ssl-keyfile")
    add_fake_args(p)
    help_arg = next((a for a in argv if a == "--help" or a.startswith("--help=")), None)
    if help_arg == "--help":
        print("usage: vllm serve [model_tag] [options]\n\nUse `vllm serve --help=<ConfigGroup>` to explore "
              "arguments from help.\n  - To view a argument group:     --help=ModelConfig\n"
              "  - To view all arguments:        --help=all\n\nConfig Groups:\n  " + "\n  ".join(VLLM_GROUPS))
        sys.exit(0)
    if help_arg == "--help=all":
        p.print_help()
        sys.exit(0)
    args = p.parse_args(argv)
    args.vllm = True
    args.async_scheduling = True if args.async_scheduling is None else args.async_scheduling
    args.disable_cuda_graph = args.enforce_eager  # what the story reads
    args.nccl_port, args.kv_cache_dtype, args.dp_size, args.enable_dp_attention = None, "auto", 1, False
    args.tp_size = 1
    args.disable_radix_cache = args.enable_prefix_caching is False
    return args


def post_init(args: argparse.Namespace) -> argparse.Namespace:
    """The rewrites SGLang makes to parsed arguments, which only ``/server_info`` shows."""
    if args.dp_size == 1:
        args.enable_dp_attention = False  # as ServerArgs._handle_data_parallelism
    return args


def server_info(args: argparse.Namespace) -> dict:
    """What SGLang's ``/server_info`` returns: every server argument, the scheduler's info, the version."""
    fields = {k: v for k, v in vars(args).items() if not k.startswith("fake_")}
    return {**fields, "max_total_num_tokens": 65536, "internal_states": [{"last_gen_throughput": 0.0}], "version": VERSION}


# ---------------------------------------------------------------- child processes


def _sleep_forever(stubborn: bool) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN if stubborn else signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        time.sleep(3600)


def _tp_worker(stubborn: bool) -> None:
    _sleep_forever(stubborn)


def _scheduler(conn, nccl_port: int | None, tcp_store_port: int | None, stubborn: bool) -> None:
    """Binds the ports SGLang's scheduler binds (torch.distributed), then idles like a GPU worker."""
    held = []
    try:
        for port in (nccl_port, tcp_store_port):
            if port:
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                s.listen()
                held.append(s)
    except OSError as exc:
        conn.send(f"RuntimeError: The server socket has failed to listen on any local network address. "
                  f"port: {port}, useIpv6: false, code: -98, name: EADDRINUSE, message: {exc}")
        return
    mp.get_context("spawn").Process(target=_tp_worker, args=(stubborn,), name="TP0").start()
    conn.send("ready")
    _sleep_forever(stubborn)


def _detokenizer(stubborn: bool) -> None:
    _sleep_forever(stubborn)


# ---------------------------------------------------------------- responses


class FakeModel:
    """Answers chat completions with tool calls, corrupting some as configured."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.name = args.served_model_name or args.model_path
        self.rng = random.Random(args.fake_seed)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.requests = 0
        self.seen: set[str] = set()  # the messages answered before: a warm prefix
        self.reference_rng = random.Random(args.fake_seed)  # its own: the faults' draws stay as they were
        self.recent: dict[str, list[tuple[str, dict]]] = {}  # per tool: (prompt, arguments), newest last

    def rates(self, batch: int) -> dict[str, float]:
        if not self.args.fake_story:
            return _batched_only({f: getattr(self.args, f"fake_{f}_rate") for f in FAULTS}, self.args, batch)
        env = os.environ
        if self.args.vllm:
            racy = not self.args.enforce_eager and self.args.async_scheduling and batch > 1
            return {"leak": 0.08, "truncate": 0.04, "drop": 0.02} if racy else {}  # ~45% of 4-round sessions
        racy = (
            not self.args.disable_cuda_graph
            and self.args.kv_cache_dtype in ("auto", "bf16", "bfloat16")
            and env.get("SGLANG_OPT_USE_MULTI_STREAM_OVERLAP", "1").lower() not in FALSE_VALUES
            and batch > 1
        )
        if not racy:
            return {}
        # per request, so that ~15% (topk V2 off: ~22%) of 4-round sessions go bad, as in the story
        p = 0.06 if env.get("SGLANG_OPT_USE_TOPK_V2", "1").lower() in FALSE_VALUES else 0.04
        return {"leak": 0.6 * p, "truncate": 0.25 * p, "drop": 0.15 * p}

    def latency(self) -> float:
        slow = 1.0
        if self.args.disable_cuda_graph:
            slow *= 3.0
        if os.environ.get("SGLANG_OPT_USE_MULTI_STREAM_OVERLAP", "1").lower() in FALSE_VALUES:
            slow *= 1.1
        return self.args.fake_latency * slow

    def draw_fault(self, batch: int) -> str | None:
        with self.lock:
            u = self.rng.random()
            leak_shape = self.rng.random()
        edge = 0.0
        for fault, rate in self.rates(batch).items():
            edge += rate
            if u < edge:
                return fault if fault != "leak" else ("leak_content" if leak_shape < 0.7 else "leak_args")
        return None

    def complete(self, body: dict, fault: str | None) -> dict:
        tools = body.get("tools") or []
        prompt = next((m.get("content") or "" for m in reversed(body["messages"]) if m.get("role") == "user"), "")
        if not tools:
            return self._response({"role": "assistant", "content": _plain_answer(prompt, fault)}, "stop", prompt)
        tool = next((t for t in tools if t["function"]["name"] in prompt), tools[0])["function"]
        name, arguments = tool["name"], _arguments(tool.get("parameters") or {}, prompt)
        arguments.update(_asked(tool.get("parameters") or {}, prompt))
        arguments = self._exchanged(name, prompt, arguments, fault == "exchange")
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        if fault == "drop":
            return self._response({"role": "assistant", "content": f"Sure, I will look into {prompt[:40]!r}."}, "stop", prompt)
        if fault in ("leak_content", "splittoken"):
            return self._response({"role": "assistant", "content": self._markup(name, arguments)}, "stop", prompt)
        if fault == "leak_args":
            key = next(iter(arguments), "input")
            arguments[key] = f"{arguments.get(key, '')}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        if fault == "badname":
            name = name[:-2]
        if fault == "badargs":
            required = (tool.get("parameters") or {}).get("required") or []
            if required:
                arguments[required[0]] = 12345 if not isinstance(arguments.get(required[0]), int) else "12345"
            else:
                arguments["unexpected_argument"] = True
        text = json.dumps(arguments, ensure_ascii=False)
        if fault == "truncate":
            text = text[: max(1, len(text) // 2)]
        call = {"id": call_id, "index": 0, "type": "function", "function": {"name": name, "arguments": text}}
        content = _garbage(self.requests) if fault == "garbage" else None
        completion = self._response({"role": "assistant", "content": content, "tool_calls": [call]}, "tool_calls", prompt)
        if body.get("logprobs"):
            logprob = float("nan") if fault == "nanlogprobs" else -0.25
            completion["choices"][0]["logprobs"] = {"content": [
                {"token": piece, "logprob": logprob, "bytes": None, "top_logprobs": []} for piece in (name, "(", ")")]}
        if fault == "fsm":
            print("ERROR xgrammar: Failed to advance FSM for request", completion["id"], flush=True)
        return completion

    def stream_events(self, completion: dict, fault: str | None, include_usage: bool):
        """The completion as SGLang streams it, corrupted in the stream-only ways."""
        base = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
                "model": completion["model"]}
        choice = completion["choices"][0]
        message = choice["message"]

        def chunk(delta: dict, finish=None, logprobs=None) -> dict:
            return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        content = message.get("content") or ""
        for piece in _pieces(content, fault == "splittoken"):
            yield chunk({"content": piece})
        for call in message.get("tool_calls") or []:
            function = call["function"]
            yield chunk({"tool_calls": [{"index": call["index"], "id": call["id"], "type": "function",
                                         "function": {"name": function["name"], "arguments": ""}}]})
            pieces = _pieces(function["arguments"], False)
            for n, piece in enumerate(pieces):
                delta: dict = {"index": call["index"], "function": {"arguments": piece}}
                if n == len(pieces) // 2 and fault == "renamecall":
                    others = [t for t in ("get_weather", "search_docs", "read_file", "calculate") if t != function["name"]]
                    delta["function"]["name"] = others[0]
                if n == len(pieces) // 2 and fault == "changeid":
                    delta["id"] = f"call_{uuid.uuid4().hex[:24]}"
                if n > 0 and fault == "noindex":
                    del delta["index"]
                yield chunk({"tool_calls": [delta]})
        yield chunk({}, choice["finish_reason"], choice.get("logprobs"))
        if include_usage:
            yield {**base, "choices": [], "usage": completion["usage"]}

    def _exchanged(self, name: str, prompt: str, arguments: dict, exchange: bool) -> dict:
        """``arguments``, or with ``exchange`` those of the newest recent request of another
        question for the same tool (as a prefix-cache bug hands a batch neighbour's values over)."""
        with self.lock:
            recent = self.recent.setdefault(name, [])
            donor = next((a for p, a in reversed(recent) if p != prompt and a != arguments), None)
            recent.append((prompt, dict(arguments)))
            del recent[:-16]
        return dict(donor) if exchange and donor is not None else arguments

    def _markup(self, name: str, arguments: dict) -> str:
        """Raw tool-call markup as the model emits it, per DeepSeek generation."""
        args = json.dumps(arguments, ensure_ascii=False)
        parser = self.args.tool_call_parser or "deepseekv3"
        if parser == "deepseekv3":
            return (f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n{args}\n```"
                    "<｜tool▁call▁end｜>")  # no calls_end: the parser's regex needs it and gives up
        if parser == "kimi_k2":  # no <|tool_calls_section_end|>: the parser gives up
            return (f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0"
                    f"<|tool_call_argument_begin|>{args}<|tool_call_end|>")
        if parser == "deepseekv31":
            return f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{args[:-1]}"
        section = "function_calls" if parser == "deepseekv32" else "tool_calls"
        params = "".join(
            f'<｜DSML｜parameter name="{k}" string="{str(isinstance(v, str)).lower()}">{v}</｜DSML｜parameter>\n'
            for k, v in arguments.items()
        )
        return f'<｜DSML｜{section}>\n<｜DSML｜invoke name="{name}">\n{params}'  # cut before </｜DSML｜invoke>

    def _response(self, message: dict, finish_reason: str, prompt: str) -> dict:
        message.setdefault("reasoning_content", None)
        out = json.dumps(message, ensure_ascii=False)
        completion_tokens = max(1, len(out) // 4)
        prompt_tokens = max(1, len(prompt) // 4) + 200
        return {
            "id": uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish_reason, "matched_stop": None}],
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
                      "completion_tokens": completion_tokens, "prompt_tokens_details": None, "reasoning_tokens": 0},
        }


def _pieces(text: str, split_tokens: bool) -> list[str]:
    """Text in the few-character deltas a detokenizer sends; with ``split_tokens`` every
    special token (``<|...|>``, ``<｜...｜>``) is cut in two across a delta boundary."""
    if not text:
        return []
    cuts = set(range(7, len(text), 7))
    if split_tokens:
        cuts = {c for c in cuts if not _inside_token(text, c)}
        for start, opener, closer in _token_spans(text):
            cuts.add(start + max(2, (closer - start) // 2))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def _token_spans(text: str):
    for opener, closer in (("<|", "|>"), ("<｜", "｜>")):
        start = text.find(opener)
        while start != -1:
            end = text.find(closer, start + 2)
            if end == -1:
                break
            yield start, opener, end + len(closer)
            start = text.find(opener, end)


def _inside_token(text: str, cut: int) -> bool:
    return any(start < cut < end for start, _, end in _token_spans(text))


def _arguments(schema: dict, prompt: str) -> dict:
    """Schema-valid arguments, loosely taken from the prompt."""
    out = {}
    for key, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if "enum" in prop:
            out[key] = next((v for v in prop["enum"] if str(v) in prompt), prop["enum"][0])
        elif kind == "string":
            out[key] = prompt[:40] or key
        elif kind == "integer":
            out[key] = int(prop.get("minimum", 1))
        elif kind == "number":
            out[key] = float(prop.get("minimum", 1.0))
        elif kind == "boolean":
            out[key] = True
        elif kind == "array":
            out[key] = []
        elif kind == "object":
            out[key] = {}
    return out


def _asked(schema: dict, prompt: str) -> dict:
    """The values a built-in stress prompt asks for, read as a model reads them."""
    patterns = (r"weather in (?P<city>.+?) right now, in (?P<unit>\w+)\?",
                r"docs for '(?P<query>.+?)' and give me the top (?P<max_results>\d+) results",
                r"Show me (?P<path>\S+) starting at line (?P<start_line>\d+)\.",
                r"Compute (?P<expression>.+?) exactly with")
    properties = schema.get("properties") or {}
    for pattern in patterns:
        match = re.search(pattern, prompt)
        if match:
            return {k: int(v) if (properties.get(k) or {}).get("type") == "integer" else v
                    for k, v in match.groupdict().items() if k in properties}
    return {}


def _batched_only(rates: dict, args: argparse.Namespace, batch: int) -> dict:
    """The exchange needs a batch neighbour and the prefix cache it hides in."""
    if batch <= 1 or args.disable_radix_cache:
        rates = {**rates, "exchange": 0.0}
    return rates


GARBAGE = ("Let me check that for you\ufffd\ufffd\ufffd the resul\ufffd",
           "Checking now.\x00\x1b[0m\x07 one moment",
           "I will call the tool " + "the tool " * 40)


def _garbage(n: int) -> str:
    """Text as a broken attention path emits it: each shape of garbage in turn."""
    return GARBAGE[n % len(GARBAGE)]


def _plain_answer(prompt: str, fault: str | None) -> str:
    """A plain question's answer as an instruction model gives it, or a corrupted one."""
    if fault == "garbage":
        return _garbage(len(prompt))
    added = re.search(r"What is (-?\d+) \+ (-?\d+)\?", prompt)
    copied = re.search(r"Repeat exactly: (.+)$", prompt, re.DOTALL)
    if added:
        total = int(added.group(1)) + int(added.group(2))
        return f"{total + 1 if fault == 'wronganswer' else total}"
    if copied:
        text = copied.group(1).strip()
        return text[::-1] if fault == "wronganswer" else text
    return "Hello! How can I help?"


# ---------------------------------------------------------------- HTTP


def make_handler(model: FakeModel, ready_at: float):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # uvicorn's access-log shape
            sys.stderr.write(f'INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.requestline}" {args[1] if len(args) > 1 else ""}\n')

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            key = model.args.api_key
            if not key or self.headers.get("Authorization") == f"Bearer {key}":
                return True
            if model.args.vllm:
                self._send(401, {"error": "Unauthorized" + self._echo()})
            else:
                self._send(401, {"object": "error", "message": "Unauthorized" + self._echo(), "type": "Unauthorized",
                                 "code": 401})
            return False

        def _error(self, status: int, message: str, kind: str) -> None:
            """An error body in the stack's shape (vLLM 0.33 nests it under ``error``)."""
            error = {"message": message + self._echo(), "type": kind, "param": None, "code": status}
            self._send(status, {"error": error} if model.args.vllm else {"object": "error", **error})

        def _echo(self) -> str:
            """The request's Authorization header, as a gateway that echoes it in its errors would."""
            return f" (Authorization: {self.headers.get('Authorization')})" if model.args.fake_echo_auth else ""

        def _send_stream(self, events) -> None:
            """Server-sent events in chunked transfer encoding, as uvicorn sends a StreamingResponse."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in [*(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events), "data: [DONE]\n\n"]:
                data = event.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")

        def do_GET(self):
            if model.args.vllm:
                return self._vllm_get()
            if self.path in ("/health", "/health_generate"):
                if time.monotonic() < ready_at:
                    return self._send(503, {"error": "server is warming up"})
                return self._send(200, {})
            if not self._authorized():
                return
            if self.path in ("/server_info", "/get_server_info"):
                return self._send(200, server_info(model.args))
            if self.path == "/v1/models":
                return self._send(200, {"object": "list", "data": [
                    {"id": model.name, "object": "model", "created": int(time.time()), "owned_by": "sglang",
                     "root": model.args.model_path, "max_model_len": 163840}]})
            self._send(404, {"detail": "Not Found"})

        def _vllm_get(self):
            if self.path == "/health":
                return self._send(200, {})
            if self.path == "/version":
                return self._send(200, {"version": VLLM_VERSION})
            if self.path.startswith("/v1/") and not self._authorized():  # vLLM's key guards /v1 only
                return
            if self.path == "/v1/models":
                return self._send(200, {"object": "list", "data": [
                    {"id": model.name, "object": "model", "created": int(time.time()), "owned_by": "vllm",
                     "root": model.args.model_path, "max_model_len": 32768}]})
            self._send(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                return self._send(404, {"detail": "Not Found"})
            if not self._authorized():
                return
            try:
                body = json.loads(raw)
                body["messages"]
            except (ValueError, KeyError, TypeError):
                return self._error(400, "invalid request", "BadRequestError")
            with model.lock:
                model.in_flight += 1
                model.requests += 1
                batch = model.in_flight
                if model.requests == model.args.fake_crash_after:
                    print("[TP0] Scheduler hit an exception: RuntimeError: CUDA error: an illegal memory access "
                          "was encountered", flush=True)
                    os._exit(1)
            try:
                time.sleep(model.latency())
                fault = model.draw_fault(batch)
                if fault == "hang":
                    time.sleep(model.args.fake_hang_seconds)
                    self.close_connection = True
                    return
                if fault == "error":
                    return self._error(500, "Internal server error: CUDA error: an illegal memory access was encountered",
                                       "InternalServerError")
                streamed = body.get("stream") is True
                if not streamed and fault in STREAM_ONLY:
                    fault = None
                completion = model.complete(body, fault)
                completion = model.reference_modes(body, completion, batch, streamed)
                if not streamed:
                    return self._send(200, completion)
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._send_stream(model.stream_events(completion, fault, usage))
            finally:
                with model.lock:
                    model.in_flight -= 1

    return Handler


def vllm_main(args: argparse.Namespace) -> int:
    """vLLM's startup: an engine core child, the socket bound only once the engine is up."""
    print(f"INFO [api_server.py] vLLM API server version {VLLM_VERSION}", flush=True)
    print(f"INFO [utils.py] non-default args: {{'model': {args.model_path!r}, 'enforce_eager': {args.enforce_eager}, "
          f"'async_scheduling': {args.async_scheduling}, 'api_key': {args.api_key!r}}}", flush=True)
    engine = mp.get_context("spawn").Process(target=_detokenizer, args=(args.fake_stubborn,), name="EngineCore_DP0")
    engine.start()

    def terminate(signum, frame):
        if engine.is_alive():
            engine.terminate()
        os._exit(0)

    signal.signal(signal.SIGTERM, terminate)
    if args.fake_startup == "crash":
        print("ERROR [core.py] EngineCore failed to start.\nRuntimeError: Engine core initialization failed. "
              "See root cause above. Failed core proc(s): {}", flush=True)
        os._exit(1)
    time.sleep(args.fake_startup_seconds)
    if not args.enforce_eager:
        print("INFO [gpu_model_runner.py] Graph capturing finished in 0 secs", flush=True)
    server = Server((args.host, args.port), make_handler(FakeModel(args), 0.0))
    server.daemon_threads = True
    print(f"INFO:     Started server process [{os.getpid()}]\nINFO:     Application startup complete.", flush=True)
    server.serve_forever()
    return 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.vllm:
        return vllm_main(args)
    if refusal := __import__("sglang_fake_flags").startup_error(os.environ):  # flags a real build dies on
        print(refusal, flush=True)
        return 1
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"[{stamp}] server_args=ServerArgs(model_path={args.model_path!r}, host={args.host!r}, port={args.port}, "
          f"nccl_port={args.nccl_port}, tool_call_parser={args.tool_call_parser!r}, "
          f"disable_cuda_graph={args.disable_cuda_graph}, kv_cache_dtype={args.kv_cache_dtype!r}, "
          f"api_key={args.api_key!r})", flush=True)  # SGLang prints every ServerArgs field, the key too
    ctx = mp.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    tcp_store = int(os.environ.get("SGLANG_TCP_STORE_PORT", 0)) or None
    children = [
        ctx.Process(target=_scheduler, args=(child_end, args.nccl_port, tcp_store, args.fake_stubborn), name="scheduler_TP0"),
        ctx.Process(target=_detokenizer, args=(args.fake_stubborn,), name="detokenizer"),
    ]
    for child in children:
        child.start()

    def terminate(signum, frame):
        for child in children:
            if child.is_alive():
                child.terminate()
        os._exit(0)

    signal.signal(signal.SIGTERM, terminate)
    status = parent_end.recv() if parent_end.poll(60) else "RuntimeError: scheduler did not start"
    if status != "ready" or args.fake_startup == "crash":
        reason = status if status != "ready" else "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
        print(f"[{stamp} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
              f'  File "sglang/srt/managers/scheduler.py", line 2954, in run_scheduler_process\n{reason}', flush=True)
        print(f"[{stamp}] Received sigquit from a child process. It usually means the child failed.", flush=True)
        time.sleep(0.5)  # a real server spends a moment on its traceback: long enough to be seen on a loaded machine
        os._exit(1)  # like a crash: the children are left for the caller to clean up
    print(f"[{stamp} TP0] Load weight begin. avail mem=78.50 GB", flush=True)
    if args.fake_startup == "hang":
        print(f"[{stamp} TP0] Capture cuda graph begin. This can take up to several minutes.", flush=True)
        while True:
            time.sleep(3600)
    server = Server((args.host, args.port), make_handler(FakeModel(args), time.monotonic() + args.fake_startup_seconds))
    server.daemon_threads = True
    scheme = "http"
    if args.ssl_certfile:
        import ssl  # here: every spawned child re-imports this module, and startup time is tested

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.ssl_certfile, args.ssl_keyfile)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    print(f"INFO:     Uvicorn running on {scheme}://{args.host}:{args.port} (Press CTRL+C to quit)", flush=True)
    threading.Timer(args.fake_startup_seconds, lambda: print(
        "The server is fired up and ready to roll!", flush=True)).start()
    server.serve_forever()
    return 0


def _changed(arguments: dict) -> dict:
    """The arguments with one value written otherwise, still valid for the schema: a string's
    letters in the other case (or a trailing space), which the `arguments` check (before the
    reference check in the registry) reads as the asked value, so the divergence is the reference
    check's to find; an integer, one more."""
    out = dict(arguments)
    for key, value in out.items():
        if isinstance(value, str) and value:
            swapped = value.swapcase()
            out[key] = swapped if swapped != value else value + " "
            return out
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value + 1
            return out
    return out


def _reference_modes(model: FakeModel, body: dict, completion: dict, batch: int, streamed: bool) -> dict:
    """The reference check's faults (``add_reference_args``), and its logprobs, on a clean answer."""
    args = model.args
    choice = completion["choices"][0]
    calls = choice["message"].get("tool_calls") or []
    key = json.dumps(body.get("messages"), sort_keys=True)
    with model.lock:
        warm = key in model.seen
        model.seen.add(key)
        draws = [model.reference_rng.random() for _ in range(3)]
    try:
        clean = json.loads(calls[0]["function"]["arguments"]) if calls else None
    except ValueError:  # a fault above already broke it
        return completion
    if not isinstance(clean, dict):
        return completion
    function = calls[0]["function"]
    raw = clean
    if (batch > 1 and draws[0] < args.fake_diverge_rate) or (warm and draws[1] < args.fake_warmcache_rate):
        raw = _changed(clean)
    function["arguments"] = json.dumps(raw, ensure_ascii=False)
    if body.get("top_logprobs"):
        text = function["name"] + json.dumps(clean, ensure_ascii=False)
        other = function["name"] + json.dumps(_changed(clean), ensure_ascii=False)
        fragile = next((i for i, (a, b) in enumerate(zip(text, other)) if a != b), -1) // 4
        emitted = function["name"] + function["arguments"]
        choice["logprobs"] = {"content": [
            {"token": emitted[i:i + 4], "logprob": -0.05, "bytes": None, "top_logprobs": [
                {"token": emitted[i:i + 4], "logprob": -0.05},
                {"token": "~", "logprob": -0.05 - (args.fake_tie_gap if i // 4 == fragile else 6.0)}]}
            for i in range(0, len(emitted), 4)]}
    if streamed and draws[2] < args.fake_streamparse_rate:
        function["arguments"] = json.dumps(_changed(raw), ensure_ascii=False)
    return completion


FakeModel.reference_modes = _reference_modes  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
