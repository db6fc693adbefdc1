"""Where a study lives and where its target runs, whatever folder a command starts in.

A study's folder is ``reports/`` beside its spec (not beside the shell), so `bisect run`,
`bisect report` and the Python API find one store from anywhere; ``amplified.yaml`` names its
paths relative to itself; `bisect commits` runs a ``target.cwd`` inside the repository in each
commit's worktree (never in the working tree at HEAD) and refuses one it cannot map; `bisect
validate` checks a commits spec's script in the bad commit. Real repositories, real processes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import heisenbisect
from bisect_cli import bisect_in_process
from commits_repo import commit, git, make_flaky_repo, write_spec
from heisenbisect.cli import parse
from heisenbisect.hypotheses import load_spec
from heisenbisect.layout import target_folder
from heisenbisect.records import Config
from heisenbisect.reports.amplify import write_amplified

# fails every run where the repository's app.py carries the bug; run from the spec's folder, bench/
CHECK = """\
import pathlib, sys
sys.exit(1 if "BUG = True" in (pathlib.Path("..") / "app.py").read_text() else 0)
"""

SPEC = """\
study: flaky
target:
  command: [python, check.py]
  result: exit
  timeout: 60
  files: [check.py]
commits:
  repo: {repo}
  good: good
  bad: bad
  p_bad: 0.9
  p_good: 0
  confidence: 0.99
amplify:
  knobs:
    - {{name: load, type: int, var: CHECK_LOAD, low: 1, high: 4}}
"""


# a screening of one factor that runs a dozen trials in a few seconds
STUDY = """\
study: api
target:
  command: [python, flaky.py]
  timeout: 60
factors:
  - {name: fixed, var: FIXED, levels: ["0", "1"]}
statistics:
  max_trials: 5
  first_look: 5
"""
FLAKY = """\
import json, os, random
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
rate = 0.0 if os.environ.get("FIXED") == "1" else 0.5
print(json.dumps({"failures": int(rng.random() < rate), "total": 1}))
"""


def write_study(folder: Path) -> Path:
    folder.mkdir()
    (folder / "flaky.py").write_text(FLAKY)
    spec = folder / "hypotheses.yaml"
    spec.write_text(STUDY)
    return spec


def stored_trials(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def bisect(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "heisenbisect", *args], capture_output=True, text=True, timeout=240, cwd=cwd
    )


def repo_with_spec_inside(root: Path) -> tuple[Path, Path, str]:
    """A repository whose spec lives in it, at bench/hypotheses.yaml; HEAD carries the bug.

    Returns the repository, the spec and the culprit (the fourth of seven candidates)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "start", {"app.py": "BUG = False\n", "bench/check.py": CHECK})
    git(repo, "tag", "good")
    for i in range(1, 4):
        commit(repo, f"tune {i}", {"notes.txt": f"{i}\n"})
    culprit = commit(repo, "overlap the streams", {"app.py": "BUG = True\n"})
    for i in range(4, 7):
        commit(repo, f"polish {i}", {"notes.txt": f"{i}\n"})
    git(repo, "tag", "bad")
    spec = repo / "bench" / "hypotheses.yaml"
    spec.write_text(SPEC.format(repo=".."))
    return repo, spec, culprit


def amplified_from(spec: Path) -> Path:
    """The amplified.yaml `bisect amplify` writes for ``spec`` once it confirms load=3."""
    loaded = load_spec(spec)
    path = spec.parent / "reports" / loaded.study / "amplified.yaml"  # beside the spec (AmplifyPaths)
    path.parent.mkdir(parents=True)
    write_amplified(loaded, spec, Config(changes=(("load", "3"),)), path)
    return path


