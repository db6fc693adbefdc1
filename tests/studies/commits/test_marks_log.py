"""A damaged marks log (issue 37): every action says so in one line naming the store and the
entry, exit 2 (was a TypeError or JSONDecodeError traceback, or negative runs fed to the
posterior); ``log --repair`` keeps the valid start and leaves the rest's runs out."""

from __future__ import annotations

import json
import sqlite3

import pytest

from commits_repo import make_flaky_repo, write_spec
from heisenbisect.cli import main
from heisenbisect.studies.commits.marks import parse_marks

pytestmark = pytest.mark.slow  # a real repository


def marked(tmp_path):
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo, commits_extra="  p_bad: 0.5\n  p_good: 0\n")
    for mark in (
        ["good", repo.first_parent[2], "--runs", "5"],
        ["bad", repo.culprit],
        ["bad", repo.first_parent[-2], "--runs", "3", "--failures", "1"],
    ):
        assert main(["commits", str(spec), "mark", *mark]) == 0
    store = tmp_path / "out" / "flaky" / "commits.sqlite"
    return repo, spec, store


def tamper(store, edit) -> None:
    with sqlite3.connect(store) as db:
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'marks'").fetchone()
        db.execute("UPDATE meta SET value = ? WHERE key = 'marks'", (edit(text),))
    db.close()


def negative_runs(text: str) -> str:
    marks = json.loads(text)
    marks[2]["runs"] = -5
    return json.dumps(marks)


def runs_as_text(text: str) -> str:
    marks = json.loads(text)
    marks[2]["runs"] = "3"
    return json.dumps(marks)


def cut_short(text: str) -> str:
    return text[: text.rindex('"rev"')]


@pytest.mark.parametrize("edit", [negative_runs, runs_as_text, cut_short])
def test_every_action_names_the_damaged_entry_and_repair_keeps_the_valid_start(
    tmp_path, capsys, edit
):
    repo, spec, store = marked(tmp_path)
    tamper(store, edit)
    capsys.readouterr()
    for action in (["log"], ["next"], ["undo"], ["mark", "good", repo.first_parent[1]]):
        assert main(["commits", str(spec), *action]) == 2, action
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert str(store) in err and "entry 3" in err and "log --repair" in err, err
    assert main(["commits", str(spec), "log", "--repair"]) == 0
    out = capsys.readouterr().out
    assert "kept the first 2 marks" in out and "runs of 1 marks" in out, out
    assert main(["commits", str(spec), "log"]) == 0
    log = capsys.readouterr().out
    assert f"mark bad {repo.culprit}" in log and repo.first_parent[-2] not in log
    assert main(["commits", str(spec), "mark", "good", repo.first_parent[1]]) == 0  # goes on


def test_the_parser_reports_the_first_bad_entry_and_keeps_those_before():
    good = {"number": 1, "verb": "good", "rev": "a", "sha": "a" * 40, "runs": 2, "failures": 0}
    bad = {**good, "number": 2, "verb": "bad", "failures": 3}
    marks, problem = parse_marks(json.dumps([good, bad]))
    assert len(marks) == 1 and problem is not None and problem.startswith("entry 2")
    assert parse_marks(json.dumps([good]))[1] is None
    assert parse_marks("{}")[1] == "character 1 (not a JSON list)"
    assert parse_marks(json.dumps([{**good, "undone": "yes"}]))[1].startswith("entry 1")
    assert parse_marks(json.dumps([{**good, "number": 1.0}]))[1].startswith("entry 1")
