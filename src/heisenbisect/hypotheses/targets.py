"""The spec's ``target:`` section, one model per target kind, told apart by the key that names the kind.

``command:`` makes a command target, ``server:`` any serving stack (a registered one by its
``preset``, or a launch command and readiness check), and ``sglang:`` is shorthand for ``server:
{preset: sglang}``, loaded into one: the key is the section's tag, and the kind is inferred from
which one a section gives. There is no ``kind:`` key: a second way to say the kind could
contradict the first, and every spec written before kinds were tagged keeps its meaning as it is.

The sections live here, below `targets/`, so a spec validates without importing any target's
modules (presets are checked against `stacks.registry`, which imports no target); `targets.registry`
pairs each kind with the builder of its `TrialTarget`. A new kind is a section here (added to
`SECTIONS`), its target module, and its entry in that registry.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, Optional, TypeAlias, Union

from pydantic import (
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from heisenbisect.checks.arguments import CHECK as ARGUMENTS
from heisenbisect.checks.arguments_asked import BUILTIN_PROMPTS
from heisenbisect.checks.registry import section_model
from heisenbisect.hypotheses.common import Frozen, check_environment
from heisenbisect.stacks import sglang
from heisenbisect.stacks.registry import known_names, stack_named

Checks = section_model()
"""The workload's ``checks:``: a key per registered check with settings (`checks.registry`)."""


class TargetSection(Frozen):
    """What every kind of target shares: its folder, its environment, its time limit, its files."""

    kind: ClassVar[str]
    """The kind's name: `targets.registry` builds the section's target by it."""
    key: ClassVar[str]
    """The key of the section's own settings, its tag (the kind's name, or an alias of one)."""

    # Every target section held both of these keys, optional, before kinds were tagged: a spec may
    # still say ``sglang: null`` beside a command, and a stored target's identity (its dump, which
    # the store fingerprints) keeps both keys, so every existing study resumes as it did.
    command: None = None
    sglang: None = None
    # kinds added since are left out of the dump when absent, so stored identities stay as they were
    server: SkipJsonSchema[None] = Field(None, exclude=True)

    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(600.0, gt=0)
    crashes_count: bool = False
    result: Literal["json", "exit"] = "json"
    """How a run reports: ``json``, a result line or file (a run without one is an error, never
    "clean"); ``exit``, its exit code as `git bisect run` reads one when it reports no result."""
    files: list[str] = Field(default_factory=list)
    """Globs (relative to the spec's folder) of the target's own files: the store refuses to
    resume once one changes. A ``python SCRIPT`` command's script is included without asking."""

    @field_validator("env")
    @classmethod
    def _env_ok(cls, env: dict[str, str]) -> dict[str, str]:
        return check_environment(env)

    @property
    def argv(self) -> list[str]:
        """The command a trial runs; empty for a kind that runs none of its own (a server)."""
        return []


class CommandSection(TargetSection):
    """A program run once per trial, which says how the trial ended (docs/protocol.md)."""

    kind: ClassVar[str] = "command"
    key: ClassVar[str] = "command"
    command: list[str] | str  # type: ignore[assignment]  # the kind narrows the shared None
    traceback_is_failure: bool = False
    """``true``: a run ending in a could-not-run traceback (ImportError, FileNotFoundError, ...)
    is a failed run, not a skip: the target's flaky failure is such a traceback."""

    @model_validator(mode="after")
    def _not_empty(self) -> CommandSection:
        if not self.argv:
            raise ValueError("'command' is empty")
        return self

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command) if isinstance(self.command, str) else list(self.command)


class StressWorkload(Frozen):
    """The tool-calling stress workload run against any OpenAI-compatible server."""

    sessions: int = Field(60, ge=1)
    rounds: int = Field(4, ge=1)
    concurrency: int | None = Field(None, ge=1)
    max_tokens: int = Field(512, ge=1)
    temperature: float = Field(0.0, ge=0)
    request_timeout: float = Field(300.0, gt=0)
    tools: list[dict] | None = None
    system_prompt: str | None = None
    stream: bool | Literal["both"] = False  # both: every other session streams
    max_response_bytes: int | None = Field(None, ge=1, strict=True)  # strict: `true` is not 1 byte
    """Bytes one response (a body or a whole event stream) may have, past which its session is an
    error; None: the stress client's default (16 MiB, `targets.openai.workload.MAX_RESPONSE_BYTES`)."""
    checks: Checks = Field(default_factory=Checks)  # type: ignore[valid-type]
    """Each response check's settings (``checks.logprobs.enabled: true``); every one at its default."""

    @model_validator(mode="after")
    def _asked_tools_exist(self) -> StressWorkload:
        """Each of ``checks.arguments.prompts`` names one of the workload's tools."""
        names = (
            [_tool_name(t) for t in self.tools] if self.tools is not None else list(BUILTIN_PROMPTS)
        )
        settings = getattr(self.checks, ARGUMENTS.name)  # the section's key is the check's name
        for i, asked in enumerate(settings.prompts):
            if asked.tool not in names:
                raise ValueError(
                    f"checks.arguments.prompts[{i}].tool: {asked.tool!r} is not one of the "
                    f"workload's tools ({', '.join(map(str, names))})"
                )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict:
        """Keys left at what they were before they existed are left out of the dump: a stored
        study's identity (its target's dump, `studies.identity.spec_identity`) stays the same, so it
        resumes."""
        dumped = handler(self)
        if self.max_response_bytes is None:
            dumped.pop("max_response_bytes", None)
        if self.checks == Checks():
            dumped.pop("checks", None)
        return dumped


