"""Real git repositories for the commit-bisection tests: merges, untestable commits, a flaky check.

First-parent history (oldest first), the bug arriving through a merge:

    good  m1 m2 m3 m4 m5 skip1 unskip m8 [merge of side: s1, s2-with-bug] m9 .. m14 = bad

With ``broken_build``, ``build.txt`` says "broken" at m8 only (the merge repairs it).

``check.py`` imports ``flakymod`` (found only through ``pythonpath: pkg``), exits 125 where
an ``UNTESTABLE`` file exists, and, where ``flakymod.BUG`` is set, fails with probability
``FAIL_P`` drawn from ``HEISENBISECT_SEED``. It appends its trial id to ``$RUN_LOG``
and its CUDA_VISIBLE_DEVICES to ``$DEVICE_LOG``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bisect_cli import bisect

CHECK = """\
import os, pathlib, random, sys, time
import flakymod
log = os.environ.get("RUN_LOG")
if log:
    with open(log, "a") as f:
        f.write(os.environ["HEISENBISECT_TRIAL_ID"] + "\\n")
devices = os.environ.get("DEVICE_LOG")
if devices:
    with open(devices, "a") as f:
        f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset") + "\\n")
time.sleep(float(os.environ.get("RUN_SLEEP", "0")))
if pathlib.Path("UNTESTABLE").exists():
    sys.exit(125)
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
sys.exit(1 if flakymod.BUG and rng.random() < float(os.environ.get("FAIL_P", "0.5")) else 0)
"""

ENV = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.com",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    # fixed dates: the same shas, hence the same trial seeds, on every test run
    "GIT_AUTHOR_DATE": "2024-05-01T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2024-05-01T12:00:00+00:00",
}


@dataclass(frozen=True)
class FlakyRepo:
    path: Path
    first_parent: list[str]  # candidate shas, oldest first (bad last)
    culprit: str  # the merge commit that brought the bug in
    side: list[str]  # the side branch's commits
    untestable: str
    broken_build: str | None


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str | None]) -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            git(repo, "rm", "-q", name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_flaky_repo(root: Path, *, broken_build: bool = False) -> FlakyRepo:
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "start", {"check.py": CHECK, "pkg/flakymod.py": "BUG = False\n", "build.txt": "ok\n"})
    git(repo, "tag", "good")
    shas = []
    for i in range(1, 6):
        shas.append(commit(repo, f"m{i}: tune", {"notes.txt": f"{i}\n"}))
    shas.append(commit(repo, "skip1: half-done refactor", {"UNTESTABLE": "x\n"}))
    untestable = shas[-1]
    shas.append(commit(repo, "unskip: finish refactor", {"UNTESTABLE": None}))
    git(repo, "checkout", "-q", "-b", "side")
    side = [commit(repo, "s1: prepare overlap", {"side.txt": "1\n"})]
    side.append(commit(repo, "s2: overlap the two streams", {"pkg/flakymod.py": "BUG = True\n"}))
    git(repo, "checkout", "-q", "main")
    shas.append(commit(repo, "m8: unrelated", {"other.txt": "8\n", "build.txt": "broken\n" if broken_build else "ok\n"}))
    broken = shas[-1] if broken_build else None
    git(repo, "merge", "-q", "--no-ff", "--no-commit", "side")
    commit(repo, "Merge branch 'side': stream overlap", {"build.txt": "ok\n"})
    culprit = git(repo, "rev-parse", "HEAD")
    shas.append(culprit)
    for i in range(9, 15):
        shas.append(commit(repo, f"m{i}: polish", {"notes.txt": f"{i}\n"}))
    git(repo, "tag", "bad")
    return FlakyRepo(repo, shas, culprit, side, untestable, broken)


def write_spec(root: Path, repo: FlakyRepo, *, extra: str = "", commits_extra: str = "", env: dict | None = None) -> Path:
    """A spec bisecting ``repo`` at confidence 0.999, so a wrong culprit fails a test 0.1% of the time."""
    env_lines = "".join(f"    {k}: {v!r}\n" for k, v in (env or {}).items())
    spec = root / "hypotheses.yaml"
    spec.write_text(
        f"""\
