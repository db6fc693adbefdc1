"""A result whose numbers do not fit (a count past sqlite's INTEGER, an integer metric past a
float, more digits than Python converts) is a trial error naming the field; the driver goes on."""

from __future__ import annotations

import sqlite3
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from heisenbisect.cli import main
from heisenbisect.records import Config, Trial, TrialStatus
from heisenbisect.targets.command import CommandTarget


def run_script(tmp_path: Path, body: str):
    script = tmp_path / "target.py"
    script.write_text(textwrap.dedent(body))
    target = CommandTarget((sys.executable, str(script)), timeout_s=60, cwd=str(tmp_path))
    return target.execute(Trial("t-0001", Config(), 1, seed=7), tmp_path / "logs" / "t-0001.log", threading.Event())


@pytest.mark.parametrize("payload, says", [
    ('{"failures": 0, "total": ' + str(10**30) + "}", "'total' is 1000000000000000000000000000000, out of range"),
    ('{"failures": 1, "total": 2, "metrics": {"big": 1' + "0" * 400 + "}}", "metrics.big is 1000"),
    ('{"failures": 0, "total": 1' + "0" * 5000 + "}", "a number is out of range"),
])
def test_a_number_out_of_range_is_an_error_naming_it(tmp_path, payload, says):
    outcome = run_script(tmp_path, f"print({payload!r})")
    assert outcome.status is TrialStatus.ERROR and says in outcome.detail, outcome.detail


def test_the_driver_records_an_out_of_range_result_and_finishes(tmp_path, capsys):
    (tmp_path / "huge.py").write_text(f'print(\'{{"failures": 0, "total": {10**30}}}\')\n')
    spec = tmp_path / "hypotheses.yaml"
    spec.write_text(textwrap.dedent(f"""\
        study: huge
        target:
          command: [{sys.executable}, huge.py]
        factors:
          - {{name: MODE, levels: [a, b]}}
        statistics: {{max_trials: 4, first_look: 2}}
        """))
    code = main(["run", str(spec), "--out", str(tmp_path / "out"), "--plain"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and code not in (0, 1), (code, err)
    with sqlite3.connect(next((tmp_path / "out").rglob("*.sqlite"))) as db:
        details = [row[0] for row in db.execute("SELECT detail FROM outcomes WHERE status = 'error'")]
    assert details and all("'total' is 1000000000000000000000000000000, out of range" in d for d in details)
