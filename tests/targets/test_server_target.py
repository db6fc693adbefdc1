"""The generic server target (`target.server`): its spec section, a stack described only by the spec
(launch template, readiness by a log line), side signals as failure classes, per-launch records,
and a whole study against the fake vLLM-like server that reaches the fake's ground truth."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import psutil
import pytest

from bisect_cli import bisect
from heisenbisect.cli import main
from heisenbisect.errors import HeisenbisectError, SpecError
from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.stacks.custom import custom_stack
from heisenbisect.targets.registry import make_target
from heisenbisect.targets.server.target import ServerTarget

ROOT = Path(__file__).resolve().parents[2]
FAKE = str(ROOT / "tests" / "sglang_fake_server.py")


def fake_processes() -> list[psutil.Process]:
    """This test process's descendants that are fake servers or their spawned children, still running."""
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            line = " ".join(proc.cmdline())
            if ("sglang_fake_server" in line or "multiprocessing" in line) and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.Error:
            pass
    return out


def server_spec(server: str, tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(f"study: s\ntarget:\n  timeout: 60\n  server:\n{server}")
    return path


def built(server: str, tmp_path: Path) -> ServerTarget:
    path = server_spec(server, tmp_path)
    return make_target(parse_spec(path.read_text(), str(path)), tmp_path)


def trial(index: int) -> Trial:
    return Trial(f"baseline-{index:04d}", Config(()), index, 100 + index)


CUSTOM = f"""\
    launch: [{sys.executable}, {FAKE}, serve, "{{model}}", --host, "{{host}}", --port, "{{port}}",
             --fake-latency, "0.002", --fake-startup-seconds, "0.05"]
    model: Qwen/Qwen3-8B
    ready: {{log: "Application startup complete"}}
    startup_timeout: 60
"""


@pytest.mark.parametrize("server, problem", [
    ("    launch: [my-server, --listen, '8000']\n", "'launch' must place the server on {port}"),
    ("    model: m\n", "give 'launch' (a command with {port}) or a 'preset'"),
    ("    preset: vllm\n", "preset 'vllm' needs 'model'"),
    ("    preset: tgi\n    model: m\n", "unknown stack 'tgi': known stacks are sglang, vllm"),
    ("    launch: [s, '{port}']\n    signals: {log: [{name: acc, pattern: 'rate', below: 5}]}\n", "give the number a group"),
    ("    launch: [s, '{port}']\n    ready: {log: '(['}\n", "not a regular expression"),
])
def test_a_bad_server_section_is_one_line_naming_file_line_and_field(tmp_path, server, problem):
    path = server_spec(server, tmp_path)
    with pytest.raises(SpecError) as caught:
        parse_spec(path.read_text(), str(path))
    assert problem in str(caught.value) and f"{path}:" in str(caught.value) and "target.server" in str(caught.value)


def test_the_launch_template_fills_its_fields_and_leaves_other_braces():
    stack = custom_stack(("srv", "--port", "{port}", "--cfg", '{"port": {port}, "m": "{model}"}'), "/health", 200, None)
    assert stack.argv((), {"port": "9", "host": "h", "model": "m"}, ["--x"]) == [
        "srv", "--port", "9", "--cfg", '{"port": 9, "m": "m"}', "--x"]


def test_server_args_may_not_name_what_heisenbisect_picks_per_launch(tmp_path):
    with pytest.raises(HeisenbisectError, match=r"target.server.server_args: --port=9 is chosen per server"):
        built("    preset: vllm\n    model: m\n    server_args: [--port=9]\n", tmp_path)


def test_a_server_the_spec_describes_is_ready_by_its_log_line_and_leaves_nothing(tmp_path):
    target = built(CUSTOM + "    workload: {sessions: 4, rounds: 2}\n", tmp_path)
    assert target.stack.help_args is None and target.stack.ready_log == "Application startup complete"
    try:
        outcome = target.execute(trial(0), tmp_path / "t.log", threading.Event())
        assert outcome.status is TrialStatus.OK and (outcome.failures, outcome.total) == (0, 4), outcome.detail
        assert "launching: " + sys.executable in (tmp_path / "t.log").read_text()
    finally:
        target.close()
    assert not fake_processes()


def test_side_signals_count_as_failures_of_their_own_class(tmp_path):
    target = built(CUSTOM.replace('"0.05"]', '"0.05", --fake-nanlogprobs-rate, "0.5", --fake-fsm-rate, "0.3"]')
                   + "    workload: {sessions: 12, rounds: 2, stream: both}\n"
                   + "    signals: {logprobs: true, log: [{name: fsm, pattern: Failed to advance FSM}]}\n", tmp_path)
    try:
        outcome = target.execute(trial(0), tmp_path / "t.log", threading.Event())
    finally:
        target.close()
    assert outcome.status is TrialStatus.OK, outcome.detail
    bad, fsm = outcome.metrics["sessions_bad_logprobs"], outcome.metrics["signal_fsm"]
    assert bad > 0 and fsm > 0
    assert outcome.failures == min(outcome.total, bad + fsm)  # the fake corrupts nothing else
    assert f"bad_logprobs={int(bad)}" in outcome.detail and f"signals: fsm={int(fsm)}" in outcome.detail
    log = (tmp_path / "t.log").read_text()
    assert "bad_logprobs: round" in log and "logprob nan" in log
    assert "(streamed): bad_logprobs" in log, "a NaN in a streamed chunk is found too"


def test_the_response_size_cap_is_a_spec_key_and_a_response_past_it_an_error_session(tmp_path):
    """``workload.max_response_bytes`` reaches the stress client: the fake's answers (a few KB,
    streamed or not) run past 64 bytes, so every session is an error naming the cap; the trial is
    an error (no session answered), never a clean run."""
    target = built(CUSTOM + "    workload: {sessions: 4, rounds: 2, stream: both, max_response_bytes: 64}\n", tmp_path)
    try:
        outcome = target.execute(trial(0), tmp_path / "t.log", threading.Event())
    finally:
        target.close()
    assert outcome.status is TrialStatus.ERROR and outcome.metrics["sessions_error"] == 4, outcome.detail
    assert "the response ran past 64 bytes" in outcome.detail and "workload.max_response_bytes" in outcome.detail
    assert "(streamed): error: round 1: the response ran past 64 bytes" in (tmp_path / "t.log").read_text()
    assert not fake_processes()


@pytest.mark.parametrize("value, problem", [
    ("0", "greater than or equal to 1"), ("-5", "greater than or equal to 1"), ("1.5", "expected an integer"),
    ("true", "expected an integer"), ("'64'", "expected an integer"), (".inf", "expected an integer"),
    ("[1]", "expected an integer"),
])
@pytest.mark.parametrize("kind", ["server", "sglang"])
def test_a_bad_response_size_cap_is_one_line_exit_2_from_validate_and_run(tmp_path, capsys, kind, value, problem):
    """In this process, through the `main` the script runs (a traceback would fail the test):
    test_spec_yaml_types.py runs one such refusal as its own process."""
    launch = "    launch: [x, '{port}']\n" if kind == "server" else ""
    path = tmp_path / "spec.yaml"
    path.write_text(f"study: s\ntarget:\n  {kind}:\n{launch}    model: m\n    workload:\n"
                    f"      max_response_bytes: {value}\n")
    lines = []
    for command in ("validate", "run"):
        code = main([command, str(path), *(["--out", str(tmp_path / "out")] if command == "run" else [])])
        err = capsys.readouterr().err
        assert code == 2, err
        lines.append(err.strip())
    assert lines[0] == lines[1] and len(lines[0].splitlines()) == 1, lines
    line = path.read_text().splitlines().index(f"      max_response_bytes: {value}") + 1
    assert lines[0].startswith(f"{path}:{line}:27: ") and f"target.{kind}.workload.max_response_bytes" in lines[0], lines[0]
    assert problem in lines[0], lines[0]
    assert not (tmp_path / "out").exists()


def test_a_workload_without_the_cap_dumps_as_before_it_existed(tmp_path):
    """A stored study's identity is its target's dump: a spec that does not set the key must
    dump without it, so studies stored before the key existed resume."""
    path = server_spec(CUSTOM + "    workload: {sessions: 4}\n", tmp_path)
    dumped = parse_spec(path.read_text(), str(path)).target.model_dump(mode="json")["server"]["workload"]
    assert "max_response_bytes" not in dumped and dumped["sessions"] == 4
    path = server_spec(CUSTOM + "    workload: {max_response_bytes: 4096}\n", tmp_path)
    assert parse_spec(path.read_text(), str(path)).target.model_dump(mode="json")["server"]["workload"][
        "max_response_bytes"] == 4096


def test_runs_of_one_launch_carry_its_id_and_their_place(tmp_path):
    target = built(CUSTOM + "    trials_per_launch: 2\n    workload: {sessions: 2, rounds: 1}\n", tmp_path)
    try:
        first, second, third = (target.execute(trial(i), tmp_path / f"t{i}.log", threading.Event()) for i in range(3))
    finally:
        target.close()
    assert first.metrics["launch"] == second.metrics["launch"] != third.metrics["launch"]
    assert [o.metrics["launch_trial"] for o in (first, second, third)] == [1, 2, 1]


STUDY = f"""\
study: vllm-story
target:
  cwd: {ROOT}
  timeout: 60
  server:
    preset: vllm
    launch: [{sys.executable}, tests/sglang_fake_server.py, serve]
    model: Qwen/Qwen3-8B
    server_args: [--fake-story, --fake-latency, "0.05", --fake-startup-seconds, "0.05"]
    startup_timeout: 60
    trials_per_launch: 4
    workload: {{sessions: 8, rounds: 4}}
factors:
  - {{name: cuda_graph, kind: arg, levels: [[], [--enforce-eager]]}}
  - {{name: async_scheduling, kind: arg, levels: [[], [--no-async-scheduling]]}}
  - {{name: prefix_cache, kind: arg, levels: [[], [--no-enable-prefix-caching]]}}
statistics: {{zero_rate: 0.25, max_trials: 24, first_look: 8}}
execution: {{parallel: 2}}
"""


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_study_on_the_vllm_preset_reaches_the_fakes_ground_truth(tmp_path):
    spec = tmp_path / "vllm-story.yaml"
    spec.write_text(STUDY)
    run = bisect("run", str(spec), "--out", str(tmp_path / "out"), "--plain", timeout=1500)
    assert run.returncode in (0, 1), run.stderr[-3000:]
    folder = tmp_path / "out" / "vllm-story"
    results = json.loads((folder / "results.json").read_text())
    verdicts = {a["factor"]: a["verdict"] for a in results["arms"]}
    assert verdicts["cuda_graph"] == "eliminates" and verdicts["async_scheduling"] == "eliminates", verdicts
    assert verdicts["prefix_cache"] in ("no_effect", "inconclusive"), verdicts
    assert results["launches"].startswith("Launches. Up to 4 runs per server launch")
    assert "**Launches.**" in (folder / "report.md").read_text()
    assert not fake_processes()
