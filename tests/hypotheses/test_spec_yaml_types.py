"""A YAML value of the wrong type is one line naming file:line:col, never one line per accepted type.

``command: true`` is a YAML boolean where a string or a list is expected: pydantic reports it once
per type of the union; the user must see it once, with what YAML made of the word.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from heisenbisect.cli import main

FACTORS = "factors:\n  - name: MODE\n    levels: [a, b]\n"

CASES = {
    # spec body -> (line:col, the one line's text after the position)
    "command: true": (
        "target:\n  command: true\n" + FACTORS,
        "2:12",
        "target.command: expected a list of strings or a string, got 'true' "
        "(unquoted, YAML reads it as a boolean; write \"true\" for the text)",
    ),
    "command item a number": (
        "target:\n  command: [sleep, 1]\n" + FACTORS,
        "2:20",
        "target.command[1]: expected a string, got '1' (unquoted, YAML reads it as a number; write \"1\" for the text)",
    ),
    "command a mapping": (
        "target:\n  command: {a: b}\n" + FACTORS,
        "2:12",
        "target.command: expected a list of strings or a string, got a mapping",
    ),
    "level a mapping": (
        "target:\n  command: [/bin/true]\nfactors:\n  - name: MODE\n    levels: [a, {x: 1}]\n",
        "5:17",
        "factors[0].levels[1]: expected a string, an integer, a number, true, false, or a list of strings, "
        "got a mapping",
    ),
    "arg level with a number": (
        "target:\n  command: [/bin/true]\nfactors:\n  - name: MODE\n    kind: arg\n    levels: [[], [--n, 2]]\n",
        "6:24",
        "factors[0].levels[1][1]: expected a string, got '2' (unquoted, YAML reads it as a number; "
        "write \"2\" for the text)",
    ),
    "address: off": (
        "target:\n  command: [/bin/true]\n" + FACTORS + "execution:\n  address: off\n",
        "7:12",
        "execution.address: expected a string, got 'off' (unquoted, YAML reads it as a boolean; "
        "write \"off\" for the text)",
    ),
    "env value null": (
        "target:\n  command: [/bin/true]\n  env: {A: null}\n" + FACTORS,
        "3:12",
        "target.env.A: expected a string, got 'null' (unquoted, YAML reads it as null; write \"null\" for the text)",
    ),
    "stream: maybe": (
        "target:\n  sglang:\n    model: m\n    workload:\n      stream: maybe\n" + FACTORS,
        "5:15",
        "target.sglang.workload.stream: expected true, false or 'both', got 'maybe'",
    ),
    "a commit given as digits": (
        "target:\n  command: [/bin/true]\n" + FACTORS + "commits:\n  repo: .\n  good: 1234\n  bad: HEAD\n",
        "8:9",
        "commits.good: expected a string, got '1234' (unquoted, YAML reads it as a number; write \"1234\" for the text)",
    ),
    "timeout text": (
        "target:\n  command: [/bin/true]\n  timeout: soon\n" + FACTORS,
        "3:12",
        "target.timeout: expected a number, got 'soon'",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_one_line_per_mistyped_value(name, tmp_path, capsys):
    body, where, text = CASES[name]
    spec = tmp_path / "spec.yaml"
    spec.write_text(body)
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"{spec}:{where}: {text}"]


def test_command_true_through_the_installed_command(tmp_path):
    """The reported case end to end: `bisect validate` in its own process, one line, exit 2."""
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text("study: s\ntarget:\n  command: true\n" + FACTORS)
    done = subprocess.run([sys.executable, "-m", "heisenbisect", "validate", str(spec)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"{spec}:3:12: target.command: expected a list of strings or a string, got 'true' "
        "(unquoted, YAML reads it as a boolean; write \"true\" for the text)"
    ]


def test_quoted_true_is_the_true_command(tmp_path):
    """The hint's fix works: ``command: "true"`` is a valid spec."""
    spec = tmp_path / "spec.yaml"
    spec.write_text('target:\n  command: "true"\n' + FACTORS + "statistics: {max_trials: 100}\n")
    assert main(["validate", str(spec)]) == 0
