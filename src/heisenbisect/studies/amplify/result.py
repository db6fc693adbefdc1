"""What an amplification (``bisect amplify``) answers, as values, with the exit code that says
it to scripts: 0 confirmed, 1 not confirmed or nothing beats the current settings, 3 the
failure never fired (README, exit codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from heisenbisect.decide.amplify import Estimate
from heisenbisect.decide.amplify_outcome import Ending, Summary
from heisenbisect.exit_codes import ExitCode
from heisenbisect.layout import AmplifyPaths
from heisenbisect.records import Config
from heisenbisect.reports.amplify import headline
from heisenbisect.studies.amplify.search import CURRENT

EXIT = {
    Ending.CONFIRMED: ExitCode.DECIDED,
    Ending.NOT_CONFIRMED: ExitCode.UNDECIDED,
    Ending.CURRENT_BEST: ExitCode.UNDECIDED,
    Ending.NEVER_FAILED: ExitCode.CANNOT_REPRODUCE,
}


@dataclass(frozen=True)
class MeasuredSettings:
    """Settings of the stress knobs and what their runs measured, each with its interval."""

    knobs: dict[str, str]  # knob -> value, as amplify.json's "best"; {} for the current settings
    runs: int
    failed_runs: int
    rate: float  # the run-failure rate (posterior mean)
    rate_interval: tuple[float, float]
    runs_per_s: float
    runs_per_s_interval: tuple[float, float]
    bits_per_s: float  # the objective: bits about a culprit per second of run (docs/amplify.md)
    bits_per_s_interval: tuple[float, float]


@dataclass(frozen=True)
class AmplifyResult:
    """What ``bisect amplify`` prints and writes, as values."""

    study: str
    ending: str  # confirmed; not_confirmed, current_best (nothing beats the current settings); never_failed
    exit_code: int  # the CLI's: 0 confirmed, 1 not confirmed or current best, 3 never failed
    headline: str
    best: MeasuredSettings
    current: MeasuredSettings
    measured_by: (
        str  # "confirmation" (its fresh, interleaved runs) or "search" (no confirmation ran)
    )
    speedup: float | None  # best over current bits per second, from the confirmation
    p_value: float | None  # the confirmation's one-sided sequential p-value
    looks: int | None  # the confirmation's looks
    search_runs: int
    candidates: int
    confidence: float
    report: Path  # amplify.md
    plot: Path  # amplify.png
    results: Path  # amplify.json
    amplified: Path | None  # amplified.yaml, only when confirmed
    optuna_db: Path
    dashboard: str  # the optuna-dashboard command that opens optuna_db
    search_store: Path  # amplify.sqlite
    confirm_store: Path | None  # confirm.sqlite, when a confirmation ran
    logs: Path
    details: object = field(repr=False)  # the report's `decide.amplify_outcome.Summary`

    @property
    def confirmed(self) -> bool:
        return self.exit_code == 0


def answer(study: str, summary: Summary, paths: AmplifyPaths) -> AmplifyResult:
    """What the report says, as values, with the exit code that says it to scripts."""

    def measured(config: Config, e: Estimate) -> MeasuredSettings:
        return MeasuredSettings(
            knobs=dict(config.changes),
            runs=e.runs,
            failed_runs=e.failed_runs,
            rate=float(e.rate),
            rate_interval=_floats(e.rate_interval),
            runs_per_s=float(e.runs_per_s),
            runs_per_s_interval=_floats(e.runs_per_s_interval),
            bits_per_s=float(e.value),
            bits_per_s_interval=_floats(e.interval),
        )

    c = summary.confirmation
    confirmed = summary.ending is Ending.CONFIRMED
    return AmplifyResult(
        study=study,
        ending=summary.ending.value,
        exit_code=int(EXIT[summary.ending]),
        headline=headline(summary),
        best=measured(summary.best, summary.best_estimate),
        current=measured(CURRENT, summary.current_estimate),
        measured_by="confirmation" if c else "search",
        speedup=None if c is None else float(c.speedup),
        p_value=None if c is None else float(c.p_value),
        looks=None if c is None else c.looks_done,
        search_runs=summary.search_runs,
        candidates=summary.candidates,
        confidence=summary.confidence,
        report=paths.report,
        plot=paths.plot,
        results=paths.results,
        amplified=paths.amplified if confirmed else None,
        optuna_db=paths.optuna_db,
        dashboard=f"optuna-dashboard {paths.storage_url}",
        search_store=paths.search_store,
        confirm_store=paths.confirm_store if c else None,
        logs=paths.logs,
        details=summary,
    )


def _floats(bounds: tuple[float, float]) -> tuple[float, float]:
    return float(bounds[0]), float(bounds[1])
