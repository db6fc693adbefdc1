"""The env-read tracker: which of the watched variables a trial's Python processes read.

Real trials (`CommandTarget`) of real scripts: a grandchild ``python -c``, a forked child, a
spawned worker, a user's own sitecustomize, a copy of the environment, a shell target; and the
records through the store (an old store migrated) and back from a Ray worker.
"""

from __future__ import annotations

import sys
import textwrap
import threading
from pathlib import Path

import pytest

from first_schema import write_first_schema_store
from heisenbisect.records import Config, EnvReads, Outcome, Trial, TrialStatus
from heisenbisect.store import Store
from heisenbisect.targets.command import CommandTarget

PY = sys.executable


def run(tmp_path: Path, script: str, watch=("APP_LOCK",), env=None, argv=None) -> Outcome:
    """One trial of ``script`` (a Python file in ``tmp_path``) with ``watch`` tracked."""
    (tmp_path / "target.py").write_text(textwrap.dedent(script))
    target = CommandTarget(argv=tuple(argv or (PY, "target.py")), timeout_s=60, cwd=str(tmp_path), watch_vars=tuple(watch))
    trial = Trial("t0", Config(), 0, 1, env={"APP_LOCK": "1", **(env or {})})
    outcome = target.execute(trial, tmp_path / "logs" / "t0.log", threading.Event())
    assert outcome.status is TrialStatus.OK, (outcome.detail, (tmp_path / "logs" / "t0.log").read_text())
    return outcome


CLEAN = 'print(\'{"failures": 0, "total": 1}\')\n'


def test_a_variable_read_only_by_a_grandchild_python_counts_as_read(tmp_path):
    outcome = run(tmp_path, f"""\
        import subprocess, sys
        grandchild = "import os; os.environ.get('APP_LOCK')"
        child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {{grandchild!r}}], check=True)"
        subprocess.run([sys.executable, "-c", child], check=True)
        {CLEAN}""")
    assert outcome.env_reads == EnvReads(processes=3, names={"APP_LOCK": 1})
    assert not list((tmp_path / "logs").glob("*.reads"))  # the records folder is gone with the trial


def test_forked_and_spawned_children_are_tracked_and_counted(tmp_path):
    outcome = run(tmp_path, f"""\
        import multiprocessing, os

        def worker():
            "a spawned server worker: a fresh interpreter, the parent's environment"
            os.getenv("APP_LOCK")

        if __name__ == "__main__":
            if os.fork() == 0:  # a forked server: no new interpreter, the parent's hook
                "APP_LOCK" in os.environ
                os._exit(0)
            os.wait()
            spawned = multiprocessing.get_context("spawn").Process(target=worker)
            spawned.start()
            spawned.join()
            {CLEAN}""")
    # the main process, its fork, the spawned worker and multiprocessing's resource tracker
    assert outcome.env_reads.names == {"APP_LOCK": 2} and outcome.env_reads.processes == 4


def test_a_misspelt_name_is_never_read_and_the_read_name_close_to_it_is_kept(tmp_path):
    outcome = run(tmp_path, f"""\
        import os
        os.environ.get("APP_LOCK"), os.environ.get("HOME"), os.environ.get("APP_LOCKS_DIR")
        {CLEAN}""", watch=("APP_LOKC",), env={"APP_LOKC": "1"})
    assert outcome.env_reads == EnvReads(processes=1, names={"APP_LOCK": 1})  # near APP_LOKC; HOME is not


def test_the_users_sitecustomize_still_runs_and_their_pythonpath_is_kept(tmp_path):
    mine = tmp_path / "site"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text("import os\nMARK = 'user'\nos.environ.get('APP_LOCK')\n")
    (mine / "helper.py").write_text("VALUE = 42\n")
    outcome = run(tmp_path, f"""\
        import sitecustomize, helper
        assert sitecustomize.MARK == "user" and helper.VALUE == 42
        {CLEAN}""", env={"PYTHONPATH": str(mine)})
    assert outcome.env_reads.names == {"APP_LOCK": 1}  # read by the user's sitecustomize itself


def test_copying_the_whole_environment_is_recorded_where_it_happened(tmp_path):
    outcome = run(tmp_path, f"""\
        import os, urllib.request
        urllib.request.getproxies()  # enumerates the environment for *_proxy names only: no copy
        settings = {{name: value for name, value in os.environ.items() if name.startswith("APP_")}}
        backup = os.environ.copy()
        {CLEAN}""", watch=("APP_LOCK", "APP_HTTP_PROXY"))
    assert outcome.env_reads.names == {"APP_HTTP_PROXY": 1}  # APP_LOCK: copied, not looked up by name
    assert outcome.env_reads.copied_at == (f"{tmp_path / 'target.py'}:3",)  # the first copy


def test_a_run_with_no_python_process_is_not_tracked(tmp_path):
    outcome = run(tmp_path, "", argv=("sh", "-c", 'test "$APP_LOCK" = 1 && echo \'{"failures": 0, "total": 1}\''))
    assert outcome.env_reads is None


def test_nothing_is_tracked_without_watched_variables(tmp_path):
    outcome = run(tmp_path, f"""\
        import os
        assert "HEISENBISECT_WATCH_VARS" not in os.environ and "env_reads" not in os.environ.get("PYTHONPATH", "")
        {CLEAN}""", watch=())
    assert outcome.env_reads is None


def test_an_old_store_gains_the_column_and_reads_as_not_tracked(tmp_path):
    path = write_first_schema_store(tmp_path / "study.sqlite")
    reads = EnvReads(processes=2, names={"APP_LOCK": 2, "app_lock": 1}, copied_at=("x.py:3",))
    with Store(path) as store:
        [(_, old)] = store.outcomes()
        assert old.trial_id == "old-0" and old.env_reads is None
        store.record(Outcome("new-0", "baseline", 1, TrialStatus.OK, 0, 1, env_reads=reads), Config())
        store.record(Outcome("new-1", "baseline", 2, TrialStatus.ERROR), Config())
    with Store(path) as store:  # opened again: migrated once, read back as written
        assert [o.env_reads for _, o in store.outcomes()] == [None, reads, None]


@pytest.mark.ray
def test_the_ray_runner_carries_the_reads_back(ray_session, tmp_path):
    ray_runner = pytest.importorskip("heisenbisect.runners.ray_runner")
    from runner_helpers import drain

    target = CommandTarget(argv=(PY, "-c", "import os; os.getenv('APP_LOCK'); print('{\"failures\": 0}')"),
                           timeout_s=60, watch_vars=("APP_LOCK",))
    runner = ray_runner.RayRunner(target, tmp_path, cpus_per_trial=0.5)
    try:
        runner.submit(Trial("t0", Config(), 0, 1, env={"APP_LOCK": "1"}))
        [outcome] = drain(runner, 1)
    finally:
        runner.close()
    assert outcome.status is TrialStatus.OK and outcome.env_reads == EnvReads(processes=1, names={"APP_LOCK": 1})
