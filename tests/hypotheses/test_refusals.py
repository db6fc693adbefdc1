"""What `bisect run` and `bisect validate` refuse to conclude, end to end with real target processes.

Each case is one of docs/refusals.md: a target that never ran, a study without a valid run,
a budget that cannot prove zero, an edited target, runs that all end the same way.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from bisect_cli import bisect, bisect_in_process

FLAKY = """\
import json, os, random, sys
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
rate = 0.0 if os.environ.get("FIXED") == "1" else 0.5
print(json.dumps({"failures": int(rng.random() < rate), "total": 1}), flush=True)
print("[W] destroy_process_group() was not called before program exit", file=sys.stderr)
"""


def write_study(tmp_path: Path, command: str = "[python, flaky.py]", script: str = FLAKY, *,
                max_trials: int = 80, extra: str = "", strategy: str = "one_at_a_time", result: str | None = None) -> Path:
    (tmp_path / "flaky.py").write_text(script)
    result_line = f"result: {result}\n          " if result else ""
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: refusals
        target:
          command: {command}
          {result_line}timeout: 60
        {extra}factors:
          - name: fixed
            var: FIXED
            levels: ["0", "1"]
        statistics:
          max_trials: {max_trials}
          first_look: 10
          strategy: {strategy}
        execution:
          parallel: 2
        """))
    return spec


def run(tmp_path: Path, spec: Path, *extra: str) -> subprocess.CompletedProcess:
    return bisect("run", str(spec), "--out", str(tmp_path / "out"), "--plain", *extra, cwd=tmp_path)


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_a_result_followed_by_stderr_is_evidence_and_the_study_decides(tmp_path):
    spec = write_study(tmp_path)
    done = run(tmp_path, spec)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "out" / "refusals" / "results.json").read_text())
    assert results["arms"][0]["verdict"] == "eliminates" and results["baseline"]["failures"] > 0
    assert "verdict" not in results["baseline"] and results["schema_version"] >= 2
    assert "`" not in results["conclusion"] and "`fixed=1`" in results["conclusion_markdown"]
    report = (tmp_path / "out" / "refusals" / "report.md").read_text()
    assert "## Environment" in report and "HEISENBISECT_SEED=" in report and "one failing run [" in report


@pytest.mark.parametrize("command, extra, says", [
    ("[python, flakyy.py]", "", "target.command: python script 'flakyy.py' not found in"),
    ("[python, flaky.py]", "  cwd: nowhere\n", "target.cwd: folder"),
    ("[./flaky.py]", "", "is not executable"),
    ("[no-such-tool-here, --x]", "", "command 'no-such-tool-here' not found on PATH"),
])
def test_a_target_that_cannot_run_stops_before_any_trial_with_one_line(tmp_path, capsys, monkeypatch, command, extra, says):
    spec = write_study(tmp_path, command)
    if extra:  # cwd sits under target:
        spec.write_text(spec.read_text().replace("  timeout: 60\n", "  timeout: 60\n" + extra))
    monkeypatch.chdir(tmp_path)
    for argv in (["run", str(spec), "--out", str(tmp_path / "out"), "--plain"], ["validate", str(spec)]):
        done = bisect_in_process(capsys, *argv)
        assert done.returncode == 2
        line = one_line(done.stderr)
        assert line.startswith(f"{spec}:") and says in line, line
    assert not (tmp_path / "out" / "refusals" / "logs").exists()  # no trial ran


@pytest.mark.parametrize("strategy", ["one_at_a_time", "group"])
def test_a_target_that_never_ran_is_caught_from_the_first_trial(tmp_path, strategy):
    spec = write_study(tmp_path, "[/bin/sh, -c, 'no-such-tool-here --x']", strategy=strategy)
    done = run(tmp_path, spec)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.splitlines()[-1]  # after --plain's progress lines
    assert line.startswith("error: the target did not run: exit 127") and "log: " in line, line
    assert len(list((tmp_path / "out" / "refusals" / "logs").glob("*.log"))) <= 2  # stopped at once


@pytest.mark.parametrize("strategy", ["one_at_a_time", "group"])
def test_a_study_without_a_valid_run_says_so_and_exits_4(tmp_path, strategy):
    script = 'print(\'{"failures": 0, "total": 1, "metrics": {"x": NaN}}\')\n'
    spec = write_study(tmp_path, script=script, strategy=strategy)
    done = run(tmp_path, spec)
    assert done.returncode == 4, done.stderr[-2000:]
    # the study gives up after first_look (10) trials without a result; one more in flight may land
    said = re.search(r"no trial produced a result: (\d+) errors, 0 skipped, 0 timeouts; first: "
                     r"result line on stdout: metrics\.x is NaN", done.stderr)
    assert said and int(said[1]) in (10, 11), done.stderr[-2000:]
    assert "could not be reproduced" not in done.stdout + done.stderr
    report = (tmp_path / "out" / "refusals" / "report.md").read_text()
    assert "## No trial produced a result" in report and f"| error | {said[1]} |" in report
    json.loads((tmp_path / "out" / "refusals" / "results.json").read_text())  # strictly valid JSON


def test_every_run_ending_the_same_way_is_flagged(tmp_path):
    script = "import sys\nprint('ImportError: cannot import name fused_kernel', file=sys.stderr)\nsys.exit(1)\n"
    spec = write_study(tmp_path, script=script, max_trials=20, result="exit")
    done = run(tmp_path, spec)
    assert "every one of" in done.stderr and "ImportError: cannot import name fused_kernel" in done.stderr
    report = (tmp_path / "out" / "refusals" / "report.md").read_text()
    assert "## Warning: every run ended the same way" in report


def test_validate_warns_about_a_budget_that_cannot_prove_zero(tmp_path):
    spec = write_study(tmp_path, max_trials=20)
    done = bisect("validate", str(spec), cwd=tmp_path)
    assert done.returncode == 0
    assert f"warning: {spec}:10:15: statistics.max_trials: 20 runs cannot prove a zero rate" in done.stderr
    assert "at least 59 runs" in done.stderr


def test_an_arm_without_failures_that_cannot_claim_zero_is_inconclusive(tmp_path):
    spec = write_study(tmp_path, max_trials=20)
    done = run(tmp_path, spec)
    assert done.returncode == 1, done.stderr[-2000:]
    results = json.loads((tmp_path / "out" / "refusals" / "results.json").read_text())
    arm = results["arms"][0]
    assert (arm["verdict"], arm["failures"]) == ("inconclusive", 0)
    assert "59 runs without failure are needed" in arm["note"]
    assert "too few to claim zero: 59 runs" in results["conclusion"] and "suppresses" not in results["conclusion"]


def test_an_edited_target_script_is_refused_until_fresh(tmp_path):
    spec = write_study(tmp_path, max_trials=20)
    assert run(tmp_path, spec).returncode == 1
    (tmp_path / "flaky.py").write_text(FLAKY.replace("0.5", "0.6"))
    refused = run(tmp_path, spec)
    assert refused.returncode == 2 and "target_files" in refused.stderr and "--fresh" in refused.stderr
    assert run(tmp_path, spec, "--fresh").returncode == 1


def test_a_listed_target_file_is_part_of_the_identity(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "fused.cu").write_text("// v1\n")
    spec = write_study(tmp_path, max_trials=20)
    spec.write_text(spec.read_text().replace("  timeout: 60\n", "  timeout: 60\n  files: ['kernels/*.cu']\n"))
    assert run(tmp_path, spec).returncode == 1
    (tmp_path / "kernels" / "fused.cu").write_text("// v2\n")
    assert run(tmp_path, spec).returncode == 2
