"""What differs between serving stacks, so that one server target launches any of them.

A `Stack` says how a server is started (a launcher and a command template with ``{model}``,
``{host}``, ``{port}``), when it is ready (an HTTP path answering an expected status, or a line
in its log), which launch flags heisenbisect chooses itself, where it says its version, and what
it lets us check before and after a launch (its ``--help``, its effective arguments). Each
registered stack is one module of this package (`registry`); ``target.server`` without a preset
is a stack the spec describes (`custom`). The hooks are plain module-level functions, so a stack
pickles (Ray ships targets) and its repr, which fingerprints a target, leaves them out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from heisenbisect.errors import HeisenbisectError
from heisenbisect.stacks.flags import EnvFlag, LaunchFlag
from heisenbisect.stacks.read_back import Override
from heisenbisect.stacks.sources import PackageFiles

ReadBack = Callable[[str, "str | None", Sequence[str]], "list[Override] | None"]
"""(server URL, API key, launch arguments) -> the arguments the server overrode; None when the
server serves no effective arguments to compare."""


class Ports(Protocol):
    """The extra ports a launch reserved (`targets.server.ports.ServerPorts`)."""

    @property
    def tcp_store(self) -> int: ...
    @property
    def port_base(self) -> int: ...


@dataclass(frozen=True)
class FlagReaders:
    """How `bisect factors` and `bisect suspects` read a stack's flags from its own source files."""

    needed: str  # the package file a source must have, e.g. "vllm/envs.py"
    env_flags: Callable[[PackageFiles], tuple[list[EnvFlag], str]]  # -> (flags, where read)
    launch_flags: Callable[[PackageFiles], list[LaunchFlag]]  # its boolean launch arguments
    launch_options: Callable[[PackageFiles], frozenset[str]]  # every launch option, of any type
    describes: str  # one sentence for `bisect factors --help`: which files say what


@dataclass(frozen=True)
class Arm:
    """One way to turn a suspect on: launch arguments, or one environment variable and its value."""

    args: tuple[str, ...] = ()
    var: str | None = None
    value: bool | None = None

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(a for a in self.args if a.startswith("--"))


def arg(*args: str) -> Arm:
    return Arm(args=args)


def env(var: str, value: bool) -> Arm:
    return Arm(var=var, value=value)


@dataclass(frozen=True)
class SuspectSpellings:
    """How a stack spells the usual suspects (`stacks.suspects`) for `bisect suspects`."""

    arms: dict[str, tuple[Arm, ...]]  # suspect name -> candidate spellings, newest first
    concurrency_flag: str  # the server's batch cap, the amplify knob
    log_signals: tuple[dict, ...] = ()  # server-log lines that precede corruption (docs/servers.md)


@dataclass(frozen=True)
class Stack:
    name: str  # as specs and the CLI name it: "sglang"; "" for a stack the spec describes
    title: str  # as messages say it: "SGLang", "vLLM", "the server"
    launch: tuple[str, ...]  # the template: ``{model}``, ``{host}``, ``{port}``, ``{nccl_port}``
    launcher: tuple[str, ...] = ()  # the command before the template (``vllm serve``)
    ready_path: str | None = "/health"  # ready when GET answers ``ready_status`` ...
    ready_status: int = 200
    ready_log: str | None = None  # ... or when a line of its log matches this regex
    reserved: tuple[str, ...] = ()  # flags heisenbisect chooses per launch: refused in server_args
    help_args: tuple[str, ...] | None = None  # how to list its flags (``--help``); None: not probed
    package: str = ""  # its Python package: found in a bisected worktree, put on PYTHONPATH
    source_folders: tuple[str, ...] = ()  # where in a worktree the package may live ("python", "")
    names_model: bool = False  # requests name ``model`` instead of the first model /v1/models lists
    version_paths: tuple[str, ...] = ()  # GET paths whose JSON ``version`` says the release
    port_env: Callable[[Ports], dict[str, str]] | None = field(default=None, repr=False)
    """The environment that moves its extra ports onto the launch's reserved ones, if it has any."""
    read_back: ReadBack | None = field(default=None, repr=False)
    flags: FlagReaders | None = field(default=None, repr=False)
    suspects: SuspectSpellings | None = field(default=None, repr=False)

    @property
    def flag_readers(self) -> FlagReaders:
        """Its flag readers: only the stacks `registry.with_flag_readers` names have them."""
        if self.flags is None:
            raise HeisenbisectError(f"{self.title}: heisenbisect cannot read its flags")
        return self.flags

    @property
    def suspect_spellings(self) -> SuspectSpellings:
        """How its suspects are spelt: only stacks with flag readers have them."""
        if self.suspects is None:
            raise HeisenbisectError(f"{self.title}: heisenbisect knows no suspects of it")
        return self.suspects

    def argv(self, launcher: tuple[str, ...], fields: dict[str, str], args: list[str]) -> list[str]:
        """The launch command: ``launcher`` and the template with each ``{field}`` filled in; other
        braces stay as they are (a JSON argument, a ``python -c`` program)."""
        return [_filled(part, fields) for part in [*launcher, *self.launch]] + list(args)


def _filled(part: str, fields: dict[str, str]) -> str:
    """``part`` with each ``{field}`` replaced by exactly its value, in one pass: a value is never
    split, quoted or read again as a template (a model named ``x {port}`` stays so)."""
    if not fields:
        return part
    names = "|".join(re.escape(name) for name in fields)
    return re.sub(r"\{(" + names + r")\}", lambda match: fields[match.group(1)], part)
