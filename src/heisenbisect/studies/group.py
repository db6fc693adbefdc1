"""The group-screening study: the glue from a spec to the `GroupScreening` strategy, the engine and the store."""

from __future__ import annotations

from heisenbisect.decide.group.strategy import GroupScreening, GroupSettings
from heisenbisect.engine import replay
from heisenbisect.hypotheses.model import Spec
from heisenbisect.store import Store
from heisenbisect.studies.one_at_a_time import env_variables, settings_of


def group_settings_of(spec: Spec) -> GroupSettings:
    s = spec.statistics
    return GroupSettings(
        screening=settings_of(spec), group_size=s.group_size, expected_effects=s.expected_effects
    )


def new_group_screening(spec: Spec) -> GroupScreening:
    candidates = [change for config in spec.arms() for change in config.changes]
    return GroupScreening(spec.baseline, candidates, group_settings_of(spec), env_variables(spec))


def replayed_group_screening(spec: Spec, store: Store) -> GroupScreening:
    """Rebuilt from the store in arrival order: the same tree, the same decisions."""
    screening = new_group_screening(spec)
    replay(screening, store)
    return screening


def progress_rows(screening: GroupScreening) -> list[tuple[str, int, int, str | None]]:
    return screening.in_progress()
