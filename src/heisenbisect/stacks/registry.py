"""Every serving stack heisenbisect knows, by name: a spec's ``server.preset``, the CLI's
``bisect factors|suspects STACK``. A new stack is its module in this package and one line here.
"""

from __future__ import annotations

from heisenbisect.stacks import sglang, vllm
from heisenbisect.stacks.base import Stack

STACKS: dict[str, Stack] = {
    stack.name: stack
    for stack in (
        sglang.STACK,
        vllm.STACK,
    )
}

# where a server of an unknown stack (`bisect stress`, a spec's own launch) may say its version
VERSION_PATHS: tuple[str, ...] = tuple(
    dict.fromkeys(path for stack in STACKS.values() for path in stack.version_paths)
)


def stack_named(name: str) -> Stack:
    """The registered stack ``name``; ValueError listing the known names otherwise."""
    try:
        return STACKS[name]
    except KeyError:
        raise ValueError(f"unknown stack {name!r}: known stacks are {known_names()}") from None


def known_names() -> str:
    return ", ".join(sorted(STACKS))


def with_flag_readers() -> list[str]:
    """The stacks whose flags `bisect factors` and `bisect suspects` can read, sorted."""
    return sorted(name for name, stack in STACKS.items() if stack.flags and stack.suspects)
