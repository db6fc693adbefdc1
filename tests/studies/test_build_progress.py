"""A build under way shows on the live table (its elapsed time and last output line) until it
ends; a hung build is killed after commits.build_timeout, 600 s unless the spec says otherwise."""

from __future__ import annotations

import io
import threading
from collections import Counter

from rich.console import Console

from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.progress import LiveProgress
from heisenbisect.targets.commit import builds_under_way, run_build


def test_a_running_build_shows_its_elapsed_time_and_last_line_until_it_ends(tmp_path):
    gate = tmp_path / "go"
    script = f"echo collecting; echo 'building wheel for pkg'; while [ ! -e {gate} ]; do sleep 0.05; done; echo done"
    logs = tmp_path / "logs"
    done: list[tuple[bool, str]] = []
    build = threading.Thread(target=lambda: done.append(run_build(
        ("/bin/sh", "-c", script), tmp_path, {"PATH": "/usr/bin:/bin"}, logs / "t-0001.build.log",
        threading.Event(), 600)))
    build.start()
    try:
        notes: list[str] = []
        while not any("building wheel" in n for n in notes):
            assert build.is_alive(), done
            notes = builds_under_way(logs)
        [note] = notes
        assert note.startswith("building t-0001: ") and note.endswith("s: building wheel for pkg")
        console = Console(file=io.StringIO(), force_terminal=True, width=120)
        live = LiveProgress("bisect commits x", lambda: [("abc1234", 0, 0, None)], console,
                            notes=lambda: builds_under_way(logs))
        live.update(Counter(), None)
        live.close()
        assert "building t-0001" in console.file.getvalue()
    finally:
        gate.touch()
        build.join()
    assert done == [(True, f"exit 0, log {logs / 't-0001.build.log'}")]
    assert builds_under_way(logs) == []


def test_build_timeout_defaults_to_600_seconds(tmp_path):
    spec = parse_spec("target: {command: [/bin/true]}\ncommits: {good: HEAD~1, bad: HEAD, build: make}\n",
                      tmp_path / "h.yaml")
    assert spec.commits.build_timeout == 600


def test_a_build_log_still_empty_or_holding_only_its_command_shows_nothing(tmp_path):
    (tmp_path / "a.build.log").write_bytes(b"")  # the build's log is created before anything is written
    (tmp_path / "b.build.log").write_bytes(b"$ make\n")
    assert builds_under_way(tmp_path) == []


def test_a_running_trial_shows_how_long_it_has_run(tmp_path):
    """A hung trial is seen hanging: the caption names its config and its elapsed seconds, and
    the line goes once the config has nothing running (issue 35)."""
    import time

    from heisenbisect.progress import running_lines
    from heisenbisect.records import Config

    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    live = LiveProgress("bisect commits x", lambda: [("abc1234", 0, 0, None)], console)
    hung = Config(commit="f00dfeed" * 5)
    live.update(Counter({hung: 1}), None)
    live.close()  # the last frame, drawn while it still runs
    assert f"running baseline @{hung.commit[:10]}: 0s" in console.file.getvalue()
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    live = LiveProgress("bisect commits x", lambda: [("abc1234", 0, 0, None)], console)
    live.update(Counter({hung: 1}), None)
    live.update(Counter({hung: 0}), None)
    live.close()
    assert "running baseline" not in console.file.getvalue()
    now = time.monotonic()
    assert running_lines({"a": now - 42.4, "b": now - 3}, now) == ["running a: 42s", "running b: 3s"]
