"""The server target a spec's ``target.server`` section describes (``target.sglang`` loads into
one): a registered stack (its preset), or the spec's own."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Literal

from heisenbisect.checks.log_signals import LogSignal
from heisenbisect.checks.registry import configured
from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.base import Stack
from heisenbisect.stacks.custom import custom_stack
from heisenbisect.stacks.registry import STACKS, VERSION_PATHS
from heisenbisect.targets.command import with_this_python
from heisenbisect.targets.openai.tools import ToolSet
from heisenbisect.targets.openai.workload import MAX_RESPONSE_BYTES, StressSettings
from heisenbisect.targets.server.target import ServerTarget


def make_server_target(spec, base_dir: Path | None = None) -> ServerTarget:
    """The target of ``target: {server: ...}``; raises HeisenbisectError.

    A preset gives the stack and its launcher (``launch`` then replaces the launcher only); without
    one, ``launch`` is the whole command template and ``ready`` says when the server is up. A
    launcher's bare ``python`` is the interpreter running heisenbisect, as in ``target.command``
    (`targets.command.with_this_python`): SGLang installed in the venv, not on PATH, is found.
    """
    server = spec.target.server
    if server.preset:
        stack = STACKS[server.preset]
        launcher = tuple(with_this_python(split(server.launch or list(stack.launcher))))
    else:
        ready = server.ready
        stack = custom_stack(
            tuple(split(server.launch)),
            ready.path if ready.log is None else None,
            ready.status,
            ready.log,
        )
        launcher = ()
    signals = server.signals
    return ServerTarget(
        server.model,
        stack=stack,
        launcher=launcher,
        server_args=tuple(checked_args(server.server_args, stack, f"target.{spec.target.key}")),
        env=server.env,
        log_signals=tuple(LogSignal(s.name, s.pattern, s.below) for s in signals.log),
        startup_timeout_s=server.startup_timeout,
        trials_per_launch=server.trials_per_launch,
        workload=stress_settings(
            server.workload, logprobs=signals.logprobs, version_paths=stack.version_paths
        ),
        trial_timeout_s=spec.target.timeout,
        crashes_count=spec.target.crashes_count,
        cwd=str(base_dir / spec.target.cwd) if base_dir and spec.target.cwd else spec.target.cwd,
    )


def split(value: list[str] | str) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else list(value)


def checked_args(server_args: list[str] | str, stack: Stack, where: str) -> list[str]:
    """``server_args`` as a list; a flag heisenbisect chooses per launch is refused."""
    args = split(server_args)
    reserved = [a for a in args if a.split("=", 1)[0] in stack.reserved]
    if reserved:
        raise HeisenbisectError(
            f"{where}.server_args: {', '.join(reserved)} is chosen per server by heisenbisect "
            f"(the model comes from {where}.model); remove it"
        )
    return args


def stress_settings(
    w, logprobs: bool = False, version_paths: tuple[str, ...] = VERSION_PATHS
) -> StressSettings:
    """The workload section as the stress client's settings; ``version_paths``: where the stack
    says its version (every registered stack's paths when none is named)."""
    return StressSettings(
        sessions=w.sessions,
        rounds=w.rounds,
        concurrency=w.concurrency,
        max_tokens=w.max_tokens,
        temperature=w.temperature,
        request_timeout=w.request_timeout,
        tools=ToolSet(w.tools, [(p.tool, p.prompt) for p in w.checks.arguments.prompts]),
        system_prompt=w.system_prompt,
        stream=_stream_mode(w.stream),
        checks=configured(w.checks, ["logprobs"] if logprobs else []),
        max_response_bytes=w.max_response_bytes or MAX_RESPONSE_BYTES,
        version_paths=version_paths,
    )


def _stream_mode(value: bool | str) -> Literal["false", "true", "both"]:
    """``workload.stream`` (true, false or both) as the workload's mode."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "both"  # the only text the spec model accepts
