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

``--signal-window`` times the start's first stretch, from exec until the first statements of
`heisenbisect.entry` install its handlers (before them the interpreter's own start, ``site``
and the launcher's imports run with Python's default signal handling): for the console script
pip writes (the same text, made here) and ``python -m heisenbisect``, beside a bare
interpreter's whole run (``python -c pass``) for scale, and how many of the runs a SIGTERM sent
the moment the handler appears stopped cleanly. ``--sweep N`` then sends SIGINT,
SIGTERM or SIGHUP a fixed delay after the start of `bisect run` N times per cell and counts
the outcomes: a clean stop (128 + the signal and "interrupted"), a death by the signal with
nothing printed, a traceback:

    python benchmarks/cli_startup.py --signal-window --sweep 5 [--before REF] [--repeats 20]

``--before`` takes a commit or a folder holding an older tree (``src/`` and ``examples/``: a
machine without git). Pin to cores with ``taskset -c 0,1`` to mimic a smaller machine (the
children inherit it); the CPUs usable are printed first.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = "examples/cpu_race/hypotheses.yaml"
COMMANDS = (("bisect --version", ["--version"]), (f"bisect validate {SPEC}", ["validate", SPEC]))
GOAL_S = 0.5
FIRST_TRIAL_GOAL_S = 1.0
POLL_S = 0.002
WINDOW_POLL_S = 0.0002
DELAYS_MS = (0, 2, 5, 10, 20, 50, 200)
# what pip (distlib) writes for `bisect = "heisenbisect.entry:main"`
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from heisenbisect.entry import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def environment(tree: Path) -> dict[str, str]:
    """The tree's ``src`` first on PYTHONPATH, before what was there (dependencies installed with --target)."""
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(tree / "src") + (os.pathsep + rest if rest else "")}


def timings(tree: Path, argv: list[str], repeats: int) -> list[float]:
    env = environment(tree)
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
    env = environment(tree)
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


def _launchers(tmp: Path) -> dict[str, list[str]]:
    script = tmp / "bisect"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    return {"bisect (console script)": [str(script)], "python -m heisenbisect": [sys.executable, "-m", "heisenbisect"]}


def _start_run(tree: Path, argv: list[str], out: str) -> subprocess.Popen:
    env = environment(tree)
    return subprocess.Popen([*argv, "run", SPEC, "--out", out, "--plain"], cwd=tree, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def to_handlers(tree: Path, argv: list[str], out: str) -> tuple[float, bool]:
    """Seconds from the start of `bisect run` to its SIGTERM handler, and whether a SIGTERM sent at
    that moment stopped it cleanly (143, "interrupted", no traceback)."""
    started = time.perf_counter()
    proc = _start_run(tree, argv, out)
    while not catches_sigterm(proc.pid):
        if proc.poll() is not None:
            raise SystemExit(f"{argv}: exited {proc.returncode} before catching SIGTERM: {proc.stderr.read()}")
        time.sleep(WINDOW_POLL_S)
    seconds = time.perf_counter() - started
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate()
    return seconds, proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err


def outcome(tree: Path, argv: list[str], out: str, signum: int, delay_s: float) -> str:
    """What ``signum`` sent ``delay_s`` after the start of `bisect run` does to it."""
    proc = _start_run(tree, argv, out)
    time.sleep(delay_s)
    proc.send_signal(signum)
    _, err = proc.communicate()
    if "Traceback" in err:
        return f"traceback, exit {proc.returncode}"
    if proc.returncode == -signum:
        return "killed by it, silent" if not err.strip() else "killed by it, with output"
    if proc.returncode == 128 + signum and err.strip().endswith("interrupted"):
        return "clean stop"
    return f"exit {proc.returncode}: {err.strip()[-60:]!r}"


def window_rows(label: str, tree: Path, repeats: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="signal-window-") as tmp:
        lines = []
        for name, argv in _launchers(Path(tmp)).items():
            runs = [to_handlers(tree, argv, str(Path(tmp) / "out")) for _ in range(repeats)]
            times = [seconds for seconds, _ in runs]
            lines.append(f"| {label} | {name} | {statistics.median(times):.4f} | {min(times):.4f} | "
                         f"{max(times):.4f} | {sum(clean for _, clean in runs)}/{repeats} |")
        return lines


def bare_interpreter_row(repeats: int) -> str:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return (f"| - | `python -c pass` (a whole run, for scale) | {statistics.median(times):.4f} | {min(times):.4f} | "
            f"{max(times):.4f} | - |")


def sweep_rows(label: str, tree: Path, repeats: int) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="signal-sweep-") as tmp:
        script = _launchers(Path(tmp))["bisect (console script)"]
        lines = []
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            cells = []
            for delay in DELAYS_MS:
                seen = collections.Counter(outcome(tree, script, str(Path(tmp) / "out"), signum, delay / 1000)
                                           for _ in range(repeats))
                cells.append("; ".join(f"{n}x {what}" for what, n in seen.most_common()))
            lines.append(f"| {label} | {signal.Signals(signum).name} | " + " | ".join(cells) + " |")
        return lines


