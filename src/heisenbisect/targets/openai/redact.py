"""Secrets out of everything the stress client prints or writes, bodies the server sent included.

A gateway's 401 page or a server's 500 body may quote the request's ``Authorization`` header;
a session's detail, excerpt and evidence carry such bodies into ``-v`` output, ``--json`` and
the trial's log, so each is passed through `redact` before it leaves the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MASK = "***"


def secret_forms(secrets: Iterable[str | None]) -> tuple[str, ...]:
    """Each secret as sent and as a JSON string would quote it, longest first (a key inside a key)."""
    forms = set()
    for secret in secrets:
        if secret:
            forms.update(
                {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
            )
    return tuple(sorted(forms, key=len, reverse=True))


def redact(value: Any, forms: tuple[str, ...]) -> Any:
    """``value`` with every form of a secret replaced by ``***``, in strings at any depth (keys too)."""
    if not forms:
        return value
    if isinstance(value, str):
        for form in forms:
            value = value.replace(form, MASK)
        return value
    if isinstance(value, dict):
        return {redact(k, forms): redact(v, forms) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v, forms) for v in value)
    return value
