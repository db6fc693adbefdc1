"""The stack a spec describes itself (``target.server`` without a preset): its command
template is the whole launch command and ``ready`` says when it is up."""

from __future__ import annotations

from heisenbisect.stacks.base import Stack
from heisenbisect.stacks.registry import VERSION_PATHS


def custom_stack(
    launch: tuple[str, ...], ready_path: str | None, ready_status: int, ready_log: str | None
) -> Stack:
    """A stack the spec describes: its flags are not probed (no one ``--help`` format fits every
    server); its requests name the spec's model, when it gives one (``transformers serve`` lists
    only hub models in /v1/models); its version is asked of every path a known stack serves."""
    return Stack(
        name="",
        title="the server",
        launch=launch,
        ready_path=ready_path,
        ready_status=ready_status,
        ready_log=ready_log,
        reserved=("--host", "--port"),
        names_model=True,
        version_paths=VERSION_PATHS,
    )
