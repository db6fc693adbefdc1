"""Every kind of target, by name: its spec section, the builder of its `TrialTarget`, a line on what it is.

A spec's ``target:`` section says its kind by the key it gives (`hypotheses.targets`); a new kind is
its section there, its target module here, and one `TargetKind` below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.hypotheses.targets import CommandSection, ServerSection, TargetSection
from heisenbisect.stacks.registry import known_names
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.command import command_target


@dataclass(frozen=True)
class TargetKind:
    section: type[TargetSection]
    build: Callable[[Spec, Path], TrialTarget]  # (spec, the spec file's folder) -> the target
    description: str


def _server_target(spec: Spec, spec_dir: Path) -> TrialTarget:
    from heisenbisect.targets.server.spec import (
        make_server_target,
    )  # its HTTP client: only when asked for

    target = make_server_target(spec, base_dir=spec_dir)
    target.secret_names = tuple(spec.secrets)  # masked in its logs besides the secret-looking
    return target


TARGET_KINDS: dict[str, TargetKind] = {
    kind.section.kind: kind
    for kind in (
        TargetKind(
            CommandSection,
            command_target,
            "a command run once per trial; it reports a result line or file, or its exit code",
        ),
        TargetKind(
            ServerSection,
            _server_target,
            f"any OpenAI-compatible server (a preset: {known_names()}; or a "
            "launch command and readiness check) per config, with tool-calling stress sessions against it",
        ),
    )
}


def make_target(spec: Spec, spec_dir: Path) -> TrialTarget:
    """The spec's target; relative paths in it are relative to the spec file's folder."""
    return TARGET_KINDS[spec.target.kind].build(spec, spec_dir)