@pytest.mark.slow
def test_an_amplified_spec_of_a_spec_inside_the_repository_bisects_each_commit(tmp_path):
    repo, spec, culprit = repo_with_spec_inside(tmp_path)
    amplified = amplified_from(spec)
    assert amplified == repo / "bench" / "reports" / "flaky" / "amplified.yaml"
    text = amplified.read_text()
    assert str(tmp_path) not in text  # no machine path: the file works wherever the tree is
    loaded = load_spec(amplified)
    assert target_folder(loaded, amplified.parent) == (repo / "bench").resolve()  # where `bisect run` ran it
    assert [p.resolve() for p in amplified.parent.glob(loaded.target.files[0])] == [(repo / "bench" / "check.py").resolve()]
    assert loaded.target.env == {"CHECK_LOAD": "3"} and loaded.output == ".."

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checked = bisect("validate", str(amplified), cwd=elsewhere)
    assert checked.returncode == 0, checked.stderr
    done = bisect("commits", str(amplified), "--plain", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert culprit in done.stdout
    found = json.loads((repo / "bench" / "reports" / "flaky-amplified" / "commits.json").read_text())
    assert found["culprit"] == culprit
    assert not (elsewhere / "reports").exists()


@pytest.mark.slow
def test_an_absolute_cwd_into_the_repository_runs_in_each_commits_worktree(tmp_path):
    """An amplified.yaml of an earlier version named the working tree by absolute path: each
    probe ran there, at HEAD, and blamed the first candidate."""
    repo, _, culprit = repo_with_spec_inside(tmp_path)
    spec = tmp_path / "absolute.yaml"
    spec.write_text(SPEC.format(repo=repo).replace("  timeout: 60\n", f"  timeout: 60\n  cwd: {repo / 'bench'}\n"))
    done = bisect("commits", str(spec), "--plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "reports" / "flaky" / "commits.json").read_text())["culprit"] == culprit


@pytest.mark.parametrize("cwd", ["../elsewhere", "ABSOLUTE"])
def test_a_cwd_that_cannot_map_into_the_worktree_is_refused(tmp_path, capsys, monkeypatch, cwd):
    """Relative to the worktree's root it leaves the worktree; absolute, it is outside the repository."""
    repo = make_flaky_repo(tmp_path)
    if cwd == "ABSOLUTE":
        (tmp_path / "harness").mkdir()
        cwd = str(tmp_path / "harness")
    folder = (tmp_path / cwd).resolve()
    spec = write_spec(tmp_path, repo)
    spec.write_text(spec.read_text().replace("  timeout: 60\n", f"  timeout: 60\n  cwd: {cwd}\n"))
    cwd_line = spec.read_text().splitlines().index(f"  cwd: {cwd}") + 1
    monkeypatch.chdir(tmp_path)
    for command in ("commits", "validate"):
        done = bisect_in_process(capsys, command, str(spec))
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"{spec}:{cwd_line}:8: target.cwd: {cwd!r} is {folder}, outside the repository")
    assert not (tmp_path / "out").exists()


def test_validate_checks_a_commits_spec_against_the_bad_commit(tmp_path, capsys, monkeypatch):
    """check.py exists only in the repository's commits, not beside the spec."""
    repo = make_flaky_repo(tmp_path)
    spec = write_spec(tmp_path, repo)
    monkeypatch.chdir(tmp_path)
    done = bisect_in_process(capsys, "validate", str(spec))
    assert done.returncode == 0, done.stderr

    spec.write_text(spec.read_text().replace("check.py", "chek.py"))
    done = bisect_in_process(capsys, "validate", str(spec))
    assert done.returncode == 2
    sha = git(repo.path, "rev-parse", "bad")
    assert done.stderr.splitlines() == [
        f"{spec}:3:12: target.command: python script 'chek.py' not found in {repo.path} at commits.bad (bad, {sha[:10]})"
    ]


def test_bisect_report_and_resume_from_another_folder_find_the_same_store(tmp_path):
    study = tmp_path / "study"
    spec = write_study(study)
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    first = bisect("run", str(spec), "--plain", cwd=here)
    assert first.returncode in (0, 1, 3), first.stderr
    store = study / "reports" / "api" / "study.sqlite"
    trials = stored_trials(store)

    report = bisect("report", str(spec), cwd=there)
    assert report.returncode == first.returncode, report.stderr  # as `bisect run` answered
    assert report.stdout.splitlines()[-2] == f"report: {study / 'reports' / 'api' / 'report.md'}"
    resumed = bisect("run", "../study/hypotheses.yaml", "--plain", cwd=there)
    assert resumed.returncode == first.returncode, resumed.stderr
    assert f"{trials} finished trials reused from {store}" in resumed.stderr
    assert stored_trials(store) == trials
    assert not (here / "reports").exists() and not (there / "reports").exists()

    typed = bisect("run", str(spec), "--plain", "--out", "mine", cwd=there)  # --out as typed: from here
    assert typed.returncode == first.returncode and (there / "mine" / "api" / "study.sqlite").exists()
    # each report's own commands find its store again: --out only where the study is not the spec's
    # output, as typed from the folder it ran in (a committed report names no one's home folder)
    assert "bisect run ../study/hypotheses.yaml      # resumes" in (study / "reports" / "api" / "report.md").read_text()
    assert f"bisect run {spec} --out mine      # resumes" in (there / "mine" / "api" / "report.md").read_text()


def test_the_python_api_from_another_folder_finds_the_same_store(tmp_path, monkeypatch):
    study = tmp_path / "study"
    spec = write_study(study)
    spec.write_text(spec.read_text() + "output: studies\n")  # relative to the spec's folder
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    monkeypatch.chdir(here)
    first = heisenbisect.run(spec)
    assert first.store == study / "studies" / "api" / "study.sqlite"
    trials = stored_trials(first.store)
    monkeypatch.chdir(there)
    again = heisenbisect.run(Path("..") / "study" / "hypotheses.yaml")
    assert again.store == first.store and stored_trials(again.store) == trials
    assert again.arms == first.arms
    assert not list(here.iterdir()) and not list(there.iterdir())


def test_help_says_where_studies_go(capsys):
    for command in ("run", "report", "commits", "amplify"):  # the same parser, in this process: no 4 interpreters
        with pytest.raises(SystemExit) as done:
            parse([command, "--help"])
        assert done.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert "taken from the spec file's folder" in text and "a relative DIR is taken from the current folder" in text


@pytest.mark.slow
def test_the_python_api_bisects_commits_into_the_same_store_from_any_folder(tmp_path, monkeypatch):
    repo, spec, culprit = repo_with_spec_inside(tmp_path)
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    monkeypatch.chdir(here)
    first = heisenbisect.commits(spec)
    assert first.culprit == culprit and first.store == repo / "bench" / "reports" / "flaky" / "commits.sqlite"
    monkeypatch.chdir(there)
    again = heisenbisect.commits(Path("..") / "repo" / "bench" / "hypotheses.yaml")  # decided: replays only
    assert again.store == first.store and again.trials == first.trials and again.culprit == culprit
    assert not list(here.iterdir()) and not list(there.iterdir())
