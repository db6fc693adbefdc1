"""The SGLANG_* environment flags the fake SGLang server honours, as a real build on this machine would.

Imported by tests/sglang_fake_server.py at start-up. The story's flags act inside the server
(multi-stream overlap off removes the race, topk V2 off makes it worse); here live the flags
that decide whether the server starts at all: flags that select ROCm-only kernels (AITER,
ROCm, HIP) or another accelerator's (NPU) make a real SGLang on an NVIDIA or CPU machine die
at start-up with an import error, so the fake dies the same way. Every other flag is read and
changes nothing, as most of the 461 flags of `bisect factors sglang` do for a given model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

FALSE_VALUES = ("0", "false", "no", "off", "")
FOREIGN_KERNELS = re.compile(r"^SGLANG_.*(AITER|ROCM|_HIP_|_NPU_)")


def startup_error(env: Mapping[str, str]) -> str | None:
    """The error a real server would die with under ``env``, or None if it starts."""
    for name in sorted(env):
        if FOREIGN_KERNELS.search(name) and env[name].lower() not in FALSE_VALUES:
            module = "aiter" if "AITER" in name or "ROCM" in name or "HIP" in name else "torch_npu"
            return (
                f"Traceback (most recent call last):\n  File \"sglang/srt/layers/utils.py\", line 41, in <module>\n"
                f"ModuleNotFoundError: No module named '{module}' (required by {name}={env[name]})"
            )
    return None
