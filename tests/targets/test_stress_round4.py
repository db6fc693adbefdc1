"""Round 4 (issue 37), `bisect stress` and Ray addresses: a port out of range and a garbage
address are one line at once; SIGTERM mid-stress stops cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.runners.ray_cluster import RayUnavailableError, connect
from heisenbisect.stacks.sglang import STACK as SGLANG
from heisenbisect.targets.server.process import Readiness, ServerProcess

TESTS = Path(__file__).resolve().parents[1]
FAKE = (sys.executable, str(TESTS / "sglang_fake_server.py"))


@pytest.fixture
def fake_url():
    server = ServerProcess.start(SGLANG, FAKE, "m", ["--fake-latency", "0.001",
                                                     "--fake-startup-seconds", "0.05"], dict(os.environ))
    try:
        assert server.wait_ready(60, threading.Event(), poll_s=0.1) is Readiness.READY, server.log_tail()
        yield server.url
    finally:
        server.stop()


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:-1", "http://h:port"])
def test_a_port_out_of_range_is_one_line_exit_2(capsys, url):
    assert main(["stress", "--url", url, "--sessions", "1"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "--url" in err and "port" in err


@pytest.mark.parametrize("address", ["garbage", "no such cluster", "127.0.0.1:99999", "ray://h:x"])
def test_a_garbage_ray_address_fails_at_once_without_importing_ray(address):
    """Checked before Ray is imported (its import prints warnings) and before it retries for 30 s."""
    started = time.monotonic()
    with pytest.raises(RayUnavailableError, match="execution.address|--address|RAY_ADDRESS") as caught:
        connect(address)
    assert time.monotonic() - started < 5 and repr(address) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_garbage_ray_address_is_one_line_from_the_command_line(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("study: s\ntarget:\n  command: ['true']\n  timeout: 10\n"
                    "factors:\n  - {name: x, kind: env, var: X, levels: ['0', '1']}\n")
    done = subprocess.run([sys.executable, "-m", "heisenbisect", "run", str(spec), "--runner", "ray",
                           "--address", "garbage", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "'garbage'" in done.stderr and "Warning" not in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_sigterm_mid_stress_ends_cleanly(fake_url):
    proc = subprocess.Popen([sys.executable, "-m", "heisenbisect", "stress", "--url", fake_url,
                             "--sessions", "3000", "--rounds", "1"],  # all in flight at once
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)  # the sessions run
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=240)  # cancelling thousands of tasks is slow on a loaded machine
    assert proc.returncode == 143, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
