"""GPU placement for the local runner: each trial gets one visible GPU, at most N trials per GPU.

A race's rate depends on what else runs on its device, so a spec can ask for a fixed number
of trials per GPU (``execution.trials_per_gpu``); each trial sees only its GPU through
``CUDA_VISIBLE_DEVICES``. Ray does the same with ``gpus_per_trial = 1 / trials_per_gpu``.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess

from heisenbisect.errors import HeisenbisectError


def visible_gpus(environ: dict[str, str] | None = None) -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` when set, else those ``nvidia-smi -L`` lists."""
    environ = dict(os.environ) if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [gpu.strip() for gpu in listed.split(",") if gpu.strip() and gpu.strip() != "-1"]
    if shutil.which("nvidia-smi") is None:
        return []
    done = subprocess.run(
        ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False
    )
    return [str(i) for i, line in enumerate(done.stdout.splitlines()) if line.startswith("GPU ")]


class GpuSlots:
    """A pool of (GPU, seat) places: ``acquire`` blocks until a GPU has a free seat."""

    def __init__(self, gpus: list[str], trials_per_gpu: int):
        if not gpus:
            raise HeisenbisectError(
                "execution.trials_per_gpu: no GPU visible (CUDA_VISIBLE_DEVICES, nvidia-smi -L)"
            )
        self.gpus = list(gpus)
        self.trials_per_gpu = trials_per_gpu
        self._free: queue.SimpleQueue[str] = queue.SimpleQueue()
        for _ in range(trials_per_gpu):  # seat by seat, so the first trials spread over every GPU
            for gpu in self.gpus:
                self._free.put(gpu)

    @property
    def count(self) -> int:
        return len(self.gpus) * self.trials_per_gpu

    def acquire(self) -> str:
        return self._free.get()

    def release(self, gpu: str) -> None:
        self._free.put(gpu)
