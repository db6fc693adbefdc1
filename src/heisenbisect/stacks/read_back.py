"""Compare a launched server's effective arguments with the ones it was launched with.

A stack may rewrite an argument after parsing it (SGLang drops ``--enable-dp-attention`` when
``dp_size`` is 1), warning in its log at most; an arm whose argument the server overrode runs the
baseline's server under another name, and would be read as a decoy. A stack that serves its
effective arguments gives a read-back hook (`base.ReadBack`) built on these comparisons: every
``--flag`` the launch gave is compared with the field it sets. A config with an overridden
argument is untestable: its trials are skipped, naming the flag and both values (docs/refusals.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SECRET_WORDS = ("key", "token", "secret", "password")  # never compared, so never printed
TRUE_WORDS, FALSE_WORDS = ("true", "1", "yes"), ("false", "0", "no")


@dataclass(frozen=True)
class Override:
    """A launch argument the server does not run with."""

    flag: str
    asked: str  # as the launch gave it ("" for a switch)
    runs: object  # the server's value

    def text(self) -> str:
        asked = f"launched it with {self.asked}" if self.asked else "turns it on"
        return f"{self.flag}: the config {asked}, the server runs {json.dumps(self.runs)}"


def given_flags(args: Sequence[str]) -> dict[str, list[str]]:
    """``--flag`` -> the values after it (``--flag=value`` too); a later one wins, as in argparse."""
    flags: dict[str, list[str]] = {}
    current: list[str] | None = None
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            flag, _, value = arg.partition("=")
            current = flags[flag] = [value] if "=" in arg else []
        elif current is not None:
            current.append(arg)
    return flags


def overrides(
    args: Sequence[str], effective: dict, field_of: Mapping[str, str] | None = None
) -> list[Override]:
    """The launch arguments whose field the server reports with another value (``field_of``: a
    flag's field where the stack names it otherwise). A flag with no field of its name in
    ``effective``, or a value of a kind not compared, is passed over."""
    found = []
    for flag, values in given_flags(args).items():
        name = flag[2:].replace("-", "_")
        name = (field_of or {}).get(name, name)
        if name not in effective or any(word in name for word in SECRET_WORDS):
            continue
        same = _same(values, effective[name])
        if same is False:
            found.append(Override(flag, " ".join(values), effective[name]))
    return found


def _same(values: list[str], effective: object) -> bool | None:
    """Whether the given words mean the effective value; None when that cannot be told."""
    if isinstance(effective, list):
        if len(values) != len(effective):
            return False
        each = [_same([v], e) for v, e in zip(values, effective)]
        return None if None in each else all(each)
    if not values:  # a switch: store_true
        return effective is True if isinstance(effective, bool) else None
    if len(values) > 1 or isinstance(effective, dict):
        return None
    word = values[0]
    if effective is None:
        return False
    if isinstance(effective, bool):
        lowered = word.lower()
        return (
            effective
            if lowered in TRUE_WORDS
            else (not effective)
            if lowered in FALSE_WORDS
            else None
        )
    if isinstance(effective, (int, float)):
        try:
            return math.isclose(float(word), float(effective), rel_tol=1e-9, abs_tol=1e-12)
        except ValueError:
            return None
    return word == str(effective)
