"""CLI habits: lazy imports, --debug / -q / -v anywhere, defaults in help, quiet broken pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bisect_cli import bisect
from heisenbisect.cli import COMMANDS, build_parser, command_name

ROOT = Path(__file__).resolve().parents[2]
CPU_RACE = str(ROOT / "examples" / "cpu_race" / "hypotheses.yaml")
HEAVY = ("scipy", "statsmodels", "matplotlib", "rich", "ray", "numpy", "pandas", "httpx")


@pytest.mark.parametrize("argv", [["--version"], ["validate", CPU_RACE]])
def test_version_and_validate_import_no_heavy_library(argv):
    probe = ("import sys, runpy\n"
             f"sys.argv = ['bisect', *{argv!r}]\n"
             "try:\n    runpy.run_module('heisenbisect', run_name='__main__')\n"
             "except SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


LATER = ("scipy", "matplotlib", "git", "rich", "statsmodels", "ray", "httpx", "PIL")


def test_run_hands_its_first_trial_to_the_runner_before_loading_what_it_needs_only_later(tmp_path):
    """scipy (seconds on a loaded machine), GitPython (the machine's record), rich (not with
    --plain) and matplotlib load after the first trial started: the 1 s goal of issue 24."""
    probe = ("import os, sys, runpy\n"
             "from heisenbisect.runners.local import LocalRunner\n"
             "def submit(self, trial):\n"
             f"    print(sorted(m for m in {LATER!r} if m in sys.modules), flush=True)\n"
             "    os._exit(0)\n"
             "LocalRunner.submit = submit\n"
             f"sys.argv = ['bisect', 'run', {CPU_RACE!r}, '--out', {str(tmp_path)!r}, '--plain']\n"
             "runpy.run_module('heisenbisect', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_takes_debug_quiet_and_verbose_after_its_name(module):
    name = command_name(module)
    parser = build_parser([name])
    sub = parser._subparsers._group_actions[0].choices[name]
    for option in ("--debug", "-q", "-v", "--help"):
        assert option in sub._option_string_actions, f"bisect {name} lacks {option}"


def test_debug_works_before_and_after_the_command(tmp_path):
    missing = str(tmp_path / "missing.yaml")
    plain = bisect("validate", missing)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    assert plain.stderr.strip().endswith("cannot read the hypotheses file: No such file or directory")
    for argv in (["--debug", "validate", missing], ["validate", missing, "--debug"]):
        done = bisect(*argv)
        assert done.returncode == 1 and "Traceback" in done.stderr and "SpecError" in done.stderr, argv


def test_quiet_and_verbose_are_counted_from_either_side():
    args = build_parser(["validate"]).parse_args(["-v", "validate", "x.yaml", "-v", "-q"])
    assert (args.verbose, args.quiet) == (1, 1)
    args = build_parser(["validate"]).parse_args(["-q", "validate", "x.yaml"])
    assert (args.verbose, args.quiet, args.debug) == (0, 1, False)
    quiet = bisect("validate", CPU_RACE, "-q")
    assert quiet.returncode == 0 and quiet.stdout == ""


def test_help_shows_defaults():
    text = bisect("stress", "--help").stdout
    assert "(default: 60)" in text and "(default: 4)" in text  # --sessions, --rounds
    assert "sampling temperature (default: 0.0)" in text and "(default: 0)" in text  # zero is a default too
    assert "(default: None)" not in text and "(default: False)" not in text


def test_a_pipe_closed_early_ends_quietly(tmp_path):
    environ = tmp_path / "sglang" / "srt" / "environ.py"
    environ.parent.mkdir(parents=True)
    environ.write_text("class Envs:\n" + "".join(f"    SGLANG_FLAG_{i} = EnvBool(False)\n" for i in range(20000)))
    pipeline = f"{sys.executable} -m heisenbisect factors sglang --kind env --source {tmp_path} | head -2"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", pipeline], capture_output=True, text=True)
    assert done.stdout.splitlines()[0].startswith("# 20000 boolean environment flags")
    assert done.stderr == ""
    assert done.returncode in (0, 141)
