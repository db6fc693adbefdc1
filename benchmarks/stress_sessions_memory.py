"""Peak memory of `bisect stress` as the session count grows: each row runs
`python -m heisenbisect stress` once as a fresh process against tests/sglang_fake_server.py (a
leaked-token fault in 5% of replies, so some sessions are bad and kept as examples) and reads the
child's peak RSS from ``wait4``. The sessions are all in flight at once (no --concurrency), as a
user who gives only --sessions would run them.

    python benchmarks/stress_sessions_memory.py [--sessions 1100 6000 20000] [--reference]

Before the bounded pool (issue 37), every session was a task from the start and its result was
kept: 236 MB at 6 000 sessions, 1.1 GB at tens of thousands.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from heisenbisect.stacks.sglang import STACK as SGLANG  # noqa: E402
from heisenbisect.targets.server.process import Readiness, ServerProcess  # noqa: E402

FAKE = (sys.executable, str(ROOT / "tests" / "sglang_fake_server.py"))


def peak(url: str, sessions: int, extra: list[str]) -> tuple[float, float, int]:
    """(peak RSS in MB, seconds, exit code) of one stress run."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "heisenbisect", "stress", "--url", url, "--sessions", str(sessions),
         "--rounds", "1", "--request-timeout", "600", "-q", *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024, time.perf_counter() - started, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1100, 6000, 20000])
    parser.add_argument("--reference", action="store_true", help="with the reference passes")
    args = parser.parse_args()
    server = ServerProcess.start(SGLANG, FAKE, "m", ["--fake-latency", "0.001", "--fake-leak-rate", "0.05",
                                                     "--fake-startup-seconds", "0.05"], dict(os.environ))
    try:
        assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
        print("| sessions | peak RSS MB | seconds | exit |")
        print("|---|---|---|---|")
        for sessions in args.sessions:
            rss, seconds, code = peak(server.url, sessions, ["--reference"] if args.reference else [])
            print(f"| {sessions} | {rss:.0f} | {seconds:.1f} | {code} |", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
