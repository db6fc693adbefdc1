"""What a check is: a name, the session classes it may give, its spec settings, and `inspect`.

A check sees one round at a time: the request as sent, the reply (`Reply`) and its own `State`
(its settings, a scratch mapping for the session and one for the whole stress run). It answers
None (nothing wrong) or a `Finding`; a session takes the class of its first finding and stops.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class SpecSection(BaseModel):
    """A mapping of the spec: frozen, no unknown keys (as every section of the spec is)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class CheckSettings(SpecSection):
    """The spec keys every check has: ``enabled``. A check with more subclasses this."""

    enabled: bool = True


@dataclass(frozen=True)
class Finding:
    """What is wrong with one reply: the session class it gives and why, briefly.

    ``excerpt`` is what the log shows of the reply; empty: the assistant message. ``evidence``:
    what the check knows beyond the reply (what was asked), added to the session's evidence."""

    kind: str
    detail: str
    excerpt: str = ""
    evidence: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Reply:
    """One round's answer as a check reads it.

    ``message`` is the assistant message (``choices[0].message``, or the deltas added up as the
    OpenAI client does); ``response`` the whole body, or ``{"chunks": [...]}`` when streamed;
    ``deltas`` each streamed chunk's delta in order (None: not streamed); ``unmerged`` why the
    client could not add the deltas up (then ``message`` is empty)."""

    message: Mapping[str, Any]
    response: Any
    deltas: tuple[Mapping[str, Any], ...] | None = None
    unmerged: str = ""

    @property
    def streamed(self) -> bool:
        return self.deltas is not None

    def said(self, detail: str) -> str:
        """``detail`` as a finding says it: prefixed with ``streamed`` for a streamed reply."""
        return f"streamed {detail}" if self.streamed else detail


@dataclass
class State:
    """A check's settings and scratch: ``session`` lives for one session, ``trial`` for one run."""

    settings: CheckSettings
    session: dict[str, Any] = field(default_factory=dict)
    trial: dict[str, Any] = field(default_factory=dict)


class Check:
    """The base of every check; a check module makes one and lists it in `registry.CHECKS`.

    ``classes`` maps each session class the check may give to whether it counts as corrupted.
    ``settings_model`` is its section under the workload's ``checks:`` (None: it has none there).
    """

    name: ClassVar[str]
    classes: ClassVar[Mapping[str, bool]] = {}
    settings_model: ClassVar[type[CheckSettings] | None] = CheckSettings

    def defaults(self) -> CheckSettings:
        """The settings when the spec says nothing of this check."""
        return (self.settings_model or CheckSettings)()

    def request_fields(self, settings: CheckSettings) -> Mapping[str, Any]:
        """Keys this check adds to every request (``logprobs: true``); none by default."""
        return {}

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        """What is wrong with ``reply`` in this check's terms, or None."""
        return None

    def question(self, settings: CheckSettings, rng: random.Random) -> list[dict[str, str]]:
        """The messages of a plain-text request (no tools) each session sends before its tool
        rounds, put to every check like the rest; none by default. ``rng`` is the session's."""
        return []

    def metrics(self, trial: Mapping[str, Any]) -> Mapping[str, float]:
        """Numbers this check adds to a run's metrics, from its run-wide scratch; none by default."""
        return {}


def text_of(value: Any) -> str:
    """A message field as text: strings as they are, anything else as its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def tool_calls(message: Mapping[str, Any]) -> Any:
    """The message's ``tool_calls``, ``[]`` when absent (other values are `malformed`'s)."""
    return message.get("tool_calls") or []
