"""Where and how a study ran: recorded in the store when it runs, shown in its report.

A race's rate depends on the machine and on how many trials share it (or a GPU), so a
report that cannot say where its numbers came from cannot be reproduced. Recorded at run
time (``bisect report`` may re-render elsewhere), never importing torch: GPU names come from
``nvidia-smi`` when it is on PATH. Each run of the study (the first and every resume) adds a
session: the 1-minute load average when it started and when it ended, and its trials in
flight, which `reports.load` reads as evidence (README, "Reading a report").
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from heisenbisect import __version__
from heisenbisect.hypotheses.model import Spec
from heisenbisect.store import Store

META_KEY = "environment"
FINISHED_KEY = "finished_at"
CREATED_KEY = "created_at"
SESSIONS_KEY = "sessions"  # one per run of the study: started_at, load_start, in_flight, finished_at, load_end


def record_start(store: Store, spec: Spec, target_folder: Path, runner: str, in_flight: int) -> None:
    """Record this run's environment in the store (a resumed run records its own).

    ``in_flight`` is the runner's capacity, not the spec's ``parallel``: a local runner caps it at
    the GPUs' seats, so the spec's number can overstate how many trials shared the machine."""
    execution = spec.execution
    environment = {
        "heisenbisect": __version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "platform": platform.platform(),
        "gpus": gpu_names(),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "target_commit": target_commit(target_folder),
        "runner": runner,
        "parallel": in_flight,
        "gpus_per_trial": execution.gpus_per_trial,
        "trials_per_gpu": execution.trials_per_gpu,
        "started_at": time.time(),
        "command": " ".join(sys.argv),
    }
    store.set_meta(META_KEY, json.dumps(environment))
    session = {"started_at": environment["started_at"], "load_start": load_average(), "in_flight": in_flight}
    store.set_meta(SESSIONS_KEY, json.dumps([*sessions_of(store), session]))


def _in_flight(parallel: int | None) -> str:
    return "one trial at a time" if parallel == 1 else f"{parallel} trials in parallel"


def record_finish(store: Store) -> None:
    """The end of this run: its time, and the load average it ends under (its own trials included)."""
    now = time.time()
    store.set_meta(FINISHED_KEY, str(now))
    sessions = sessions_of(store)
    if sessions:
        sessions[-1] |= {"finished_at": now, "load_end": load_average()}
        store.set_meta(SESSIONS_KEY, json.dumps(sessions))


def sessions_of(store: Store) -> list[dict]:
    """Every run of the study so far, oldest first (none in a store older than this record)."""
    return json.loads(store.meta(SESSIONS_KEY) or "[]")


def load_average() -> float | None:
    """The 1-minute load average: processes running or waiting for a CPU, over the last minute."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):  # not on this platform
        return None


def cpu_model() -> str | None:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform says, else None."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def gpu_names() -> list[str]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.splitlines() if line.strip()]


def target_commit(folder: Path) -> str | None:
    """The commit the target's folder is at (``+dirty`` with uncommitted changes), if in git."""
    from heisenbisect.git import open_repo, resolve

    try:
        repo = open_repo(folder, "target.cwd")
        sha = resolve(repo, "HEAD", "target.cwd")
        return sha + ("+dirty" if repo.is_dirty(untracked_files=False) else "")
    except Exception:  # no git, no commit yet, git missing: nothing to record
        return None


def environment_of(store: Store) -> dict | None:
    text = store.meta(META_KEY)
    if not text:
        return None
    environment = json.loads(text)
    created, finished = store.meta(CREATED_KEY), store.meta(FINISHED_KEY)
    environment["created_at"] = float(created) if created else None
    environment["finished_at"] = float(finished) if finished else None
    environment["sessions"] = sessions_of(store)
    return environment


def markdown_lines(environment: dict | None) -> list[str]:
    if not environment:
        return []
    gpus = environment.get("gpus") or []
    per_trial = environment.get("gpus_per_trial") or 0
    per_gpu = environment.get("trials_per_gpu")
    if per_gpu:
        sharing = (
            "one trial per GPU at a time (execution.trials_per_gpu)" if per_gpu == 1
            else f"up to {per_gpu} trials share each GPU (execution.trials_per_gpu)"
        )
    elif per_trial:
        sharing = f"{per_trial:g} GPU per trial" + (f", so {1 / per_trial:g} trials share a GPU" if per_trial < 1 else "")
    else:
        sharing = "trials are not placed on GPUs (gpus_per_trial 0): all trials at once share this host's CPUs and GPUs"
    rows = [
        ("heisenbisect", environment.get("heisenbisect")),
        ("Python", environment.get("python")),
        ("host", f"{environment.get('host')} ({environment.get('platform')})"),
        ("CPUs", _cpus(environment)),
        ("GPUs", ", ".join(gpus) if gpus else "none seen (no nvidia-smi on PATH, or no GPU)"),
        ("target commit", environment.get("target_commit") or "not in a git repository"),
        ("runner", f"{environment.get('runner')}, {_in_flight(environment.get('parallel'))}; {sharing}"),
        ("load average (1 min)", _loads(environment.get("sessions") or [])),
        ("started", _when(environment.get("created_at"))),
        ("latest run started", _when(environment.get("started_at"))),
        ("wall time", _wall(environment.get("created_at"), environment.get("finished_at"))),
    ]
    lines = ["## Environment", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {str(value).replace('|', chr(92) + '|')} |" for name, value in rows]
    return lines + [""]


def _cpus(environment: dict) -> str:
    if "cpus" not in environment:
        return "not recorded (a store older than this record)"
    usable, count = environment.get("cpus_usable"), environment.get("cpus")
    usable_text = f", {usable} usable by this process" if usable and usable != count else ""
    return f"{count} ({environment.get('cpu_model') or 'model unknown'}){usable_text}"


def _loads(sessions: list[dict]) -> str:
    """The first run's start and the last run's end, then each resume's own."""
    if not sessions:
        return "not recorded (a store older than this record)"
    text = f"{_load(sessions[0].get('load_start'))} at the start, {_load(sessions[-1].get('load_end'))} at the end"
    if len(sessions) > 1:
        text += "; by run: " + "; ".join(
            f"{f'resume {i}' if i else 'first'} {_load(s.get('load_start'))} -> {_load(s.get('load_end'))}"
            f" ({_in_flight(s.get('in_flight'))})"
            for i, s in enumerate(sessions)
        )
    return text


def _load(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _when(stamp: float | None) -> str:
    if not stamp:
        return "-"
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _wall(start: float | None, end: float | None) -> str:
    if not start or not end or end < start:
        return "-"
    seconds = int(end - start)
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m {seconds % 60:02d}s (first trial stored to last run's end, pauses included)"
