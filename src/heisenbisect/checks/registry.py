"""The registered checks, in the order a reply is put to them, and what is derived from them.

A session ends at its first finding, so the order matters: a leaked token makes the tool call
look malformed too, and ``leak`` names the cause. The session classes a run tallies are the
workload's own (``ok``: every round passed; ``error``: a round got no answer) and every class a
check may give; the tally line, the ``sessions_<class>`` metrics and the counts read them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field, create_model

from heisenbisect.checks import (
    answers,
    arguments,
    garbage,
    leak,
    log_signals,
    logprobs,
    malformed,
    no_tool,
    reference,
)
from heisenbisect.checks.base import Check, CheckSettings, SpecSection

CHECKS: tuple[Check, ...] = (
    leak.CHECK,
    garbage.CHECK,
    malformed.CHECK,
    no_tool.CHECK,
    arguments.CHECK,
    answers.CHECK,
    logprobs.CHECK,
    log_signals.CHECK,
    reference.CHECK,
)

OK = "ok"  # the workload's own classes, given by no check
ERROR = "error"


def session_classes() -> tuple[str, ...]:
    """Every class a session may end in: ``ok``, the checks' classes in order, ``error``."""
    return (OK, *(kind for check in CHECKS for kind in check.classes), ERROR)


def corrupted_classes() -> frozenset[str]:
    """The classes that count as a corrupted session (a failure of the trial)."""
    return frozenset(kind for check in CHECKS for kind, bad in check.classes.items() if bad)


def tallied(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """The tally's ``class=N`` pairs: the classes of the checks on by default, ``error`` and ``ok``
    always; a check that must be turned on shows its classes only when they counted some."""
    always = [kind for check in CHECKS if check.defaults().enabled for kind in check.classes]
    opted = [kind for check in CHECKS if not check.defaults().enabled for kind in check.classes]
    return [(kind, counts.get(kind, 0)) for kind in (*always, ERROR, OK)] + [
        (kind, counts[kind]) for kind in opted if counts.get(kind)
    ]


def active(configured: Mapping[str, CheckSettings]) -> list[tuple[Check, CheckSettings]]:
    """The checks a run puts replies to, each with its settings (its defaults where unset); a
    check without settings (the server-log scan, which the server target runs) reads no reply."""
    pairs = [
        (check, configured.get(check.name) or check.defaults())
        for check in CHECKS
        if check.settings_model is not None
    ]
    return [(check, settings) for check, settings in pairs if settings.enabled]


def section_model() -> type[SpecSection]:
    """The spec's ``checks:`` mapping: one key per check with settings, its model and defaults."""
    fields: dict[str, Any] = {
        check.name: (check.settings_model, Field(default_factory=check.settings_model))
        for check in CHECKS
        if check.settings_model is not None
    }
    return create_model("Checks", __base__=SpecSection, **fields)


def configured(section: BaseModel, enable: Iterable[str] = ()) -> dict[str, CheckSettings]:
    """Each check's settings from a spec's ``checks:`` section, with the checks named in
    ``enable`` turned on (``signals.logprobs: true`` is an older spelling of
    ``checks.logprobs.enabled: true``)."""
    settings = {name: getattr(section, name) for name in type(section).model_fields}
    for name in enable:
        settings[name] = settings[name].model_copy(update={"enabled": True})
    return settings
