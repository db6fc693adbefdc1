"""``bad_logprobs``: a logprob that is NaN or infinite, which real threads saw before (or instead
of) visibly corrupted text. Off unless the spec turns it on (``checks.logprobs.enabled``, or the
server section's older ``signals.logprobs: true``); then every request asks for logprobs.

Reads the OpenAI shapes as they arrive: ``choices[].logprobs.content[].logprob`` (and each
``top_logprobs[].logprob``) in a completion, the same in every streamed chunk. Python's JSON
reader takes ``NaN`` and ``-Infinity`` as floats; servers that send them as strings are read too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from heisenbisect.checks.base import Check, CheckSettings, Finding, Reply, State

NONFINITE_WORDS = frozenset(
    {"nan", "-nan", "inf", "-inf", "infinity", "-infinity", "+inf", "+infinity"}
)


class LogprobsSettings(CheckSettings):
    """``checks.logprobs``: off by default, since asking for logprobs costs the server time."""

    enabled: bool = False


class LogprobsCheck(Check):
    name = "logprobs"
    classes = {"bad_logprobs": True}
    settings_model = LogprobsSettings

    def request_fields(self, settings: CheckSettings) -> Mapping[str, Any]:
        return {"logprobs": True}

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        problem = logprob_problem(reply.response)
        return Finding("bad_logprobs", problem) if problem else None


def logprob_problem(response: Any) -> str | None:
    """The first logprob in ``response`` (a completion, or ``{"chunks": [...]}``) that is not a
    finite number, as ``"token 'x': logprob nan"``; None when every one is finite."""
    for item in _logprob_items(response):
        value = item.get("logprob")
        if _nonfinite(value):
            return f"token {item.get('token')!r}: logprob {value}"
    return None


def _logprob_items(node: Any) -> Iterator[dict[str, Any]]:
    """Every mapping with a ``logprob`` key, depth first."""
    if isinstance(node, dict):
        if "logprob" in node:
            yield node
        for value in node.values():
            yield from _logprob_items(value)
    elif isinstance(node, list):
        for value in node:
            yield from _logprob_items(value)


def _nonfinite(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return not math.isfinite(value)
    return isinstance(value, str) and value.strip().lower() in NONFINITE_WORDS


CHECK = LogprobsCheck()
