"""The session a study's run records (`studies.run_record.SessionRecorder`, shared by screening
and amplify): a start only once the engine dispatched trials, a finish only after a start.
A real sqlite store and a real local runner."""

from __future__ import annotations

from pathlib import Path

from heisenbisect.hypotheses.loader import load_spec
from heisenbisect.runners.local import LocalRunner
from heisenbisect.store import Store
from heisenbisect.studies.run_record import SessionRecorder
from heisenbisect.study_meta import FINISHED_KEY, environment_of, sessions_of
from heisenbisect.targets.command import CommandTarget


def recorder(tmp_path: Path) -> tuple[SessionRecorder, Store, LocalRunner]:
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text('study: s\ntarget:\n  command: ["true"]\n'
                         'factors:\n  - {name: f, kind: env, var: F, levels: ["0", "1"]}\n'
                         "execution:\n  parallel: 3\n")
    store = Store(tmp_path / "study.sqlite")
    runner = LocalRunner(CommandTarget(argv=("true",), timeout_s=5), tmp_path / "logs", parallel=3)
    return SessionRecorder(store, load_spec(spec_path), tmp_path), store, runner


def test_a_run_that_dispatched_nothing_records_neither_start_nor_finish(tmp_path: Path):
    session, store, _ = recorder(tmp_path)
    session.finish()
    assert not session.started and sessions_of(store) == [] and store.meta(FINISHED_KEY) is None


def test_a_started_run_records_its_session_and_then_its_end(tmp_path: Path):
    session, store, runner = recorder(tmp_path)
    with runner:
        session.hook(runner)()
    assert session.started and environment_of(store)["runner"] == "local"
    [started] = sessions_of(store)
    assert started["in_flight"] == 3 and "finished_at" not in started
    session.finish()
    [finished] = sessions_of(store)
    assert finished["finished_at"] >= finished["started_at"] and "load_end" in finished
    assert float(store.meta(FINISHED_KEY)) == finished["finished_at"]