def _tool_name(tool: dict) -> object:
    """A tool's function name as the spec gives it (the stress client checks the rest)."""
    function = tool.get("function")
    return function.get("name") if isinstance(function, dict) else None


class SGLangTarget(Frozen):
    """The ``sglang:`` settings: one server per config, stress sessions against it."""

    model: str
    server_args: list[str] | str = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    python: str = "python"
    launcher: list[str] | str | None = None  # default: [python, -m, sglang.launch_server]
    startup_timeout: float = Field(1800.0, gt=0)
    trials_per_launch: int = Field(1, ge=1, strict=True)  # `true` is no count
    workload: StressWorkload = Field(default_factory=StressWorkload)

    @field_validator("env")
    @classmethod
    def _env_ok(cls, env: dict[str, str]) -> dict[str, str]:
        return check_environment(env)

    def as_server(self) -> ServerSettings:
        """The ``server:`` settings these stand for: SGLang's preset, its launcher under ``python``."""
        launch = self.launcher or [self.python, *sglang.STACK.launcher[1:]]
        # constructed, not validated: every value is valid already, and an empty model stays allowed
        return ServerSettings.model_construct(
            preset=sglang.STACK.name,
            launch=launch,
            model=self.model,
            server_args=self.server_args,
            env=self.env,
            startup_timeout=self.startup_timeout,
            trials_per_launch=self.trials_per_launch,
            workload=self.workload,
        )


_NOT_IN_URL_PATH = re.compile(r"[^\x21-\x7e]")
"""What an HTTP request line cannot carry as is: a space, CR/LF and other controls, non-ASCII."""


class ServerReady(Frozen):
    """When a launched server is up: ``path`` answers ``status``, or a line of its log matches ``log``."""

    path: str = "/health"
    status: int = Field(200, ge=100, le=599)
    log: str | None = None

    @field_validator("path")
    @classmethod
    def _path_ok(cls, path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(f"a path on the server, starting with '/', got {path!r}")
        if bad := _NOT_IN_URL_PATH.search(path):
            raise ValueError(
                f"not a URL path: {bad.group()!r} at {bad.start()} (a space, control character "
                f"or non-ASCII character; percent-encode it), got {path!r}"
            )
        return path

    @field_validator("log")
    @classmethod
    def _regex_ok(cls, log: str | None) -> str | None:
        return log if log is None else _regex(log)


class LogSignalSpec(Frozen):
    """A server-log line counted as a failure of its own class (``below``: only when its number is)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_]+$")
    pattern: str
    below: float | None = None

    @field_validator("pattern")
    @classmethod
    def _regex_ok(cls, pattern: str) -> str:
        return _regex(pattern)

    @model_validator(mode="after")
    def _group_for_floor(self) -> LogSignalSpec:
        if self.below is not None and re.compile(self.pattern).groups < 1:
            raise ValueError(
                "'below' compares the pattern's first group: give the number a group, e.g. 'rate: ([0-9.]+)'"
            )
        return self


class SideSignals(Frozen):
    """Signals that precede visible corruption, each counted as a failure of its own class."""

    logprobs: bool = False  # ask for logprobs; a NaN or infinite one makes the session bad_logprobs
    log: list[LogSignalSpec] = Field(default_factory=list)


class ServerSettings(Frozen):
    """The ``server:`` settings: any OpenAI-compatible stack, one server per config (docs/servers.md)."""

    preset: str | None = None
    """A registered stack's name (`stacks.registry`)."""
    launch: list[str] | str | None = None
    """The command template, with ``{model}``, ``{host}``, ``{port}`` filled per launch; with a
    preset, only the launcher the preset's arguments follow (``[vllm, serve]``)."""
    model: str = ""
    server_args: list[str] | str = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    ready: ServerReady = Field(default_factory=ServerReady)
    startup_timeout: float = Field(1800.0, gt=0)
    trials_per_launch: int = Field(1, ge=1, strict=True)  # `true` is no count
    workload: StressWorkload = Field(default_factory=StressWorkload)
    signals: SideSignals = Field(default_factory=SideSignals)

    @field_validator("env")
    @classmethod
    def _env_ok(cls, env: dict[str, str]) -> dict[str, str]:
        return check_environment(env)

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, preset: str | None) -> str | None:
        return preset if preset is None else stack_named(preset).name

    @model_validator(mode="after")
    def _launchable(self) -> ServerSettings:
        if self.preset is None:
            template = (
                shlex.split(self.launch)
                if isinstance(self.launch, str)
                else list(self.launch or [])
            )
            if not template:
                raise ValueError(
                    f"give 'launch' (a command with {{port}}) or a 'preset' ({known_names()})"
                )
            if not any("{port}" in part for part in template):
                raise ValueError(
                    "'launch' must place the server on {port}: heisenbisect picks a free port per launch"
                )
        elif not self.model:
            raise ValueError(f"preset {self.preset!r} needs 'model'")
        return self


