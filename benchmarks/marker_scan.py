"""What finding a trial's marked processes costs: one scan of /proc per trial end.

Starts N idle processes (half of them marked with the token looked for), then times
`process.marked_processes` over the whole process table. Prints a table for docs/reliability.md.
Run: ``PYTHONPATH=src nice -n 10 python benchmarks/marker_scan.py``.
"""

from __future__ import annotations

import os
import subprocess
import time

from heisenbisect.markers import TOKENS_VAR, marked_processes


def scan_ms(token: str, repeats: int = 20) -> float:
    started = time.perf_counter()
    for _ in range(repeats):
        marked_processes({token})
    return (time.perf_counter() - started) / repeats * 1000


def main() -> None:
    print("| processes on the machine | marked | scan (ms) |")
    print("|---:|---:|---:|")
    for extra in (0, 200, 1000):
        procs = [
            subprocess.Popen(["sleep", "60"], env={**os.environ, TOKENS_VAR: "bench" if i % 2 else "other"})
            for i in range(extra)
        ]
        try:
            time.sleep(0.5)
            total = sum(1 for name in os.listdir("/proc") if name.isdigit())
            found = len(marked_processes({"bench"}))
            print(f"| {total} | {found} | {scan_ms('bench'):.1f} |")
        finally:
            for proc in procs:
                proc.kill()
            for proc in procs:
                proc.wait()


if __name__ == "__main__":
    main()
