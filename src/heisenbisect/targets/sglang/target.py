"""The built-in SGLang target: the server target with SGLang's preset (`server.stack.SGLANG`).

``target.sglang`` keeps its keys and behaviour: the launch command is ``python -m
sglang.launch_server`` (or ``launcher``) with ``--model-path``, ``--host``, ``--port`` and
``--nccl-port`` chosen per launch; readiness is ``/health_generate``; the launch flags are probed
with ``--help`` and the effective ones read back from ``/server_info``.
"""

from __future__ import annotations

from pathlib import Path

from heisenbisect.targets.server.spec import checked_args, split, stress_settings
from heisenbisect.targets.server.stack import SGLANG, SGLANG_LAUNCHER
from heisenbisect.targets.server.target import ServerTarget


class SGLangServerTarget(ServerTarget):
    """A `ServerTarget` of SGLang's stack."""

    def __init__(self, model: str, *, launcher: tuple[str, ...] = SGLANG_LAUNCHER, **settings):
        super().__init__(model, stack=SGLANG, launcher=launcher, **settings)


def make_sglang_target(spec, base_dir: Path | None = None) -> SGLangServerTarget:
    """The target a hypotheses spec with ``target: {sglang: ...}`` describes; raises HeisenbisectError.

    A relative ``target.cwd`` is taken from ``base_dir`` (the spec file's folder), if given.
    """
    sglang = spec.target.sglang
    launcher = sglang.launcher or [sglang.python, "-m", "sglang.launch_server"]
    return SGLangServerTarget(
        sglang.model,
        server_args=tuple(checked_args(sglang.server_args, SGLANG, "target.sglang")),
        env=sglang.env,
        launcher=tuple(split(launcher)),
        startup_timeout_s=sglang.startup_timeout,
        trials_per_launch=sglang.trials_per_launch,
        workload=stress_settings(sglang.workload),
        trial_timeout_s=spec.target.timeout,
        crashes_count=spec.target.crashes_count,
        cwd=str(base_dir / spec.target.cwd) if base_dir and spec.target.cwd else spec.target.cwd,
    )
