"""How long `bisect --version` and `bisect validate` take to start, now and at an older commit;
and how long `bisect run` on the cpu_race example takes to handle signals and to start its
first trial.

Each command runs ``--repeats`` times as a fresh interpreter (``python -m heisenbisect``, what
the ``bisect`` script does) with the tree's ``src`` first on PYTHONPATH; the table shows the
median and the fastest run. ``--before REF`` also measures REF, checked out in a temporary
worktree (your own tree is not touched). Run under ``nice -n 10``:

    python benchmarks/cli_startup.py --before 8413f33 [--repeats 15]

The second table times `bisect run examples/cpu_race/hypotheses.yaml`: "handlers" is when the
process catches SIGTERM (``SigCgt`` in /proc/PID/status: from then on a stop signal ends it with
128 + the signal, never a traceback), "first trial" when the first trial's log appears; then
the run is stopped with SIGINT and must exit 130. ``--burn N`` adds N busy processes for the
loaded rows (the load average before the run is printed beside each row):

    python benchmarks/cli_startup.py --first-trial --burn 2 [--before REF] [--repeats 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
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
FIRST_TRIAL_GOAL_S = 1.0
POLL_S = 0.002


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


def catches_sigterm(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        pass
    return False


def first_trial(tree: Path) -> tuple[float, float]:
    """(seconds to handlers, seconds to the first trial's log) of one `bisect run`, stopped by SIGINT."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    with tempfile.TemporaryDirectory(prefix="first-trial-") as out:
        logs = Path(out) / "cpu-race" / "logs"
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "heisenbisect", "run", SPEC, "--out", out, "--plain"],
                                cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        handlers = trial = None
        while trial is None and proc.poll() is None:
            now = time.perf_counter() - started
            if handlers is None and catches_sigterm(proc.pid):
                handlers = now
            if logs.is_dir() and any(logs.iterdir()):
                trial = now
            time.sleep(POLL_S)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate()
        if proc.returncode != 128 + signal.SIGINT or "Traceback" in err:
            raise SystemExit(f"bisect run stopped by SIGINT exited {proc.returncode}: {err[-500:]}")
        return handlers if handlers is not None else float("nan"), trial if trial is not None else float("nan")


def _burn() -> None:
    while True:
        pass


def first_trial_rows(label: str, tree: Path, repeats: int, burn: int) -> list[str]:
    lines = []
    for burners in sorted({0, burn}):
        workers = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(burners)]
        for worker in workers:
            worker.start()
        try:
            load = os.getloadavg()[0]
            runs = [first_trial(tree) for _ in range(repeats)]
        finally:
            for worker in workers:
                worker.terminate()
        handlers = statistics.median(r[0] for r in runs)
        trial = statistics.median(r[1] for r in runs)
        verdict = "yes" if trial < FIRST_TRIAL_GOAL_S else "no"
        lines.append(f"| {label} | +{burners} busy | {load:.1f} | {handlers:.3f} | {trial:.3f} | "
                     f"{min(r[1] for r in runs):.3f} | {verdict} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REF", help="also measure this commit (a temporary worktree)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--first-trial", action="store_true", help="time `bisect run` to its handlers and first trial")
    parser.add_argument("--burn", type=int, default=0, help="busy processes for the loaded rows of --first-trial")
    args = parser.parse_args()
    measure = ((lambda label, tree: first_trial_rows(label, tree, args.repeats, args.burn)) if args.first_trial
               else (lambda label, tree: rows(label, tree, args.repeats)))
    if args.first_trial:
        print(f"| tree | extra load | load average | handlers s (median) | first trial s (median) | fastest s | "
              f"under {FIRST_TRIAL_GOAL_S} s |")
        print("|---|---|---|---|---|---|---|")
    else:
        print(f"| tree | command | median s | fastest s | under {GOAL_S} s |")
        print("|---|---|---|---|---|")
    if args.before:
        with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
            old = Path(tmp) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), args.before],
                           check=True)
            try:
                for line in measure(f"before ({args.before})", old):
                    print(line, flush=True)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=True)
    for line in measure("now", ROOT):
        print(line, flush=True)


if __name__ == "__main__":
    main()
