"""The SGLang target's server lifecycle against the fake server's real process tree.

Every test watches the processes this test process spawns (sampling its descendants) and
checks at the end that each one it ever saw is gone: after success, a crash at startup, a
hang at startup, hanging requests, and cancellation.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import socket
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from heisenbisect.errors import HeisenbisectError
from heisenbisect.hypotheses.loader import load_spec, parse_spec
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.runners.local import LocalRunner
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.openai.workload import StressSettings
from heisenbisect.targets.server.launch_flags import parse_help_flags, unknown_flags
from heisenbisect.targets.server.ports import allocate_ports, port_is_free, release_ports
from heisenbisect.targets.server.spec import make_server_target
from heisenbisect.targets.server.target import ServerTarget

ROOT = Path(__file__).resolve().parents[2]
FAKE = (sys.executable, str(Path(__file__).resolve().parents[1] / "sglang_fake_server.py"))
REAPER = "heisenbisect.targets.reaper"


class ProcessWatch:
    """Samples this process's descendants in the background; remembers every one it saw.

    Descendants that were already running when the watch began (a session-wide Ray cluster,
    say) and whatever they spawn later are not the test's: they are left out.
    """

    def __init__(self):
        self.preexisting = {p.pid for p in psutil.Process().children(recursive=True)}
        self.seen: dict[tuple[int, float], psutil.Process] = {}
        self.cmdlines: dict[tuple[int, float], str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.02):
            for proc in me.children(recursive=True):
                try:
                    if proc.pid in self.preexisting or any(p.pid in self.preexisting for p in proc.parents()):
                        continue
                    key = (proc.pid, proc.create_time())
                    if key not in self.seen:
                        self.seen[key], self.cmdlines[key] = proc, " ".join(proc.cmdline())
                except psutil.Error:
                    pass

    def servers(self) -> list[psutil.Process]:
        """Processes of launched servers and their children; not the ``--help`` probes, nor a
        child sampled between fork and exec (it still shows this process's command line)."""
        return [p for key, p in self.seen.items()
                if any(mark in self.cmdlines[key] for mark in ("sglang_fake_server", "multiprocessing"))
                and "--help" not in self.cmdlines[key]]

    def alive(self) -> list[str]:
        out = []
        for proc in self.seen.values():
            try:
                if REAPER in " ".join(proc.cmdline()):
                    continue  # this process's reaper lives as long as this process, by design
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    out.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            except psutil.Error:
                pass
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def watch():
    w = ProcessWatch()
    yield w
    w.stop()


def target(*server_args: str, **kwargs) -> ServerTarget:
    settings = dict(sessions=12, rounds=2, request_timeout=kwargs.pop("request_timeout", 10.0))
    return ServerTarget(
        "deepseek-ai/DeepSeek-V3", stack=SGLANG, server_args=("--fake-latency", "0.002", "--fake-startup-seconds", "0.05", *server_args), launcher=FAKE,
        startup_timeout_s=kwargs.pop("startup_timeout_s", 30.0), poll_s=0.05, stop_grace_s=kwargs.pop("stop_grace_s", 3.0),
        workload=StressSettings(**settings), **kwargs,
    )


def trial(index: int = 0, env=None, args=(), workdir=None, name="baseline", commit=None) -> Trial:
    config = Config((), commit) if name == "baseline" else Config((("f", name),), commit)
    return Trial(f"{name}-{index:04d}", config, index, 1000 + index, env=env or {}, args=tuple(args), workdir=workdir)


def server_pid(log_path: Path) -> int:
    return int(re.search(r"pid (\d+);", log_path.read_text()).group(1))


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_one_launch_serves_trials_per_launch_trials_then_everything_is_torn_down(watch, tmp_path):
    t = target("--fake-leak-rate", "0.2", trials_per_launch=2)
    outcomes = [t.execute(trial(i), tmp_path / f"t{i}.log", threading.Event()) for i in range(2)]
    first = server_pid(tmp_path / "t0.log")
    assert server_pid(tmp_path / "t1.log") == first
    assert not t.servers(), "a server that served trials_per_launch trials is stopped"
    assert not watch.alive()
    third = t.execute(trial(2), tmp_path / "t2.log", threading.Event())
    assert server_pid(tmp_path / "t2.log") != first
    assert len(t.servers()) == 1, "the new launch waits for its second trial"
    server_log = t.servers()[0].log_path
    assert server_log.exists()
    t.close()
    assert not watch.alive()
    assert not server_log.parent.exists(), "a server's log goes with it (trials keep copies)"
    for o in [*outcomes, third]:
        assert o.status is TrialStatus.OK and o.total == 12 and 0 < o.failures <= 12, o
        assert o.detail.startswith(f"CORRUPTION sessions: {o.failures}/12")
        assert {"tokens_per_s", "latency_p50_s", "latency_p95_s", "sessions_leak"} <= set(o.metrics)
        assert o.metrics["tokens_per_s"] > 0
    log = (tmp_path / "t1.log").read_text()
    assert "server log: during this trial" in log and "POST /v1/chat/completions" in log
    assert "server log: startup" in (tmp_path / "t0.log").read_text() and "server log: startup" not in log
    assert re.search(r"session \d+: leak: round \d: content contains", log)


def test_another_commit_in_the_same_worktree_gets_a_fresh_server(watch, tmp_path):
    t = target(trials_per_launch=2)
    tree = {"PYTHONPATH": str(tmp_path / "worktree-0" / "python")}
    for i, sha in enumerate(("a" * 40, "b" * 40)):
        assert t.execute(trial(i, env=tree, commit=sha), tmp_path / f"t{i}.log", threading.Event()).status is TrialStatus.OK
    assert server_pid(tmp_path / "t0.log") != server_pid(tmp_path / "t1.log")
    assert len(t.servers()) == 1, "the idle server of the other commit was stopped before the launch"
    t.close()
    assert not watch.alive()


def test_configs_get_their_own_servers_and_ports_side_by_side(watch, tmp_path):
    t = target()
    results = {}

    def run(name, env):
        results[name] = t.execute(trial(0, env=env, name=name), tmp_path / f"{name}.log", threading.Event())

    threads = [threading.Thread(target=run, args=(n, {"SGLANG_OPT_USE_MULTI_STREAM_OVERLAP": v}))
               for n, v in (("on", "1"), ("off", "0"))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t.close()
    assert all(o.status is TrialStatus.OK and o.failures == 0 for o in results.values()), results
    ports = {re.search(r"--port (\d+)", (tmp_path / f"{n}.log").read_text()).group(1) for n in results}
    assert len(ports) == 2
    assert not watch.alive()


def test_environment_and_arguments_reach_the_server(watch, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setenv("DROP_ME", "1")
    t = target(env={"FROM_TARGET": "yes"}, trials_per_launch=2)
    env = {"SGLANG_OPT_USE_MULTI_STREAM_OVERLAP": "0", "DROP_ME": None, "PYTHONPATH": str(tmp_path)}
    outcome = t.execute(trial(env=env, args=["--disable-cuda-graph"]), tmp_path / "t.log", threading.Event())
    assert outcome.status is TrialStatus.OK
    (server,) = t.servers()
    seen_env = psutil.Process(server.proc.pid).environ()
    cmdline = psutil.Process(server.proc.pid).cmdline()
    t.close()
    assert seen_env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert seen_env["SGLANG_OPT_USE_MULTI_STREAM_OVERLAP"] == "0"
    assert seen_env["PYTHONPATH"] == str(tmp_path) and seen_env["FROM_TARGET"] == "yes"
    assert "DROP_ME" not in seen_env
    assert int(seen_env["SGLANG_TCP_STORE_PORT"]) != 29600 and "SGLANG_PORT" in seen_env
    assert cmdline[-1] == "--disable-cuda-graph" and "--nccl-port" in cmdline
    assert not watch.alive()


def test_a_worktree_python_folder_goes_on_pythonpath(tmp_path):
    (tmp_path / "python" / "sglang").mkdir(parents=True)
    env = target().server_environment(trial(workdir=str(tmp_path)))
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path / "python")
    given = target().server_environment(trial(workdir=str(tmp_path), env={"PYTHONPATH": "/elsewhere"}))
    assert given["PYTHONPATH"] == "/elsewhere"


def test_startup_crash_is_an_error_showing_the_log_tail(watch, tmp_path):
    t = target("--fake-startup", "crash")
    outcome = t.execute(trial(), tmp_path / "t.log", threading.Event())
    assert outcome.status is TrialStatus.ERROR
    assert "exited with 1 during startup" in outcome.detail
    assert "Scheduler hit an exception" in outcome.detail and "CUDA out of memory" in outcome.detail
    assert len(watch.servers()) >= 4, "the crash left a scheduler, a TP worker and a detokenizer behind"
    assert not watch.alive()


def test_startup_hang_times_out_and_stubborn_children_are_killed(watch, tmp_path):
    # the timeout leaves the fake's start-up (its children, its log line) seconds even on a loaded
    # machine: at 1.5 s the line sometimes had not been printed yet when the timeout fired
    t = target("--fake-startup", "hang", "--fake-stubborn", startup_timeout_s=10, stop_grace_s=0.5)
    outcome = t.execute(trial(), tmp_path / "t.log", threading.Event())
    assert outcome.status is TrialStatus.TIMEOUT
    assert "not ready after 10s" in outcome.detail and "Capture cuda graph begin" in outcome.detail
    assert not watch.alive()


def test_hanging_requests_hit_the_trial_timeout(watch, tmp_path):
    t = target("--fake-hang-rate", "1", "--fake-hang-seconds", "60", trial_timeout_s=1.5, request_timeout=30.0)
    outcome = t.execute(trial(), tmp_path / "t.log", threading.Event())
    assert outcome.status is TrialStatus.TIMEOUT and "1.5s" in outcome.detail
    assert not t.servers() and not watch.alive()


def test_a_server_dying_mid_trial_is_torn_down_and_said(watch, tmp_path):
    t = target("--fake-crash-after", "15", trials_per_launch=5)
    outcome = t.execute(trial(), tmp_path / "t.log", threading.Event())
    assert "the server died during the trial" in outcome.detail
    assert outcome.metrics["sessions_error"] >= 1 and outcome.total < 12
    assert outcome.status is (TrialStatus.OK if outcome.total else TrialStatus.ERROR)
    assert "illegal memory access" in (tmp_path / "t.log").read_text()
    assert not t.servers() and not watch.alive()


def test_sessions_that_all_error_are_not_evidence_unless_crashes_count(watch, tmp_path):
    outcome = target("--fake-error-rate", "1").execute(trial(), tmp_path / "a.log", threading.Event())
    assert outcome.status is TrialStatus.ERROR and "every session failed" in outcome.detail
    assert "HTTP 500" in outcome.detail
    counted = target("--fake-error-rate", "1", crashes_count=True).execute(trial(1), tmp_path / "b.log", threading.Event())
    assert counted.status is TrialStatus.OK and counted.failures == counted.total == 12
    assert not watch.alive()


@pytest.mark.parametrize("phase", ["startup", "stress"])
def test_cancellation_returns_promptly_and_leaves_nothing(watch, tmp_path, phase):
    args = ("--fake-startup", "hang") if phase == "startup" else ("--fake-hang-rate", "1", "--fake-hang-seconds", "60")
    t = target(*args, request_timeout=60.0)
    cancelled, done = threading.Event(), {}
    log = tmp_path / "t.log"
    runner = threading.Thread(target=lambda: done.setdefault("o", t.execute(trial(), log, cancelled)))
    runner.start()
    if phase == "startup":
        wait_for(lambda: any("Capture cuda graph begin" in s.log_tail() for s in t.servers()))
    else:
        wait_for(lambda: log.exists() and "trial 1 of at most" in log.read_text())
    time.sleep(0.3)
    cancelled.set()
    runner.join(30)
    assert not runner.is_alive()  # returned long before the 60 s hang would have ended
    assert done["o"].status is TrialStatus.ERROR and done["o"].detail == "cancelled"
    assert not t.servers() and not watch.alive()


def test_closing_the_runner_mid_trial_like_ctrl_c_leaves_nothing(watch, tmp_path):
    """What `bisect run` does on Ctrl-C: the engine's runner is closed with trials in flight."""
    t = target("--fake-hang-rate", "1", "--fake-hang-seconds", "900", request_timeout=900.0)
    runner = LocalRunner(t, tmp_path, parallel=2)
    for i, name in enumerate(("a", "b")):
        runner.submit(trial(i, env={"X": name}, name=name))
    wait_for(lambda: sum("trial 1 of at most" in p.read_text() for p in tmp_path.glob("*.log")) == 2)
    closer = threading.Thread(target=runner.close)
    closer.start()
    closer.join(450)  # a margin no load reaches: a close that waited for the hangs takes 900 s
    assert not closer.is_alive()  # closed long before the 900 s hangs would have ended
    assert not t.servers() and not watch.alive()


def test_a_flag_this_sglang_lacks_makes_the_config_untestable(watch, tmp_path):
    outcome = target().execute(trial(args=["--enable-multi-stream-magic"]), tmp_path / "t.log", threading.Event())
    assert outcome.status is TrialStatus.SKIP and "--enable-multi-stream-magic" in outcome.detail
    assert not watch.servers(), f"no server is launched for an untestable config: {watch.cmdlines}"


def test_help_parsing_and_unknown_flags():
    parser = argparse.ArgumentParser(prog="sglang serve")
    parser.add_argument("--model-path", "--model", help="see also --tokenizer-path for the tokenizer; " * 3)
    parser.add_argument("--tp-size", "--tp", type=int)
    parser.add_argument("--enable-x", action=argparse.BooleanOptionalAction)
    parser.add_argument("--disable-cuda-graph", action="store_true")
    group = parser.add_argument_group("kv cache")
    group.add_argument("--kv-cache-dtype", choices=["auto", "fp8_e4m3"])
    flags = parse_help_flags(parser.format_help())
    assert flags == {"--model-path", "--model", "--tp-size", "--tp", "--enable-x", "--no-enable-x",
                     "--disable-cuda-graph", "--kv-cache-dtype"}
    assert unknown_flags(["--tp", "4", "--kv-cache-dtype=auto", "--disable-cuda", "--bogus", "-x", "--"], flags) == ["--bogus"]


def test_ports_of_servers_never_overlap():
    sets = [allocate_ports() for _ in range(20)]
    try:
        held = [p for s in sets for p in s.held]
        assert len(held) == len(set(held))
        for s in sets:
            assert {s.http, s.nccl, s.tcp_store, s.port_base} <= s.held
    finally:
        for s in sets:
            release_ports(s)
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        assert not port_is_free(busy.getsockname()[1])


def test_copies_share_servers_and_idle_ones_are_stopped(watch, tmp_path):
    """A Ray worker unpickles a fresh copy per task: the copy must find the server the last one kept."""
    t = target(trials_per_launch=3, idle_timeout_s=1.0)
    assert t.execute(trial(0), tmp_path / "t0.log", threading.Event()).status is TrialStatus.OK
    clone = pickle.loads(pickle.dumps(t))
    assert clone.workload.tools.names == t.workload.tools.names
    assert clone.servers() == t.servers() and len(t.servers()) == 1
    assert clone.execute(trial(1), tmp_path / "t1.log", threading.Event()).status is TrialStatus.OK
    assert server_pid(tmp_path / "t1.log") == server_pid(tmp_path / "t0.log")
    wait_for(lambda: not t.servers(), timeout=10)
    wait_for(lambda: not watch.alive(), timeout=10)


def test_make_sglang_target_from_a_spec(tmp_path):
    spec = load_spec(ROOT / "examples" / "sglang" / "hypotheses.yaml")
    t = make_server_target(spec)
    assert t.launcher == (sys.executable, "-m", "sglang.launch_server")  # the running interpreter
    assert "--tool-call-parser" in t.server_args and t.trials_per_launch == 3
    assert t.startup_timeout_s == 1800 and t.workload.sessions == 60
    fake = make_server_target(load_spec(ROOT / "examples" / "sglang" / "fake-story.yaml"), ROOT / "examples" / "sglang")
    assert Path(fake.cwd).resolve() == ROOT and fake.launcher[1:3] == ("tests/sglang_fake_server.py", "--fake-story")
    bad = parse_spec("target: {sglang: {model: m, server_args: '--port 30000 --tp 2'}}\n", "bad.yaml")
    with pytest.raises(HeisenbisectError, match="--port is chosen per server"):
        make_server_target(bad)
    custom = parse_spec("target: {sglang: {model: m, launcher: sglang serve, workload: {tools: [{type: function}]}}}\n", "t.yaml")
    with pytest.raises(HeisenbisectError, match=r"workload.tools\[0\]"):
        make_server_target(custom)
