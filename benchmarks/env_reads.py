"""What the env-read tracker costs each Python process of a trial (runners/env_reads).

Every Python process a tracked trial starts imports the hook's sitecustomize: it patches two
methods of ``os._Environ``, writes one line, and looks for the sitecustomize it hides. Each
case below runs as a fresh interpreter ``--repeats`` times, with and without the tracker,
interleaved (so load drifts hit both alike); the table gives the medians and their
difference, the tracker's cost per process. Run under ``nice -n 10``:

    python benchmarks/env_reads.py [--repeats 40]
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
sys.path.insert(0, str(ROOT / "src"))

from heisenbisect.targets.env_reads import tracking_environment  # noqa: E402

READ_200 = "import os\nfor i in range(200): os.environ.get(f'SOME_SETTING_{i}')\n"
CASES = (
    # (case, program, watched names)
    ("python -c pass, 3 watched", "pass", 3),
    ("python -c pass, 256 watched", "pass", 256),
    ("200 lookups by name, 3 watched", READ_200, 3),
    ("200 lookups by name, 256 watched", READ_200, 256),
    ("import json, subprocess, 3 watched", "import json, subprocess", 3),
)


def run_once(program: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", program], env=env, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
          f"{args.repeats} runs per cell (medians, ms)\n")
    print("| case | without | with tracker | cost per process |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for case, program, count in CASES:
            watched = [f"SOME_FLAG_{i:03d}" for i in range(count)]
            tracked = {**base, **tracking_environment(base, watched, Path(folder))}
            plain, hooked = [], []
            for _ in range(args.repeats):
                plain.append(run_once(program, base))
                hooked.append(run_once(program, tracked))
            without, with_ = statistics.median(plain) * 1e3, statistics.median(hooked) * 1e3
            print(f"| {case} | {without:.1f} | {with_:.1f} | {with_ - without:+.1f} |")


if __name__ == "__main__":
    main()
