"""Before the first trial: can the target run at all? A missing script is not a failed test.

A misspelt script makes Python exit 2, which the exit-code protocol would read as "failed"
in every run, and the study would then judge factors on the interpreter's complaint. These
checks catch what can be seen without running anything (the command, its folder, the script
a ``python SCRIPT`` command names); what slips through is caught from the first trials'
exit and stderr (`protocol.never_ran_reason`).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from heisenbisect.hypotheses.model import Spec

PYTHON = re.compile(r"^python[0-9.]*$")
PYTHON_OPTIONS_WITH_VALUE = {"-W", "-X", "-Q"}


@dataclass(frozen=True)
class Problem:
    """Why the target cannot run, and which field of the spec to fix."""

    field: str  # "target.command" or "target.cwd"
    message: str


def target_folder(spec: Spec, spec_dir: Path) -> Path:
    """The folder trials run in: ``target.cwd`` relative to the spec's folder (default: that folder)."""
    return (spec_dir / spec.target.cwd).resolve() if spec.target.cwd else spec_dir.resolve()


def target_problems(spec: Spec, spec_dir: Path, *, check_files: bool = True) -> list[Problem]:
    """What stops ``spec``'s command target from running; empty when nothing visible does.

    ``check_files=False`` checks only a command looked up on PATH: under commit bisection
    the folder and script belong to each commit's worktree, where their absence is untestable.
    """
    target = spec.target
    if target.sglang is not None or not target.argv:
        return []
    cwd = target_folder(spec, spec_dir)
    if check_files and not cwd.is_dir():
        return [Problem("target.cwd", f"folder {cwd} does not exist")]
    argv = target.argv
    search_path = target.env.get("PATH", os.environ.get("PATH", ""))
    problem = _command_problem(argv[0], cwd, search_path, check_files)
    if problem:
        return [Problem("target.command", problem)]
    if check_files and PYTHON.match(Path(argv[0]).name):
        script = python_script(argv[1:])
        if script is not None and not (cwd / script).is_file():
            return [Problem("target.command", f"python script {script!r} not found in {cwd}")]
    return []


def _command_problem(command: str, cwd: Path, search_path: str, check_files: bool) -> str | None:
    if PYTHON.match(command):
        return None  # a bare python means this interpreter (targets.with_this_python)
    if os.sep not in command:
        if shutil.which(command, path=search_path) is None:
            return f"command {command!r} not found on PATH"
        return None
    if not check_files:
        return None
    path = cwd / command
    if not path.exists():
        return f"command {command!r} not found (looked for {path})"
    if path.is_dir() or not os.access(path, os.X_OK):
        return f"command {command!r} is not executable ({path}); chmod +x it or run it through its interpreter"
    return None


def python_script(args: list[str]) -> str | None:
    """The script a ``python [options] SCRIPT ...`` command runs; None for ``-m``/``-c``/none."""
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in ("-m", "-c", "-"):
            return None
        if arg in PYTHON_OPTIONS_WITH_VALUE:
            skip_next = True
            continue
        if arg.startswith("-"):
            continue
        return arg
    return None


def spec_position(spec_path: Path, dotted: str) -> str:
    """``file:line:col`` of a field's value in the spec (the file alone when it cannot be found)."""
    try:
        node = yaml.compose(Path(spec_path).read_text(), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return str(spec_path)
    found = node
    for key in dotted.split("."):
        if not isinstance(found, yaml.MappingNode):
            break
        found = next((value for k, value in found.value if k.value == key), None)
        if found is None:
            break
        node = found
    if node is None:
        return str(spec_path)
    return f"{spec_path}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"


def problem_lines(spec: Spec, spec_path: Path, **kwargs) -> list[str]:
    """Each problem as ``file:line:col: field: message``, the form every spec error takes."""
    return [
        f"{spec_position(spec_path, p.field)}: {p.field}: {p.message}"
        for p in target_problems(spec, Path(spec_path).parent, **kwargs)
    ]
