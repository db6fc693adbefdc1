"""How long `bisect --version` and `bisect validate` take to start, now and at an older commit.

Each command runs ``--repeats`` times as a fresh interpreter (``python -m heisenbisect``, what
the ``bisect`` script does) with the tree's ``src`` first on PYTHONPATH; the table shows the
median and the fastest run. ``--before REF`` also measures REF, checked out in a temporary
worktree (your own tree is not touched). Run under ``nice -n 10``:

    python benchmarks/cli_startup.py --before 8413f33 [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = "examples/cpu_race/hypotheses.yaml"
COMMANDS = (("bisect --version", ["--version"]), (f"bisect validate {SPEC}", ["validate", SPEC]))
GOAL_S = 0.5


def timings(tree: Path, argv: list[str], repeats: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = []
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "heisenbisect", *argv], cwd=tree, env=env,
                              capture_output=True, text=True)
        out.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{tree}: bisect {' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return out


def rows(label: str, tree: Path, repeats: int) -> list[str]:
    lines = []
    for name, argv in COMMANDS:
        times = timings(tree, argv, repeats)
        median = statistics.median(times)
        verdict = "yes" if median < GOAL_S else "no"
        lines.append(f"| {label} | `{name}` | {median:.3f} | {min(times):.3f} | {verdict} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REF", help="also measure this commit (a temporary worktree)")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    print(f"| tree | command | median s | fastest s | under {GOAL_S} s |")
    print("|---|---|---|---|---|")
    if args.before:
        with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
            old = Path(tmp) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), args.before],
                           check=True)
            try:
                for line in rows(f"before ({args.before})", old, args.repeats):
                    print(line, flush=True)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=True)
    for line in rows("now", ROOT, args.repeats):
        print(line, flush=True)


if __name__ == "__main__":
    main()
