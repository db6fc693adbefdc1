"""Where and how a study ran, read from its store and shown in its report.

The study records it when it runs (`studies.run_record`, under the keys `study_meta` names): the
machine, the runner and its trials in flight, and one session per run of the study (the first
and every resume) with the 1-minute load average when it started and when it ended, which
`decide.cautions` reads as evidence (README, "Reading a report").
"""

from __future__ import annotations

import datetime
from typing import Any

from heisenbisect.decide.cautions import session_commits
from heisenbisect.machine import NO_REPOSITORY
from heisenbisect.reports.cautions import runs_text

VERSIONS = (
    ("torch", "torch"),
    ("cuda", "CUDA (driver's)"),
    ("nvidia_driver", "NVIDIA driver"),
)  # shown when recorded


def _in_flight(parallel: int | None) -> str:
    return "one trial at a time" if parallel == 1 else f"{parallel} trials in parallel"


def rows(environment: dict, with_host: bool = True) -> list[tuple[str, Any]]:
    """The environment table's rows; a record without a runner (a commit bisection's, or an
    amplification stored before it recorded one: described when its report is written) shows
    the load then."""
    rows = [
        (
            "heisenbisect",
            f"{environment.get('heisenbisect')} "
            f"(install: `{install_line_of(environment, environment.get('heisenbisect'))}`)",
        ),
        ("Python", environment.get("python")),
        ("host", f"{environment.get('host')} ({environment.get('platform')})")
        if with_host
        else ("platform", environment.get("platform")),
        ("CPUs", _cpus(environment)),
        (
            "GPUs",
            ", ".join(environment.get("gpus") or [])
            or "none seen (no nvidia-smi on PATH, or no GPU)",
        ),
    ]
    rows += [(name, environment[key]) for key, name in VERSIONS if environment.get(key)]
    commits = session_commits(environment)
    rows.append(
        (
            "target commit",
            ", ".join(f"{commit} ({runs_text(n)})" for commit, n in commits)
            if len(commits) > 1
            else environment.get("target_commit")
            or environment.get("target_repository")
            or NO_REPOSITORY,
        )
    )
    if "runner" not in environment:
        return rows + [
            (
                "load average (1 min)",
                _load(environment.get("load")) + " when this report was written",
            )
        ]
    return rows + [
        (
            "runner",
            f"{environment.get('runner')}, {_in_flight(environment.get('parallel'))}; {_sharing(environment)}",
        ),
        ("load average (1 min)", _loads(environment.get("sessions") or [])),
        ("started", _when(environment.get("created_at"))),
        ("latest run started", _when(environment.get("started_at"))),
        ("wall time", _wall(environment.get("created_at"), environment.get("finished_at"))),
    ]


def markdown_lines(environment: dict | None, with_host: bool = True) -> list[str]:
    if not environment:
        return []
    lines = ["## Environment", "", "| | |", "|---|---|"]
    lines += [
        f"| {name} | {str(value).replace('|', chr(92) + '|')} |"
        for name, value in rows(environment, with_host)
    ]
    return lines + [""]


def install_line(version: str | None, commit: str | None = None, source: str | None = None) -> str:
    """How to install the heisenbisect that wrote a report. Run from a checkout (``commit``), the
    code is that commit's, which no release may hold: its source URL at the commit, or, with no
    remote recorded, the checkout itself; otherwise the release."""
    if not commit:
        return f"pip install 'heisenbisect=={version}'"
    sha, dirty = commit.removesuffix("+dirty"), commit.endswith("+dirty")
    edits = " (it ran with uncommitted edits besides)" if dirty else ""
    if source:
        return f"pip install 'git+{source}@{sha}'{edits}"
    return f"git checkout {sha} && pip install -e . (in a heisenbisect checkout){edits}"


def install_line_of(environment: dict | None, version: str | None) -> str:
    """`install_line` for a stored environment record (an older store has no source fields)."""
    environment = environment or {}
    return install_line(
        environment.get("heisenbisect") or version,
        environment.get("heisenbisect_commit"),
        environment.get("heisenbisect_source"),
    )


def _sharing(environment: dict) -> str:
    per_trial = environment.get("gpus_per_trial") or 0
    per_gpu = environment.get("trials_per_gpu")
    if per_gpu:
        return (
            "one trial per GPU at a time (execution.trials_per_gpu)"
            if per_gpu == 1
            else f"up to {per_gpu} trials share each GPU (execution.trials_per_gpu)"
        )
    if per_trial:
        return f"{per_trial:g} GPU per trial" + (
            f", so {1 / per_trial:g} trials share a GPU" if per_trial < 1 else ""
        )
    return "trials are not placed on GPUs (gpus_per_trial 0): all trials at once share this host's CPUs and GPUs"


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
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )


def _wall(start: float | None, end: float | None) -> str:
    if not start or not end or end < start:
        return "-"
    seconds = int(end - start)
    took = f"{seconds // 3600}h {seconds % 3600 // 60:02d}m {seconds % 60:02d}s"
    return f"{took} (first trial stored to last run's end, pauses included)"
