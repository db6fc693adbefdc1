"""No secret of a spec or of the environment reaches any file of a study or any printed line.

The spec holds an API key and a Hugging Face token in ``target.env``, in its command, in a
server's ``server_args``, ``launch`` and ``env``, and in a commits spec (its env and its build);
the targets print their whole environment and their arguments. After ``bisect run``, ``report``,
``report --paste`` and ``commits``, every file under the study folder and everything captured
from stdout and stderr is searched for each secret (raw and as JSON would quote it)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from bisect_cli import bisect
from commits_repo import make_flaky_repo

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(ROOT / "tests" / "sglang_fake_server.py")
HF = "hf_" + "QwErTy1234567890AsDfGhJkLzXcVbNm"
SK = "sk-" + "live0123456789abcdefGHIJKLMNOPqrst"
SITE = "correct horse battery staple"  # no secret shape, no secret name: listed in `secrets`
EXPORTED = "ghp_" + "ExportedInTheShell0123456789abcdefgh"  # only in the driver's environment
SECRETS = (HF, SK, SITE, EXPORTED)

LEAKY = """\
import json, os, sys
print("environment:", dict(os.environ))
print("arguments:", sys.argv)
seed = int(os.environ["HEISENBISECT_SEED"])
failures = 0 if os.environ.get("FIXED") == "1" else seed % 2 * 2
if failures:
    print(f"corrupted with HF_TOKEN={os.environ['HF_TOKEN']}", file=sys.stderr)
print(json.dumps({"failures": failures, "total": 4}))
"""


def leaks(folder: Path, *outputs: str) -> list[str]:
    """Every (place, secret) where a secret shows, raw or JSON-quoted."""
    forms = {s: {s, json.dumps(s)[1:-1]} for s in SECRETS}
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path}: {s[:6]}" for s, fs in forms.items() if any(f.encode() in data for f in fs)]
    for i, text in enumerate(outputs):
        found += [f"output {i}: {s[:6]}" for s, fs in forms.items() if any(f in text for f in fs)]
    return found


def environment() -> dict[str, str]:
    import os

    return {**os.environ, "GITHUB_TOKEN": EXPORTED}


@pytest.mark.slow
def test_run_report_and_paste_of_a_command_target_hold_no_secret(tmp_path: Path):
    (tmp_path / "leaky.py").write_text(LEAKY)
    spec = tmp_path / "leaky.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: leaky
        secrets: [SITE_PASS]
        target:
          command: [python, leaky.py, --api-key, {SK}]
          env: {{HF_TOKEN: {HF}, OPENAI_API_KEY: {SK}, SITE_PASS: {SITE}}}
          timeout: 30
        factors:
          - {{name: fixed, var: FIXED, levels: ["0", "1"]}}
        statistics: {{zero_rate: 0.3, max_trials: 20, first_look: 10}}
        execution: {{parallel: 2}}
        """))
    env = environment()
    ran = bisect("run", str(spec), "--plain", "-v", env=env)
    assert ran.returncode == 0, ran.stderr
    reported = bisect("report", str(spec), env=env)
    pasted = bisect("report", str(spec), "--paste", env=env)
    assert reported.returncode == pasted.returncode == 0, reported.stderr + pasted.stderr
    folder = tmp_path / "reports" / "leaky"
    assert (folder / "study.sqlite").exists() and list((folder / "logs").rglob("*.log"))
    assert leaks(folder, ran.stdout, ran.stderr, reported.stdout, reported.stderr, pasted.stdout) == []

    paste = (folder / "paste.md").read_text()
    assert "<redacted:HF_TOKEN>" in paste and "<redacted:SITE_PASS>" in paste  # the spec, redacted
    assert "> heisenbisect redacted " in paste.split("\n## ")[0]  # says so under the title
    log = next(p for p in (folder / "logs").rglob("*.log") if "corrupted" in p.read_text())
    assert "corrupted with HF_TOKEN=<redacted:HF_TOKEN>" in log.read_text()
    assert "'GITHUB_TOKEN': '<redacted:GITHUB_TOKEN>'" in log.read_text()

    again = bisect("run", str(spec), "--plain", env=env)  # the hashed identity resumes the study
    assert again.returncode == 0 and "cannot" not in again.stderr, again.stderr


@pytest.mark.slow
def test_a_server_target_with_secrets_in_its_launch_args_and_env_leaks_none(tmp_path: Path):
    spec = tmp_path / "served.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: served
        target:
          timeout: 60
          env: {{OPENAI_API_KEY: {SK}}}
          server:
            launch: [env, "HF_TOKEN={HF}", {sys.executable}, {FAKE}, serve, "{{model}}", --host,
                     "{{host}}", --port, "{{port}}", --fake-latency, "0.002",
                     --fake-startup-seconds, "0.05"]
            server_args: [--api-key, {SK}]
            env: {{SITE_PASS: {SITE}}}
            model: Qwen/Qwen3-8B
            ready: {{log: "Application startup complete"}}
            startup_timeout: 60
            workload: {{sessions: 2, rounds: 1}}
        secrets: [SITE_PASS]
        factors:
          - {{name: eager, kind: arg, levels: [[], [--enforce-eager]]}}
        statistics: {{zero_rate: 0.5, max_trials: 4, first_look: 2}}
        """))
    env = environment()
    ran = bisect("run", str(spec), "--plain", "-v", env=env)
    pasted = bisect("report", str(spec), "--paste", env=env)
    folder = tmp_path / "reports" / "served"
    assert list((folder / "logs").rglob("*.log")), ran.stderr
    logs = "".join(p.read_text() for p in (folder / "logs").rglob("*.log"))
    assert "'api_key': '<redacted:api-key>'" in logs  # the server's print of its arguments
    assert "HF_TOKEN=<redacted:" in logs and "--api-key <redacted:api-key>" in logs  # launch line
    assert leaks(folder, ran.stdout, ran.stderr, pasted.stdout, pasted.stderr) == []


@pytest.mark.slow
def test_a_commit_bisection_with_secrets_in_its_env_and_build_leaks_none(tmp_path: Path):
    repo = make_flaky_repo(tmp_path)
    spec = tmp_path / "hypotheses.yaml"
    show = "import os, sys; print(dict(os.environ), sys.argv); exec(open('check.py').read())"
    spec.write_text(textwrap.dedent(f"""\
        study: flaky
        secrets: [SITE_PASS]
        target:
          command: [{sys.executable!r}, -c, {show!r}, --hf-token, {HF}]
          result: exit
          timeout: 60
          env: {{FAIL_P: "0.5", HF_TOKEN: {HF}, OPENAI_API_KEY: {SK}, SITE_PASS: {SITE}}}
        commits:
          repo: {str(repo.path)!r}
          good: good
          bad: bad
          pythonpath: pkg
          build: "env"
          confidence: 0.95
        output: {str(tmp_path / 'out')!r}
        """))
    env = environment()
    ran = bisect("commits", str(spec), "--plain", env=env)
    assert ran.returncode == 0, ran.stderr
    logged = bisect("commits", "log", str(spec), env=env)
    folder = tmp_path / "out" / "flaky"
    assert (folder / "commits.md").exists()
    builds = list((folder / "logs").rglob("*.build.log"))
    assert builds and "<redacted:HF_TOKEN>" in builds[0].read_text()
    assert leaks(folder, ran.stdout, ran.stderr, logged.stdout, logged.stderr) == []
