"""Round 4 (issue 37), server launch: readiness by the server's own log lines, a URL path that is
one, template values filled in place and never re-read, integer settings that are integers."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from heisenbisect.errors import SpecError
from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.stacks.custom import custom_stack
from heisenbisect.targets.server.process import Readiness, ServerProcess

SLOW_SERVER = """\
import http.server, sys, time

class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass

port = int(sys.argv[sys.argv.index("--port") + 1])
time.sleep(1.5)  # loading a model: its log says nothing yet
server = http.server.HTTPServer(("127.0.0.1", port), Ok)
print(f"serving on port {port}", flush=True)
server.serve_forever()
"""


def refused(tmp_path: Path, section: str, server: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(f"study: s\ntarget:\n  timeout: 60\n  {section}:\n{server}")
    with pytest.raises(SpecError) as caught:
        parse_spec(path.read_text(), str(path))
    return str(caught.value)


def test_readiness_by_log_counts_only_the_servers_own_output(tmp_path):
    """The log starts with heisenbisect's ``$ argv`` header, whose ``--port N`` matches the
    pattern too: ready only once the server itself says so, and then it answers."""
    script = tmp_path / "server.py"
    script.write_text(SLOW_SERVER)
    stack = custom_stack((sys.executable, str(script), "--port", "{port}"), None, 200, r"port \d+")
    server = ServerProcess.start(stack, (), "m", [], {})
    try:
        assert server.wait_ready(30, threading.Event(), poll_s=0.1) is Readiness.READY
        waited = time.monotonic() - server.started
        assert waited >= 1.4, f"ready after {waited:.2f}s: the header was read as the server's"
        assert server.status("/") == 200
    finally:
        server.stop()


@pytest.mark.parametrize("path", ["/he alth", "/h\\r\\nX-Injected: 1", "/h\\x00", "/caf\\xe9"])
def test_ready_path_must_be_a_url_path(tmp_path, path):
    message = refused(tmp_path, "server", f"    launch: [s, '{{port}}']\n    ready: {{path: \"{path}\"}}\n")
    assert f"{tmp_path / 'spec.yaml'}:6:" in message and "target.server.ready.path" in message
    assert "URL path" in message and "\n" not in message.strip()


@pytest.mark.parametrize("section, server", [
    ("server", "    launch: [s, '{port}']\n    trials_per_launch: true\n"),
    ("sglang", "    model: m\n    trials_per_launch: true\n"),
    ("server", "    launch: [s, '{port}']\n    trials_per_launch: 2.0\n"),
])
def test_trials_per_launch_is_a_strict_integer(tmp_path, section, server):
    message = refused(tmp_path, section, server)
    assert f"target.{section}.trials_per_launch" in message and ":6:" in message


@pytest.mark.parametrize("server, field", [
    ("    launch: [s, '{port}', 3]\n", "launch[2]"),
    ("    launch: [s, {port}]\n", "launch[1]"),
    ("    launch: [s, '{port}', [a]]\n", "launch[2]"),
    ("    launch: [s, '{port}']\n    server_args: [--tp, 2]\n", "server_args[1]"),
])
def test_template_items_must_be_strings(tmp_path, server, field):
    """A guard: this already held on main (pydantic's str is not lax about numbers)."""
    assert f"target.server.{field}: expected a string" in refused(tmp_path, "server", server)


MODEL = "org/m; rm -rf ~ && echo {host}:{port} $(id) 'q\" {nccl_port}"


def test_each_template_field_becomes_exactly_its_value_in_place():
    """A value is never split, quoted or read again as a template: a ``{port}`` inside the model's
    name stays as it is."""
    stack = custom_stack(("srv", "--model={model}", "{model}", "--port", "{port}"), "/health", 200, None)
    argv = stack.argv(("py",), {"model": MODEL, "host": "h", "port": "9", "nccl_port": "7"}, ["--x"])
    assert argv == ["py", "srv", f"--model={MODEL}", MODEL, "--port", "9", "--x"]


def test_a_launch_string_splits_the_template_never_the_values(tmp_path):
    """``launch`` as one string: the template is split once, at load; the model then fills one
    argument whole, whatever it holds, and reaches the server that way."""
    script = tmp_path / "argv.py"
    script.write_text("import json, sys\nprint('ARGV ' + json.dumps(sys.argv[1:]), flush=True)\n"
                      "import time; time.sleep(30)\n")
    path = tmp_path / "spec.yaml"
    path.write_text("study: s\ntarget:\n  timeout: 60\n  server:\n"
                    f"    launch: '{sys.executable} {script} --model {{model}} --port {{port}}'\n"
                    f"    model: {MODEL!r}\n".replace("\\'", "''")
                    + "    ready: {log: '^ARGV'}\n")
    from heisenbisect.targets.registry import make_target

    target = make_target(parse_spec(path.read_text(), str(path)), tmp_path)
    server = ServerProcess.start(target.stack, target.launcher, target.model, [], {})
    try:
        assert server.wait_ready(30, threading.Event(), poll_s=0.1) is Readiness.READY
        line = next(x for x in server.log_tail().splitlines() if x.startswith("ARGV "))
    finally:
        server.stop()
    import json

    assert json.loads(line[5:]) == ["--model", MODEL, "--port", str(server.ports.http)]
