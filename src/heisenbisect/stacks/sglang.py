"""SGLang (``python -m sglang.launch_server``): launch, readiness, flags, version, read-back.

Readiness is ``/health_generate``: ``/health`` turns 200 before generation works (warmup, CUDA
graphs). Its extra ports (the TCP store, the ZMQ sockets searched upwards from ``SGLANG_PORT``)
go in the environment, onto ports the launch reserved. Its flags come from ``--help`` at run time
and from ``environ.py``/``server_args.py`` for `bisect factors`; the effective arguments are read
back from ``/server_info`` after each launch (`sglang_server_info`).
"""

from __future__ import annotations

from heisenbisect.stacks.base import FlagReaders, Ports, Stack, SuspectSpellings, arg, env
from heisenbisect.stacks.sglang_args import launch_flags, launch_options
from heisenbisect.stacks.sglang_environ import ENVIRON_SUFFIX, env_flags
from heisenbisect.stacks.sglang_server_info import INFO_PATHS, overridden_args

DETERMINISM = arg("--enable-deterministic-inference")  # its batch-invariant mode


def port_environment(ports: Ports) -> dict[str, str]:
    """SGLang's torch.distributed store and its ephemeral sockets, on the launch's own ports."""
    return {"SGLANG_PORT": str(ports.port_base), "SGLANG_TCP_STORE_PORT": str(ports.tcp_store)}


STACK = Stack(
    name="sglang",
    title="SGLang",
    launcher=("python", "-m", "sglang.launch_server"),
    launch=(
        "--model-path",
        "{model}",
        "--host",
        "{host}",
        "--port",
        "{port}",
        "--nccl-port",
        "{nccl_port}",
    ),
    ready_path="/health_generate",
    reserved=("--model-path", "--model", "--host", "--port", "--nccl-port"),
    help_args=("--help",),
    package="sglang",
    source_folders=("python",),
    version_paths=INFO_PATHS,  # newer, then older
    port_env=port_environment,
    read_back=overridden_args,
    flags=FlagReaders(
        needed=ENVIRON_SUFFIX,
        env_flags=env_flags,
        launch_flags=launch_flags,
        launch_options=launch_options,
        describes="sglang: the EnvBool flags of sglang/srt/environ.py as env factors, and the "
        "boolean launch arguments of server_args.py and arg_groups/fields/ as arg factors.",
    ),
    suspects=SuspectSpellings(
        arms={
            "cuda_graph": (arg("--disable-cuda-graph"),),
            "attention_backend": (arg("--attention-backend", "triton"),),
            "overlap_scheduling": (arg("--disable-overlap-schedule"),),
            "concurrency_cap": (arg("--max-running-requests", "1"),),
            "all_reduce": (arg("--disable-custom-all-reduce"),),
            "grammar_backend": (arg("--grammar-backend", "llguidance"),),
            "prefix_cache": (arg("--disable-radix-cache"),),
            "chunked_prefill": (arg("--chunked-prefill-size", "-1"),),
            "sampler": (env("SGLANG_OPT_USE_TOPK_V2", False),),
            "determinism_mode": (DETERMINISM,),
        },
        concurrency_flag="--max-running-requests",
        log_signals=(
            {"name": "fsm", "pattern": "Failed to advance FSM"},
            {"name": "spec_accept", "pattern": r"accept len: ([0-9.]+)", "below": 1.05},
        ),
    ),
)
