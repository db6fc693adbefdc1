"""SGLang's effective arguments, read back from a launched server (`read_back` compares them).

SGLang rewrites some arguments after parsing them: it drops ``--enable-dp-attention`` when
``dp_size`` is 1, ``--enable-mixed-chunk`` under speculative decoding, caps or renames others
(``ServerArgs.__post_init__``). So each fresh server is asked for its arguments (``GET
/server_info``, where SGLang 0.5.6 and later serve ``dataclasses.asdict(server_args)`` as
top-level keys; ``/get_server_info`` before).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence

from heisenbisect.stacks.read_back import Override, overrides

INFO_PATHS = ("/server_info", "/get_server_info")
INFO_TIMEOUT_S = 30.0
# flags whose field is named after another spelling (``ServerArgs.from_cli_args``)
FIELD_OF = {
    "tensor_parallel_size": "tp_size",
    "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size",
    "expert_parallel_size": "ep_size",
    "model": "model_path",
}


def read_server_args(
    url: str, api_key: str | None = None, timeout_s: float = INFO_TIMEOUT_S
) -> dict | None:
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


def overridden_args(url: str, api_key: str | None, args: Sequence[str]) -> list[Override] | None:
    """The launch arguments the server at ``url`` overrode; None when it serves no arguments."""
    effective = read_server_args(url, api_key)
    return None if effective is None else overrides(args, effective, FIELD_OF)
