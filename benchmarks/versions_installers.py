"""What `bisect versions --installer` costs: uv against pip on the tests' wheelhouse.

The wheelhouse is tests/wheelhouse.py's: ``flakypkg`` in 20 versions (1.5.0 broken at import,
1.12.0 bringing a failure in 30% of runs). Each row runs, ``--repeats`` times, the whole command
as a user does (a fresh interpreter, the tree's ``src`` first on PYTHONPATH)::

    bisect versions flakypkg --good 1.0.0 --bad 1.19.0 --find-links WHEELS --installer I \\
        --parallel 2 --plain -- python -c 'import flakypkg, sys; sys.exit(flakypkg.check())'

into a fresh ``--out`` (every environment made anew) and with a fresh, empty uv cache
(``UV_CACHE_DIR``), and prints a table: the culprit, the search's runs and the verification's
(from results.json), and the wall-clock seconds (median over the repeats)::

    python benchmarks/versions_installers.py [--repeats 3]

The seeds are fixed by the study, so both installers make the same runs: only the time of
making the environments differs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from wheelhouse import CHECK, NAME, make_releases  # noqa: E402


def run_once(installer: str, wheels: Path, work: Path) -> dict:
    """One bisection from scratch; what its results.json says, and how long it took."""
    out = work / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "UV_CACHE_DIR": str(work / "uv-cache")}
    argv = [sys.executable, "-m", "heisenbisect", "versions", NAME, "--good", "1.0.0"]
    argv += ["--bad", "1.19.0", "--find-links", str(wheels), "--installer", installer]
    argv += ["--out", str(out), "--parallel", "2", "--plain", "--", *CHECK]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{installer}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    results = json.loads((out / f"versions-{NAME}" / "results.json").read_text())
    return {
        "culprit": results["culprit"],
        "search": results["trials"],
        "verification": results["verification"]["runs"],
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheels = make_releases(Path(tmp) / "releases").wheels
        print("| installer | culprit | search runs | verification runs | seconds (median) |")
        print("|---|---|---|---|---|")
        for installer in ("uv", "pip"):
            rows = []
            for i in range(args.repeats):
                work = Path(tmp) / f"{installer}-{i}"
                work.mkdir()
                rows.append(run_once(installer, wheels, work))
            first = rows[0]
            seconds = statistics.median(r["seconds"] for r in rows)
            print(
                f"| {installer} | {first['culprit']} | {first['search']} | "
                f"{first['verification']} | {seconds:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
