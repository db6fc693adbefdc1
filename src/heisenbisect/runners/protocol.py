"""The trial protocol: what a target receives, and how its report turns into an `Outcome`.

A target gets its config as environment variables and arguments, plus
``HEISENBISECT_TRIAL_ID``, ``HEISENBISECT_SEED`` and ``HEISENBISECT_RESULT`` (a path).
It reports JSON ``{"failures": F, "total": N, "metrics": {...}}`` in that file or as
its last stdout line; otherwise its exit code counts as `git bisect run` reads one:
0 clean, 125 untestable, any other 1..127 failed. Death by a signal is an error.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from heisenbisect.records import Outcome, Trial, TrialStatus

SKIP_EXIT_CODE = 125


def trial_environment(
    trial: Trial, result_path: Path, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The full environment of a trial process: ``base`` plus the config's and the protocol's."""
    env = merged_environment(trial.env, base)
    env["HEISENBISECT_TRIAL_ID"] = trial.trial_id
    env["HEISENBISECT_SEED"] = str(trial.seed)
    env["HEISENBISECT_RESULT"] = str(result_path)
    return env


def merged_environment(changes: Mapping[str, str | None], base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``changes`` applied; None unsets."""
    env = dict(os.environ if base is None else base)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


@dataclass(frozen=True)
class Report:
    """What a target reported: a JSON result, or nothing (then the exit code decides)."""

    failures: int
    total: int
    metrics: Mapping[str, float]


class ReportError(ValueError):
    """The target wrote a result that does not follow the protocol."""


def parse_report(text: str) -> Report:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"result is not JSON: {exc}") from None
    if not isinstance(data, dict) or "failures" not in data:
        raise ReportError("result JSON needs a 'failures' field")
    failures, total = data["failures"], data.get("total", 1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (failures, total)):
        raise ReportError(f"'failures' and 'total' must be integers, got {failures!r}, {total!r}")
    if not 0 <= failures <= total or total < 1:
        raise ReportError(f"need 0 <= failures <= total and total >= 1, got {failures}/{total}")
    metrics = data.get("metrics") or {}
    if not isinstance(metrics, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in metrics.values()
    ):
        raise ReportError("'metrics' must map names to numbers")
    return Report(failures, total, {str(k): float(v) for k, v in metrics.items()})


def find_report(result_path: Path, last_stdout_line: str) -> Report | None:
    """The result file wins; else a last stdout line that looks like a result object."""
    if result_path.exists() and result_path.stat().st_size > 0:
        return parse_report(result_path.read_text())
    line = last_stdout_line.strip()
    if line.startswith("{") and '"failures"' in line:
        return parse_report(line)
    return None


def outcome_from_exit(
    trial: Trial,
    returncode: int,
    report_source: tuple[Path, str],
    *,
    crashes_count: bool,
    duration_s: float,
    log_path: Path | None,
) -> Outcome:
    """Turn a finished process into an outcome, following the protocol above."""

    def make(status: TrialStatus, failures: int = 0, total: int = 0, metrics=None, detail="") -> Outcome:
        return trial_outcome(
            trial, status, failures=failures, total=total, metrics=metrics,
            duration_s=duration_s, log_path=log_path, detail=detail,
        )

    if returncode < 0 or returncode > 127:
        signum = -returncode if returncode < 0 else returncode - 128
        detail = f"killed by {signal_name(signum)}"
        if crashes_count:
            return make(TrialStatus.OK, 1, 1, detail=detail + " (crashes count as failures)")
        return make(TrialStatus.ERROR, detail=detail)
    if returncode == SKIP_EXIT_CODE:
        return make(TrialStatus.SKIP, detail="exit 125: untestable")
    try:
        report = find_report(*report_source)
    except ReportError as exc:
        return make(TrialStatus.ERROR, detail=str(exc))
    if report is not None:
        return make(TrialStatus.OK, report.failures, report.total, report.metrics)
    return make(TrialStatus.OK, 1 if returncode else 0, 1, detail=f"exit {returncode}")


def trial_outcome(
    trial: Trial,
    status: TrialStatus,
    *,
    failures: int = 0,
    total: int = 0,
    metrics: Mapping[str, float] | None = None,
    duration_s: float = 0.0,
    log_path: Path | None = None,
    detail: str = "",
) -> Outcome:
    """The outcome of ``trial``, keyed as the store keys it."""
    return Outcome(
        trial_id=trial.trial_id,
        config_key=trial.config.key,
        index=trial.index,
        status=status,
        failures=failures,
        total=total,
        metrics=metrics or {},
        duration_s=duration_s,
        log_path=str(log_path) if log_path else None,
        detail=detail,
    )


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
