"""A history whose import is broken for four commits before the race arrives: never blame a crash.

Oldest first (``good`` is the start)::

    good  b1 (helper renamed: ImportError)  b2  b3  b4  fix (import repaired)  race  p1  p2 = bad

``app.py`` reports by its exit code, as a user's script does: it prints "N of 20 requests
corrupted" and exits 1 when the race (``helper.RACE``) corrupts a request, with probability
``FAIL_P`` per run. At b1..b4 it dies on the ImportError before testing anything: those
commits are untestable (git bisect's skip), counted in the candidate set, never bad.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commits_repo import commit, git

pytestmark = pytest.mark.slow  # real repositories and a few hundred real processes

APP = """\
import os, random, sys
from helper import NAME, RACE
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
corrupted = 3 if RACE and rng.random() < float(os.environ.get("FAIL_P", "0.7")) else 0
print(f"{corrupted} of 20 requests corrupted ({NAME(corrupted)})")
sys.exit(1 if corrupted else 0)
"""


def helper(name: str, race: bool) -> str:
    return f"RACE = {race}\n\ndef {name}(n):\n    return hex(n)\n"


def make_history(root: Path, *, fix_separately: bool = True) -> tuple[Path, list[str], str]:
    """The repository, its candidate shas (oldest first) and the culprit. Without
    ``fix_separately`` the race arrives in the commit that repairs the import."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "start", {"app.py": APP.replace("NAME", "checksum"), "helper.py": helper("checksum", False)})
    git(repo, "tag", "good")
    shas = [commit(repo, "b1: rename checksum to digest", {"helper.py": helper("digest", False)})]
    shas += [commit(repo, f"b{i}: tune", {"notes.txt": f"{i}\n"}) for i in (2, 3, 4)]
    if fix_separately:
        shas.append(commit(repo, "fix: import digest", {"app.py": APP.replace("NAME", "digest")}))
        shas.append(commit(repo, "race: overlap the workers", {"helper.py": helper("digest", True)}))
    else:
        shas.append(commit(repo, "import digest, overlap the workers",
                           {"app.py": APP.replace("NAME", "digest"), "helper.py": helper("digest", True)}))
    culprit = shas[-1]
    shas += [commit(repo, f"p{i}: polish", {"notes.txt": f"p{i}\n"}) for i in (1, 2)]
    git(repo, "tag", "bad")
    return repo, shas, culprit


def write_spec(root: Path, repo: Path) -> Path:
    spec = root / "hypotheses.yaml"
    spec.write_text(
        "study: crashy\n"
        f"target:\n  command: [{sys.executable!r}, app.py]\n  result: exit\n  timeout: 60\n"
        f"commits:\n  repo: {str(repo)!r}\n  good: good\n  bad: bad\n  p_bad: 0.5\n  p_good: 0\n  confidence: 0.999\n"
        f"output: {str(root / 'out')!r}\n"
    )
    return spec


def bisect_commits(spec: Path) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run([sys.executable, "-m", "heisenbisect", "commits", str(spec), "--plain"],
                          capture_output=True, text=True, timeout=600)
    return done, json.loads((spec.parent / "out" / "crashy" / "commits.json").read_text())


def test_bisect_commits_skips_the_crashing_commits_and_finds_the_race(tmp_path):
    repo, shas, culprit = make_history(tmp_path)
    done, found = bisect_commits(write_spec(tmp_path, repo))
    assert done.returncode == 0, done.stdout + done.stderr
    assert found["state"] == "found" and found["culprit"] == culprit, found
    probes = {p["commit"]: p for p in found["probes"]}
    for crashing in shas[:4]:  # never bad: untestable where probed, no failure counted
        assert probes.get(crashing, {"untestable": True, "failures": 0})["failures"] == 0
    assert any(probes.get(sha, {}).get("untestable") for sha in shas[:4]), found["probes"]


def test_bisect_commits_cannot_part_the_culprit_from_crashing_commits_and_says_so(tmp_path):
    repo, shas, culprit = make_history(tmp_path, fix_separately=False)
    done, found = bisect_commits(write_spec(tmp_path, repo))
    assert done.returncode == 1, done.stdout + done.stderr  # only a candidate set: undecided
    assert found["state"] == "skipped" and found["culprit"] is None, found
    assert found["candidate_set"] == shas[:5]  # b1..b4 and the culprit: git's "could be any of"
    assert "could be any of" in done.stdout and culprit[:7] in done.stdout
    assert "culprit " not in done.stdout


def test_git_bisect_run_with_the_predicate_never_names_a_crashing_commit(tmp_path):
    repo, shas, culprit = make_history(tmp_path)
    git(repo, "bisect", "start", "bad", "good")
    predicate = [sys.executable, "-m", "heisenbisect", "trial", "--p-bad", "0.5", "--confidence", "0.999", "--"]
    done = subprocess.run(["git", "bisect", "run", *predicate, sys.executable, "app.py"],
                          cwd=repo, env={**os.environ, "FAIL_P": "0.7"}, capture_output=True, text=True, timeout=600)
    said = done.stdout + done.stderr
    assert f"{culprit} is the first bad commit" in done.stdout, said
    assert not any(f"{sha} is the first bad commit" in said for sha in shas[:4])
    log = git(repo, "bisect", "log")
    bad = [line for line in log.splitlines() if line.startswith("git bisect bad")]
    assert not any(sha in line for sha in shas[:4] for line in bad), log
