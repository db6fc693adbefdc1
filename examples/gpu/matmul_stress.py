"""A GPU trial program: square matmuls for a fixed time, checking that repeats agree bit for bit.

Follows the trial protocol: the knobs are environment variables (factors), the seed is
``HEISENBISECT_SEED``, the report goes to ``HEISENBISECT_RESULT``. One unit is one batch of
matmuls; a batch whose checksum differs from the first batch's (same inputs) is a failure:
a nondeterministic kernel, a race, a flaky device. Throughput is reported as a metric.
Runs on CUDA when there is a GPU (the one Ray assigned via CUDA_VISIBLE_DEVICES), else on CPU.

Knobs: MATMUL_DTYPE (bf16, fp16, fp32), MATMUL_SIZE, MATMUL_SECONDS, MATMUL_BATCH, MATMUL_DEVICE.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def main() -> int:
    device = os.environ.get("MATMUL_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    on_gpu = device.startswith("cuda")
    dtype = DTYPES[os.environ.get("MATMUL_DTYPE", "bf16")]
    size = int(os.environ.get("MATMUL_SIZE", 8192 if on_gpu else 256))
    seconds = float(os.environ.get("MATMUL_SECONDS", 5 if on_gpu else 0.5))
    batch = int(os.environ.get("MATMUL_BATCH", 10))
    seed = int(os.environ.get("HEISENBISECT_SEED", 0))

    generator = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    b = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
    out = torch.empty(size, size, device=device, dtype=dtype)

    def run_batch() -> float:
        for _ in range(batch):
            torch.matmul(a, b, out=out)
        return float(out.float().sum().item())  # .item() also waits for the GPU

    reference = run_batch()  # warm-up; its checksum is what every later batch must match
    batches = failures = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        failures += run_batch() != reference
        batches += 1
    elapsed = time.perf_counter() - started

    flops = 2.0 * size**3 * batch * batches
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    report = {
        "failures": int(failures),
        "total": max(batches, 1),
        "metrics": {
            "tflops": flops / elapsed / 1e12,
            "matmul_seconds": elapsed,
            "gpu": float(visible.split(",")[0]) if on_gpu and visible[:1].isdigit() else -1.0,
        },
    }
    text = json.dumps(report)
    result = os.environ.get("HEISENBISECT_RESULT")
    if result:
        with open(result, "w") as handle:
            handle.write(text)
    print(f"{device} {os.environ.get('MATMUL_DTYPE', 'bf16')} n={size}: {text}", file=sys.stderr)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
