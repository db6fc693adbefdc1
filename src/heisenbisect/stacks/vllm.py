"""vLLM (``vllm serve``): its launch, readiness, flags, version and suspects.

The API server listens only once the engine is up, so ``/health`` answering 200 means ready.
Plain ``--help`` lists only the option groups since 0.10: its flags are probed with
``--help=all``. `bisect factors` reads ``vllm/envs.py`` and the ``vllm serve`` options
(`vllm_envs`, `vllm_args`). It serves no effective arguments to read back.
"""

from __future__ import annotations

from heisenbisect.stacks.base import FlagReaders, Stack, SuspectSpellings, arg, env
from heisenbisect.stacks.vllm_args import vllm_launch_flags, vllm_options
from heisenbisect.stacks.vllm_envs import ENVS, vllm_env_flags

DETERMINISM = env("VLLM_BATCH_INVARIANT", True)  # its batch-invariant mode

STACK = Stack(
    name="vllm",
    title="vLLM",
    launcher=("vllm", "serve"),
    launch=("{model}", "--host", "{host}", "--port", "{port}"),
    ready_path="/health",
    reserved=("--host", "--port", "--model"),
    help_args=("--help=all",),
    package="vllm",
    source_folders=("",),
    version_paths=("/version",),
    flags=FlagReaders(
        needed=ENVS,
        env_flags=vllm_env_flags,
        launch_flags=vllm_launch_flags,
        launch_options=vllm_options,
        describes="vllm: the boolean variables of vllm/envs.py as env factors, and the boolean "
        "options of `vllm serve` (engine/arg_utils.py with the config classes of vllm/config/, "
        "and the frontend's fields) as arg factors.",
    ),
    suspects=SuspectSpellings(
        arms={
            "cuda_graph": (arg("--enforce-eager"),),
            "attention_backend": (arg("--attention-backend", "TRITON_ATTN"),),
            "overlap_scheduling": (arg("--no-async-scheduling"),),
            "concurrency_cap": (arg("--max-num-seqs", "1"),),
            "all_reduce": (arg("--disable-custom-all-reduce"),),
            "grammar_backend": (arg("--structured-outputs-config", '{"backend": "guidance"}'),),
            "prefix_cache": (arg("--no-enable-prefix-caching"),),
            "chunked_prefill": (arg("--no-enable-chunked-prefill"),),
            "sampler": (env("VLLM_USE_FLASHINFER_SAMPLER", False),),
            "determinism_mode": (DETERMINISM,),
        },
        concurrency_flag="--max-num-seqs",
        log_signals=(
            {"name": "fsm", "pattern": "Failed to advance FSM"},
            {
                "name": "spec_accept",
                "pattern": r"Avg Draft acceptance rate: ([0-9.]+)%",
                "below": 5.0,
            },
        ),
    ),
)
