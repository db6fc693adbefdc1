"""The factors real serving-stack corruption bugs most often turned on, in their order.

From a survey of 40 real corruption threads (garbage tokens, broken tool calls, NaNs, divergence
only under load) in SGLang, vLLM, TensorRT-LLM, llama.cpp and TGI (issue 26): what cured them, by
kind, most frequent first. Each stack module spells them (`base.SuspectSpellings`: candidate
spellings per suspect, newest first); `bisect suspects` keeps the first whose flags (or variable)
the asked-for version's registry has, so a spec never names a flag that release lacks.
"""

from __future__ import annotations

from dataclasses import dataclass

SURVEY = "issue 26 survey"


@dataclass(frozen=True)
class Suspect:
    name: str
    why: str  # one line: what it changes and why it is suspected
    source: str  # the thread (or the survey count) it comes from
    manual: str = ""  # set when it cannot be a plain factor: what to do instead


SUSPECTS: tuple[Suspect, ...] = (
    Suspect(
        "cuda_graph",
        "CUDA graph replay with padded batches; turned off or changed, it cured 12 of 40",
        f"{SURVEY}: 12 of 40; sgl-project/sglang#1863, vllm-project/vllm#20376",
    ),
    Suspect(
        "version",
        "a regression or fix between releases; a version change cured 8 of 40",
        f"{SURVEY}: 8 of 40",
        manual="not a launch flag: bisect the range with `bisect commits`, or run this spec at another release",
    ),
    Suspect(
        "attention_backend",
        "a kernel that races or misreads padded/cached KV; a backend switch cured 8 of 40",
        f"{SURVEY}: 8 of 40; sgl-project/sglang#29157 (fa3 decode under CUDA graph)",
    ),
    Suspect(
        "overlap_scheduling",
        "CPU scheduling of step N+1 overlapping GPU step N; off, it cured 5 of 40",
        f"{SURVEY}: 5 of 40; vllm-project/vllm#46669 (disabling async scheduling resolves)",
    ),
    Suspect(
        "concurrency_cap",
        "a batch-size-dependent race: one request at a time is maintainers' first ask",
        f"{SURVEY}: 5 of 40; vllm-project/vllm#35288 (corrupt at --max-num-seqs 4, not at 2)",
    ),
    Suspect(
        "all_reduce",
        "the custom all-reduce path (vs NCCL) under tensor parallelism; cured 4 of 40",
        f"{SURVEY}: 4 of 40 (custom all-reduce, symmetric memory, NCCL tuner)",
    ),
    Suspect(
        "grammar_backend",
        "the structured-output grammar engine; its state can stick until restart",
        f"{SURVEY}: 3 of 40; mlc-ai/xgrammar#460",
    ),
    Suspect(
        "speculative_decoding",
        "draft/verify bookkeeping under load; acceptance collapsing to 0% precedes it",
        f"{SURVEY}: 3 of 40; vllm-project/vllm#46669",
        manual="if server_args turn it on, move those arguments into a factor: levels [[THEM], []]",
    ),
    Suspect(
        "prefix_cache",
        "reused KV blocks written under another batch; off, it cured 2 of 40",
        f"{SURVEY}: 2 of 40; vllm-project/vllm#22808",
    ),
    Suspect(
        "chunked_prefill",
        "prefill split across steps meets decode in one batch; cured 2 of 40",
        f"{SURVEY}: 2 of 40",
    ),
    Suspect(
        "sampler",
        "the top-k/top-p sampling kernel; switched, it cured 2 of 40",
        f"{SURVEY}: 2 of 40",
    ),
    Suspect(
        "lora",
        "LoRA batching kernels with mixed adapters under CUDA graph; cured 2 of 40",
        f"{SURVEY}: 2 of 40; sgl-project/sglang#29157",
        manual="if server_args load adapters, move those arguments into a factor: levels [[THEM], []]",
    ),
    Suspect(
        "determinism_mode",
        "the stack's batch-invariant mode: if the failure stops, batch-dependent numerics cause it",
        "sglang --enable-deterministic-inference; vllm VLLM_BATCH_INVARIANT (issue 26)",
    ),
)
NAMES = frozenset(s.name for s in SUSPECTS)

# Batch sizes CUDA graphs are captured at (SGLang and vLLM both start 1, 2, 4, 8, then steps of 8
# or 16); a size just past a captured one is padded up to the next, which is where padding bugs live.
CONCURRENCY_CHOICES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 25, 31, 32, 33)