@contextlib.contextmanager
def tree_at(ref: str) -> Iterator[Path]:
    """An older tree: ``ref`` itself when it is a folder, else a temporary worktree at that commit."""
    if Path(ref).is_dir():
        yield Path(ref).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
        old = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), ref], check=True)
        try:
            yield old
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REF", help="also measure this commit (a temporary worktree) or folder")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--first-trial", action="store_true", help="time `bisect run` to its handlers and first trial")
    parser.add_argument("--burn", type=int, default=0, help="busy processes for the loaded rows of --first-trial")
    parser.add_argument("--signal-window", action="store_true", help="time exec to entry.py's handlers")
    parser.add_argument("--sweep", type=int, default=0, metavar="N",
                        help="with --signal-window: N signals per signal and delay, outcomes counted")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    print(f"{len(cpus)} CPUs usable ({cpus[0]}-{cpus[-1]}), load average {os.getloadavg()[0]:.1f}\n", flush=True)
    trees = [(f"before ({args.before})", args.before), ("now", None)] if args.before else [("now", None)]
    if args.signal_window:
        print("| tree | launcher | to handlers s (median) | fastest s | slowest s | SIGTERM then: clean stops |")
        print("|---|---|---|---|---|---|")
        print(bare_interpreter_row(args.repeats), flush=True)
        _each_tree(trees, lambda label, tree: window_rows(label, tree, args.repeats))
        if args.sweep:
            print(f"\n`bisect run {SPEC}` by the console script, a signal after a delay, {args.sweep} runs per cell:\n")
            print("| tree | signal | " + " | ".join(f"after {d} ms" for d in DELAYS_MS) + " |")
            print("|---|---|" + "---|" * len(DELAYS_MS))
            _each_tree(trees, lambda label, tree: sweep_rows(label, tree, args.sweep))
        return
    if args.first_trial:
        print(f"| tree | extra load | load average | handlers s (median) | first trial s (median) | fastest s | "
              f"under {FIRST_TRIAL_GOAL_S} s |")
        print("|---|---|---|---|---|---|---|")
        _each_tree(trees, lambda label, tree: first_trial_rows(label, tree, args.repeats, args.burn))
    else:
        print(f"| tree | command | median s | fastest s | under {GOAL_S} s |")
        print("|---|---|---|---|---|")
        _each_tree(trees, lambda label, tree: rows(label, tree, args.repeats))


def _each_tree(trees: list[tuple[str, str | None]], measure) -> None:
    for label, ref in trees:
        with (tree_at(ref) if ref else contextlib.nullcontext(ROOT)) as tree:
            for line in measure(label, tree):
                print(line, flush=True)

if __name__ == "__main__":
    main()
