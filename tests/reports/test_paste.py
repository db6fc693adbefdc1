"""paste.md, from a real study: self-contained markdown for an upstream issue.

What an SGLang or vLLM maintainer asks a reporter for, in one paste: the conclusion, the rate
table, the spec, the environment, commands that run from the spec's folder and one failing run's
log; no link to a file beside the report (they break on GitHub) and no path of the machine
that ran it (the target below prints its absolute folder into every log).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bisect_cli import bisect
from heisenbisect import __version__
from heisenbisect.machine import source_commit, source_url, without_userinfo
from heisenbisect.reports.environment import install_line
from heisenbisect.reports.paste import Scrub, failing_run_lines, script_lines

TARGET = """\
echo "running in $(pwd)/work, seed $HEISENBISECT_SEED"
if [ "$FIXED" = "1" ]; then f=0; else f=$(( HEISENBISECT_SEED % 2 * 3 )); fi
[ "$f" -gt 0 ] && echo "corrupted: $f of 4 sessions returned another session's tokens" >&2
echo "{\\"failures\\": $f, \\"total\\": 4}"
"""


def write_study(folder: Path) -> Path:
    (folder / "race.sh").write_text(TARGET)
    spec = folder / "hypotheses.yaml"
    spec.write_text(textwrap.dedent("""\
        study: paste
        question: Which setting stops the corrupted sessions?
        target:
          command: [/bin/sh, race.sh]
        factors:
          - {name: fixed, var: FIXED, levels: ["0", "1"]}
        statistics:
          zero_rate: 0.3
          max_trials: 20
          first_look: 10
        execution:
          parallel: 2
        """))
    return spec


@pytest.mark.slow
def test_report_prints_the_conclusion_and_a_self_contained_paste(tmp_path: Path):
    study = tmp_path / "study"
    study.mkdir()
    subprocess.run(["git", "init", "-q", str(study)], check=True)  # a repository with no commit yet
    spec = write_study(study)
    ran = bisect("run", str(spec), "--plain")
    assert ran.returncode == 0, ran.stderr

    reported = bisect("report", str(spec))  # as `bisect run` ends: the conclusion, then where
    assert reported.returncode == 0, reported.stderr
    report = study / "reports" / "paste" / "report.md"
    lines = reported.stdout.splitlines()
    assert re.fullmatch(r"fixed=1 +eliminates +0/\d+ runs failed", lines[0])
    assert lines[1:] == [
        "", "fixed=1 drives the failure to zero.", "", f"report: {report}", f"paste:  {report.with_name('paste.md')}",
    ]

    pasted = bisect("report", str(spec), "--paste")
    assert pasted.returncode == 0, pasted.stderr
    paste = pasted.stdout
    assert paste == report.with_name("paste.md").read_text()

    assert paste.startswith("# heisenbisect: paste\n")
    assert "**Conclusion.** `fixed=1` drives the failure to zero." in paste
    assert re.search(r"\| `fixed` \| `1` \| \*\*eliminates\*\* \| \d+ \| 0 \|", paste)  # the rate table
    assert "<details><summary>The spec: <code>hypotheses.yaml</code></summary>" in paste
    assert spec.read_text().strip() in paste  # the spec verbatim: factor -> variable
    install = install_line(__version__, source_commit(), source_url())  # a checkout's: its commit
    assert f"From the spec's folder, with `{install}`:" in paste
    for row in (f"| heisenbisect | {__version__} (install: `{install}`)",
                "| Python |", "| CPUs |", "| GPUs |", "| load average (1 min) |",
                "| target commit | a git repository with no commits yet |"):
        assert row in paste
    assert "\nbisect run hypotheses.yaml " in paste  # from the spec's folder
    assert "cd . && env " in paste and "/bin/sh race.sh" in paste
    # the target's one small script, so that a maintainer can rerun from the paste alone
    assert "<details><summary>The target's script: <code>race.sh</code></summary>\n\n```bash\n" in paste
    assert TARGET.replace("$(pwd)", "$(pwd)").strip() in paste
    assert "## One failing run" in paste and "returned another session's tokens" in paste
    assert "running in ./work, seed" in paste  # the log's absolute folder, rewritten

    assert not re.search(r"\]\((?!https?://)", paste), "a link to a local file"
    for absolute in {str(tmp_path), str(tmp_path.resolve()), str(Path.home())}:
        assert absolute not in paste


def test_the_script_is_pasted_only_when_it_is_one_small_file_of_the_specs_folder(tmp_path: Path):
    (tmp_path / "a.py").write_text("print('a')\n")
    (tmp_path / "b.py").write_text("print('b')\n")
    (tmp_path / "big.py").write_text("#" * 30_000)
    scrub = Scrub(tmp_path)
    one = script_lines([sys.executable, "a.py", "--flag"], tmp_path, tmp_path, scrub)
    assert one[0] == "<details><summary>The target's script: <code>a.py</code></summary>"
    assert one[2:5] == ["```python", "print('a')", "```"]
    assert script_lines(["python", "a.py", "b.py"], tmp_path, tmp_path, scrub) == []  # a project
    assert script_lines(["python", "big.py"], tmp_path, tmp_path, scrub) == []
    assert script_lines(["python", "/etc/hostname"], tmp_path, tmp_path, scrub) == []  # not the spec's
    assert script_lines(["python", "-c", "print(1)"], tmp_path, tmp_path, scrub) == []


def test_install_line_names_the_source_and_commit_of_a_checkout():
    assert install_line("0.1.0") == "pip install 'heisenbisect==0.1.0'"  # installed: the release
    assert install_line("0.1.0", "abc123", "https://example.org/h.git") == "pip install 'git+https://example.org/h.git@abc123'"
    assert install_line("0.1.0", "abc123+dirty", "https://example.org/h.git") == (
        "pip install 'git+https://example.org/h.git@abc123' (it ran with uncommitted edits besides)")
    assert install_line("0.1.0", "abc123") == "git checkout abc123 && pip install -e . (in a heisenbisect checkout)"
    assert without_userinfo("https://ada:ghp_secret@github.com/o/h.git") == "https://github.com/o/h.git"
    assert without_userinfo("git+ssh://git@host/o/h.git") == "git+ssh://host/o/h.git"
    assert without_userinfo("git@github.com:o/h.git") == "git@github.com:o/h.git"  # scp form: a user only


def test_paths_are_rewritten_whole_components_only(tmp_path: Path):
    scrub = Scrub(tmp_path / "spec", tmp_path / "elsewhere" / "study")
    text = (f"{tmp_path}/spec/run.sh {tmp_path}/spec {tmp_path}/specs/other '{tmp_path}/spec' "
            f"{tmp_path}/elsewhere/study/logs/t.log {sys.prefix}/bin/python")
    assert scrub(text) == (f"./run.sh . {tmp_path}/specs/other '.' <study folder>/logs/t.log "
                           + ("<venv>" if sys.prefix != sys.base_prefix else sys.prefix) + "/bin/python")


def test_a_serving_runs_first_bad_session_folds_under_its_log(tmp_path: Path):
    """A serving target's run leaves ``<trial>.evidence.json`` beside its log: its first bad
    session (request and response) follows the log's tail, folded, the machine's paths scrubbed."""
    log = tmp_path / "t0.log"
    log.write_text(f"served from {tmp_path}/model\n")
    session = {"id": 3, "evidence": {"request": "hi", "response": "another session's tokens"}}
    (tmp_path / "t0.evidence.json").write_text(json.dumps({"server": "sglang", "sessions": [{"id": 1}, session]}))
    lines = failing_run_lines(str(log), Scrub(tmp_path))
    assert lines[:8] == ["## One failing run", "", "The last lines of its log (`t0.log`):", "", "```",
                         "served from ./model", "```", ""]
    shown = json.dumps({"server": "sglang", "workload": None, "session": session}, indent=2)
    assert lines[8:] == ["<details><summary>Its first bad session: the request and the response</summary>", "",
                         "```json", shown, "```", "", "</details>", ""]
