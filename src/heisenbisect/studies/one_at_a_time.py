"""One-at-a-time screening: the glue from a spec to the `Screening` strategy (an arm per
factor level against the baseline), replayed from the store."""

from __future__ import annotations

from heisenbisect.decide.screening import Screening, ScreeningSettings
from heisenbisect.engine import replay
from heisenbisect.hypotheses.model import Spec
from heisenbisect.store import Store


def settings_of(spec: Spec) -> ScreeningSettings:
    s = spec.statistics
    return ScreeningSettings(
        confidence=s.confidence,
        zero_rate=s.zero_rate,
        min_reduction=s.min_reduction,
        max_trials=s.max_trials,
        first_look=min(s.first_look, s.max_trials),
    )


def env_variables(spec: Spec) -> dict[str, str]:
    """Each env factor's variable: what its arm's reads are checked for (``not_applied``)."""
    return {f.name: f.env_var for f in spec.factors if f.kind == "env"}


def new_screening(spec: Spec) -> Screening:
    return Screening(spec.baseline, spec.arms(), settings_of(spec), env_variables(spec))


def progress_rows(screening: Screening) -> list[tuple[str, int, int, str | None]]:
    return [
        (config.key, ev.runs, ev.failed_runs, verdict.value if verdict else None)
        for config, ev, verdict in screening.in_progress()
    ]


def replayed_screening(spec: Spec, store: Store) -> Screening:
    screening = new_screening(spec)
    replay(screening, store)
    return screening
