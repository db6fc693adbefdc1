"""Issue 37: a server target's "by hand" lines ran nothing (`cd ... && env X=0 ... --flag`: no
launch command, no stress command). Now they are the launch and the stress, and they run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bisect_cli import bisect

ROOT = Path(__file__).resolve().parents[2]

STUDY = f"""\
study: by-hand
target:
  cwd: {ROOT}
  timeout: 60
  env: {{FAKE_NOTE: "1"}}
  server:
    preset: vllm
    launch: [{sys.executable}, tests/sglang_fake_server.py, serve]
    model: Qwen/Qwen3-8B
    server_args: [--fake-latency, "0.01", --fake-startup-seconds, "0.05"]
    startup_timeout: 60
    trials_per_launch: 2
    workload: {{sessions: 2, rounds: 1}}
factors:
  - {{name: cuda_graph, kind: arg, levels: [[], [--enforce-eager]]}}
statistics: {{max_trials: 2, first_look: 2}}
"""


def free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def wait_ready(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_by_hand_lines_of_a_server_target_launch_it_and_stress_it(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(STUDY)
    ran = bisect("run", str(spec), "--out", str(tmp_path / "out"), "--plain", timeout=300)
    assert ran.returncode in (0, 1, 3), ran.stderr[-3000:]  # a verdict, or the fake never failed
    report = (tmp_path / "out" / "by-hand" / "report.md").read_text()
    block = report.split("The first trial of each config by hand")[1].split("```")[1]
    arm = block.split("# cuda_graph=--enforce-eager\n")[1].splitlines()
    assert arm[0] == f"cd {ROOT}"
    assert arm[1].startswith(f"env FAKE_NOTE=1 {sys.executable} tests/sglang_fake_server.py serve ")
    assert arm[1].endswith("--enforce-eager &   # the server; wait until it is ready")
    assert arm[2].startswith("bisect stress --url http://127.0.0.1:30000 --sessions 2 --rounds 1 ")
    # run them as a user would, on a port that is free here ("any free ports do")
    port = free_port()
    launch = arm[1].split(" &   #")[0].replace("30000", port)
    server = subprocess.Popen(["bash", "-c", f"{arm[0]} && exec {launch}"], start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(f"http://127.0.0.1:{port}/health")
        stress = arm[2].split("   #")[0].replace("30000", port).replace("bisect ", f"{sys.executable} -m heisenbisect ", 1)
        done = subprocess.run(["bash", "-c", stress], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        assert done.returncode in (0, 1) and "CORRUPTION sessions: 0/2" in done.stdout, done  # the fake, --enforce-eager: clean
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
