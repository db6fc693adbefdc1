"""Serving stacks, one module each (`sglang`, `vllm`; `custom` for a spec's own), and their
registry: how a stack launches, when it is ready, which flags it has (read from ``--help`` and from
its own source files, never imported), where it says its version, how its effective arguments are
read back, and how it spells the usual suspects. A low layer: records, errors and the standard
library only, so a spec validates fast."""