study: flaky
target:
  command: [{sys.executable!r}, check.py]
  result: exit
  timeout: 60
  env:
    FAIL_P: "0.5"
{env_lines}commits:
  repo: {str(repo.path)!r}
  good: good
  bad: bad
  pythonpath: pkg
  confidence: 0.999
{commits_extra}output: {str(root / 'out')!r}
{extra}"""
    )
    return spec


def screened_at_bad(root: Path) -> tuple[FlakyRepo, Path]:
    """A flaky repository checked out at ``bad`` and its spec, screened there once (`bisect run`):
    the stored runs at the bad commit that ``bisect commits`` may learn p from. The spec lies in
    the repository untracked, so the checkout stays clean."""
    repo = make_flaky_repo(root)
    git(repo.path, "checkout", "-q", "bad")
    spec = repo.path / "hypotheses.yaml"
    spec.write_text(
        "study: flaky\n"
        f"target:\n  command: [{sys.executable!r}, check.py]\n  result: exit\n  timeout: 60\n"
        "  env: {FAIL_P: '0.5', PYTHONPATH: pkg}\n"
        "commits:\n  repo: .\n  good: good\n  bad: bad\n  pythonpath: pkg\n  confidence: 0.999\n"
        f"output: {str(root / 'out')!r}\n"
    )
    screened = bisect("run", str(spec), "--plain", cwd=root)
    assert screened.returncode == 0, screened.stderr
    return repo, spec


LINEAR_CHECK = """\
import os, pathlib, random, sys, time
import flakymod
if pathlib.Path("HANG").exists():
    time.sleep(3600)
rng = random.Random(int(os.environ["HEISENBISECT_SEED"]))
sys.exit(1 if rng.random() < flakymod.RATE else 0)
"""

# where HIDE exists, the failure is a run-time FileNotFoundError: a could-not-run traceback
HIDING_CHECK = LINEAR_CHECK.replace(
    "sys.exit(1 if rng.random() < flakymod.RATE else 0)",
    "failed = rng.random() < flakymod.RATE\n"
    "if failed and pathlib.Path('HIDE').exists():\n"
    "    open('race.tmp')\n"
    "sys.exit(1 if failed else 0)",
)


@dataclass(frozen=True)
class LinearRepo:
    path: Path
    shas: list[str]  # c0 (the root) .. c{n-1}, oldest first


def make_linear_repo(
    root: Path, n: int, rate_of, hangs: frozenset[int] = frozenset(), hides: frozenset[int] = frozenset()
) -> LinearRepo:
    """A first-parent history c0 .. c{n-1} where ``check.py`` fails at ``rate_of(k)`` at c_k,
    hangs at the commits in ``hangs`` and, at those in ``hides``, fails as a FileNotFoundError
    traceback instead of exit 1; flakymod lies in pkg/ (``PYTHONPATH=pkg``)."""
    repo = root / "linear"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas, rate, hanging, hiding = [], None, False, False
    for k in range(n):
        files: dict[str, str | None] = {"notes.txt": f"{k}\n"}
        if k == 0:
            files["check.py"] = HIDING_CHECK if hides else LINEAR_CHECK
        if rate_of(k) != rate:
            rate = rate_of(k)
            files["pkg/flakymod.py"] = f"RATE = {rate!r}\n"
        if (k in hangs) != hanging:
            hanging = k in hangs
            files["HANG"] = "x\n" if hanging else None
        if (k in hides) != hiding:
            hiding = k in hides
            files["HIDE"] = "x\n" if hiding else None
        shas.append(commit(repo, f"c{k}: {'change the rate' if 'pkg/flakymod.py' in files else 'polish'}", files))
        git(repo, "tag", f"c{k}")
    return LinearRepo(repo, shas)


def stored_runs_at(spec_path, bad: str, folder):
    """`stored_bad_end_runs` for the spec at ``spec_path``, its places resolved as `prepare` does."""
    from pathlib import Path

    from heisenbisect.hypotheses import load_spec
    from heisenbisect.layout import commits_repo, target_folder
    from heisenbisect.records import Config
    from heisenbisect.studies.commits.stored import stored_bad_end_runs
    from heisenbisect.studies.identity import target_identity

    spec, spec_dir = load_spec(spec_path), Path(spec_path).parent
    wanted = target_identity(spec) if spec.target.command is not None else None
    repo, target_dir = commits_repo(spec, spec_dir), target_folder(spec, spec_dir)
    return stored_bad_end_runs(wanted, repo, target_dir, bad, Config(), folder)
