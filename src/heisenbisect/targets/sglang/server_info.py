"""Read a launched server's effective arguments back and name the launch arguments SGLang overrode.

SGLang rewrites some arguments after parsing them, warning in its log at most: it drops
``--enable-dp-attention`` when ``dp_size`` is 1, ``--enable-mixed-chunk`` under speculative
decoding, caps or renames others (``ServerArgs.__post_init__``). An arm whose argument the
server overrode runs the baseline's server under another name, and would be read as a
decoy. So each fresh server is asked for its arguments (``GET /server_info``, where SGLang
0.5.6 and later serve ``dataclasses.asdict(server_args)`` as top-level keys;
``/get_server_info`` before) and every ``--flag`` the launch gave is compared with the
field it sets. A config with an overridden argument is untestable: its trials are skipped,
naming the flag and both values (docs/refusals.md).
"""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Hashable, Sequence

INFO_PATHS = ("/server_info", "/get_server_info")
INFO_TIMEOUT_S = 30.0
# flags whose field is named after another spelling (``ServerArgs.from_cli_args``)
FIELD_OF = {
    "tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size", "expert_parallel_size": "ep_size", "model": "model_path",
}
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


def read_server_args(url: str, api_key: str | None = None, timeout_s: float = INFO_TIMEOUT_S) -> dict | None:
    """The server's effective arguments, or None when it serves none of `INFO_PATHS`."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    for path in INFO_PATHS:
        try:
            request = urllib.request.Request(url + path, headers=headers)
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                body = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError):
            continue
        if isinstance(body, dict):
            return body
    return None


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


def overrides(args: Sequence[str], effective: dict) -> list[Override]:
    """The launch arguments whose field the server reports with another value. A flag with no
    field of its name in ``effective``, or a value of a kind not compared, is passed over."""
    found = []
    for flag, values in given_flags(args).items():
        name = flag[2:].replace("-", "_")
        name = FIELD_OF.get(name, name)
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
        return effective if lowered in TRUE_WORDS else (not effective) if lowered in FALSE_WORDS else None
    if isinstance(effective, (int, float)):
        try:
            return math.isclose(float(word), float(effective), rel_tol=1e-9, abs_tol=1e-12)
        except ValueError:
            return None
    return word == str(effective)


class OverriddenConfigs:
    """Configs found overridden, per process: their later trials are skipped without a launch."""

    def __init__(self) -> None:
        self._found: dict[Hashable, str] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> str | None:
        with self._lock:
            return self._found.get(key)

    def add(self, key: Hashable, message: str) -> None:
        with self._lock:
            self._found[key] = message


OVERRIDDEN = OverriddenConfigs()  # one per process, as SHARED_PROBE: every copy of a target asks it
