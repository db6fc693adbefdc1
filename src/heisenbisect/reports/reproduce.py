"""The report's "Reproduce" section: the commands that find this study's store again, and one
trial as a command to run by hand, for every study kind's report."""

from __future__ import annotations

import shlex
from pathlib import Path

from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, trial_id, trial_seed
from heisenbisect.reports.server_by_hand import server_trial_lines


def reproduce_lines(spec: Spec, spec_path: str, study_root: Path | None) -> list[str]:
    """The section's heading and the study's own commands (`rerun_lines`), fenced."""
    return ["## Reproduce", "", "```", *rerun_lines(spec, spec_path, study_root), "```", ""]


def rerun_lines(spec: Spec, spec_path: str, study_root: Path | None) -> list[str]:
    """`bisect run` and `bisect report` as they find this study's store again: with ``--out`` only
    when the study is not where the spec's ``output:`` puts it, relative to the current folder
    when it lies inside it (a report committed to a repository names no one's home folder)."""
    default = (Path(spec_path).parent / Path(spec.output).expanduser()).resolve()
    folder = study_root.parent.resolve() if study_root else default
    here = Path.cwd().resolve()
    shown = folder.relative_to(here) if folder.is_relative_to(here) else folder
    out = [] if folder == default else ["--out", str(shown)]
    return [
        shlex.join(["bisect", "run", spec_path, *out])
        + "      # resumes from the store; finished trials are reused",
        shlex.join(["bisect", "report", spec_path, *out])
        + "   # re-renders this report from the store",
    ]


def trial_command(spec: Spec, config: Config, folder: Path | None = None, index: int = 0) -> str:
    """A shell command that runs trial ``index`` of ``config`` exactly: every argument quoted,
    whatever a level holds (spaces, quotes, newlines), with the seed and result path it got; a
    server target's is two lines, its launch and its stress (`server_by_hand`)."""
    if spec.target.kind == "server":  # two processes: the launch, then the stress sessions
        lines = server_trial_lines(spec, config, index)
        return "\n".join([f"cd {shlex.quote(str(folder))}"] + lines if folder else lines)
    env = spec.environment(config)
    tid = trial_id(config.key, index)
    env |= {
        "HEISENBISECT_TRIAL_ID": tid,
        "HEISENBISECT_SEED": str(trial_seed(spec.study, config.key, index)),
        "HEISENBISECT_RESULT": f"/tmp/{tid}.result.json",
    }
    words = ["env"]
    words += [arg for k, v in env.items() if v is None for arg in ("-u", k)]
    words += [f"{k}={v}" for k, v in env.items() if v is not None]
    argv = spec.target.argv + spec.arguments(config)
    if not argv:
        return f"# (the built-in {spec.target.kind} target: run `bisect run` with --parallel 1 to reproduce)"
    command = shlex.join(words + argv)
    return f"cd {shlex.quote(str(folder))} && {command}" if folder else command
