"""What differs between serving stacks, so that one server target launches any of them.

A `Stack` says how a server is started (a command template with ``{model}``, ``{host}``,
``{port}``), when it is ready (an HTTP path answering an expected status, or a line in its
log), which launch flags heisenbisect chooses itself, and what the stack lets us check before
and after a launch (its ``--help``, its effective arguments). SGLang and vLLM are presets;
``target.server`` without a preset is a stack described entirely by the spec.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stack:
    name: str  # as messages say it: "SGLang", "vLLM", "the server"
    launch: tuple[str, ...]  # the command; ``{model}``, ``{host}``, ``{port}``, ``{nccl_port}`` filled per launch
    ready_path: str | None = "/health"  # ready when GET answers ``ready_status`` ...
    ready_status: int = 200
    ready_log: str | None = None  # ... or when a line of its log matches this regex
    reserved: tuple[str, ...] = ()  # flags heisenbisect chooses per launch: refused in server_args
    help_args: tuple[str, ...] | None = None  # how to list its flags (``--help``); None: not probed
    reads_server_info: bool = False  # SGLang: compare the effective arguments with the launch's
    port_env: bool = False  # SGLang: its extra ports go in the environment (see ports)
    package: str = ""  # its Python package: under a bisected worktree's source folder, put on PYTHONPATH
    source_folders: tuple[str, ...] = ()  # where in a worktree the package may live ("python", "")
    names_model: bool = False  # requests name ``model`` instead of the first model /v1/models lists

    def argv(self, launcher: tuple[str, ...], fields: dict[str, str], args: list[str]) -> list[str]:
        """The launch command: ``launcher`` and the template with each ``{field}`` filled in; other
        braces stay as they are (a JSON argument, a ``python -c`` program)."""
        return [_filled(part, fields) for part in [*launcher, *self.launch]] + list(args)


def _filled(part: str, fields: dict[str, str]) -> str:
    for name, value in fields.items():
        part = part.replace("{" + name + "}", value)
    return part


SGLANG = Stack(
    name="SGLang",
    launch=("--model-path", "{model}", "--host", "{host}", "--port", "{port}", "--nccl-port", "{nccl_port}"),
    ready_path="/health_generate",  # /health turns 200 before generation works (warmup, CUDA graphs)
    reserved=("--model-path", "--model", "--host", "--port", "--nccl-port"),
    help_args=("--help",),
    reads_server_info=True,
    port_env=True,
    package="sglang",
    source_folders=("python",),
)
SGLANG_LAUNCHER = ("python", "-m", "sglang.launch_server")

VLLM = Stack(
    name="vLLM",
    launch=("{model}", "--host", "{host}", "--port", "{port}"),
    ready_path="/health",  # the API server listens only once the engine is up; /health is 200 then
    reserved=("--host", "--port", "--model"),
    help_args=("--help=all",),  # plain --help lists only the groups since 0.10
    package="vllm",
    source_folders=("",),
)
VLLM_LAUNCHER = ("vllm", "serve")

PRESETS = {"sglang": (SGLANG, SGLANG_LAUNCHER), "vllm": (VLLM, VLLM_LAUNCHER)}


def custom_stack(launch: tuple[str, ...], ready_path: str | None, ready_status: int, ready_log: str | None) -> Stack:
    """A stack the spec describes: its command template is the whole launch command; its flags are
    not probed (no one ``--help`` format fits every server); its requests name the spec's model,
    when it gives one (``transformers serve`` lists only hub models in /v1/models)."""
    return Stack(name="the server", launch=launch, ready_path=ready_path, ready_status=ready_status,
                 ready_log=ready_log, reserved=("--host", "--port"), names_model=True)
