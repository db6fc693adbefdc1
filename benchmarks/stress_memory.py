"""Peak memory of `bisect stress` against servers that send too much: one 80 MB event-stream
line, an endless stream, an 80 MB body. Each row runs `python -m heisenbisect stress` once as a
fresh process against tests/rogue_openai_server.py and reads the child's peak RSS from
``wait4``; every session must end as an error (exit 2), the response past the cap.

    python benchmarks/stress_memory.py [--max-response-bytes N]

Before the cap (issue 24), the 80 MB line grew the process to 1.27 GB in 45 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROGUE = ROOT / "tests" / "rogue_openai_server.py"
CASES = (
    ("one 80 MB SSE line", ["--chat", "hugeline", "--megabytes", "80"], ["--stream"]),
    ("an endless SSE stream", ["--chat", "endless"], ["--stream"]),
    ("an 80 MB body", ["--chat", "bigbody", "--megabytes", "80"], []),
)


def peak(server_args: list[str], stress_args: list[str]) -> tuple[float, float, int]:
    """(peak RSS in MB, seconds, exit code) of one stress run against a rogue server."""
    server = subprocess.Popen([sys.executable, str(ROGUE), *server_args], stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().split()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "heisenbisect", "stress", "--url", f"http://127.0.0.1:{port}",
                                 "--sessions", "1", "--rounds", "1", "--request-timeout", "120", *stress_args],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_maxrss / 1024, time.perf_counter() - started, proc.returncode
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-response-bytes", type=int, help="pass this cap (default: the command's own)")
    args = parser.parse_args()
    cap = ["--max-response-bytes", str(args.max_response_bytes)] if args.max_response_bytes else []
    print("| server sends | cap | peak RSS MB | seconds | exit |")
    print("|---|---|---|---|---|")
    for name, server_args, stress_args in CASES:
        rss, seconds, code = peak(server_args, [*stress_args, *cap])
        print(f"| {name} | {args.max_response_bytes or 'default (16 MiB)'} | {rss:.0f} | {seconds:.1f} | {code} |",
              flush=True)


if __name__ == "__main__":
    main()