class ServerSection(TargetSection):
    """Any serving stack (docs/servers.md)."""

    kind: ClassVar[str] = "server"
    key: ClassVar[str] = "server"
    server: ServerSettings  # type: ignore[assignment]  # the kind narrows the shared None

    @model_validator(mode="after")
    def _reports_itself(self) -> ServerSection:
        if self.result == "exit":
            raise ValueError(
                f"'result: exit' applies to a command; the {self.key} target always reports its result"
            )
        return self


class SGLangSection(ServerSection):
    """``sglang:``, the shorthand for ``server: {preset: sglang}`` (docs/sglang.md): loaded into
    ``server``, so it runs as any server target does. Its dump keeps the shorthand's keys (``server``
    is left out), so a study stored before the two were one resumes with the same identity."""

    key: ClassVar[str] = "sglang"
    sglang: SGLangTarget  # type: ignore[assignment]  # the kind narrows the shared None
    # filled from ``sglang`` after validation, left out of the dump (stored identities)
    server: SkipJsonSchema[ServerSettings | None] = Field(None, exclude=True)  # type: ignore[assignment]

    @model_validator(mode="after")
    def _as_server(self) -> SGLangSection:
        object.__setattr__(
            self, "server", self.sglang.as_server()
        )  # frozen: set once, while validating
        return self


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a regular expression ({exc}): {text!r}") from None
    return text


SECTIONS: tuple[type[TargetSection], ...] = (CommandSection, SGLangSection, ServerSection)
_KEYS = [repr(s.key) for s in SECTIONS]
_KIND_PROBLEM = f"give exactly one of {', '.join(_KEYS[:-1])} or {_KEYS[-1]}"


class _Unkinded(TargetSection):
    @model_validator(mode="after")
    def _refuse(self) -> _Unkinded:
        raise ValueError(_KIND_PROBLEM)


# A section that is not a mapping, or names no kind or several, is validated against every kind's
# key at once (named ``Target``, as messages name it), then refused: its other problems come out as
# for any section (a misspelt ``sglan:`` gets "did you mean 'sglang'?"), and it never yields a value.
_UNKINDED = "unkinded"
_AnyKind = create_model(  # type: ignore[call-overload]  # fields built from SECTIONS
    "Target",
    __base__=_Unkinded,
    **{s.key: (Optional[s.model_fields[s.key].annotation], None) for s in SECTIONS},  # noqa: UP045
)


def kind_of(section: object) -> str:
    """The tag of the section a target names: the one section key it gives a value."""
    if isinstance(section, TargetSection):
        return section.key
    if isinstance(section, dict):
        named = [s.key for s in SECTIONS if section.get(s.key) is not None]
        if len(named) == 1:
            return named[0]
    return _UNKINDED


if TYPE_CHECKING:
    Target: TypeAlias = TargetSection  # what every kind shares is what a type checker may assume
else:
    Target = Annotated[
        Union[  # noqa: UP007 - a union built from a tuple of members has no `X | Y` spelling
            tuple(Annotated[s, Tag(s.key)] for s in SECTIONS)
            + (Annotated[_AnyKind, Tag(_UNKINDED), SkipJsonSchema()],)
        ],
        Discriminator(kind_of),
    ]
"""The spec's ``target``: one of `SECTIONS`, the kind inferred by `kind_of`."""
