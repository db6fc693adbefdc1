#!/usr/bin/env python3
"""An OpenAI-compatible server that misbehaves on purpose, for the stress client's limits.

``--chat`` picks how ``/v1/chat/completions`` answers: ``trickle`` (one byte every
``--interval`` seconds, forever), ``hugeline`` (one server-sent-events line of ``--megabytes``
MB, no newline), ``endless`` (well-formed chunks without end), ``bigbody`` (a non-streamed
body of ``--megabytes`` MB). ``--models JSON`` is served as ``/v1/models`` (default: one model,
``m``). Prints ``PORT N`` once it listens; runs until killed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MB = 1 << 20
CHUNK = b'data: {"choices": [{"index": 0, "delta": {"content": "la "}}]}\n\n'


def make_handler(args: argparse.Namespace):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            pass

        def _head(self, content_type: str, length: int | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            if length is None:
                self.send_header("Connection", "close")
            else:
                self.send_header("Content-Length", str(length))
            self.end_headers()

        def do_GET(self):
            if self.path != "/v1/models":
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = (args.models or json.dumps({"object": "list", "data": [{"id": "m"}]})).encode()
            self._head("application/json", len(data))
            self.wfile.write(data)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                if args.chat == "trickle":
                    self._head("application/json")
                    while True:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(args.interval)
                elif args.chat == "hugeline":
                    self._head("text/event-stream")
                    piece = b"data: " + b"x" * (MB - 6)
                    for _ in range(args.megabytes):
                        self.wfile.write(piece)
                        piece = b"x" * MB
                elif args.chat == "endless":
                    self._head("text/event-stream")
                    while True:
                        self.wfile.write(CHUNK * 256)
                elif args.chat == "bigbody":
                    self._head("application/json", args.megabytes * MB)
                    for _ in range(args.megabytes):
                        self.wfile.write(b" " * MB)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

    return Handler


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chat", choices=["trickle", "hugeline", "endless", "bigbody"], default="trickle")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--megabytes", type=int, default=80)
    parser.add_argument("--models")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
