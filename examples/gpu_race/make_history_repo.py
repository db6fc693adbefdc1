"""Build a git repository whose history introduces the gpu_race bug at one commit, for `bisect commits`.

The repository holds this example's ``decode.py`` and ``workload.py`` through ``--commits``
first-parent commits. Before ``--culprit`` the indexer runs inline on the main stream (the
multi-stream overlap does not exist yet, so nothing races); the culprit commit turns the
overlap on by default, which is the bug; every other commit changes notes, comments or
tuning constants that do not touch the race. ``--untestable`` commits cannot be tested: some
break the build step (a ``BROKEN`` file the spec's ``build`` rejects), the others make the
trial exit 125. A side branch merged near the end gives the first-parent walk something to
skip. Writes ``bisect.yaml`` beside the repository: the commits study to run.

    python make_history_repo.py /tmp/gpu-history --commits 100 --culprit 61
    bisect commits /tmp/gpu-history.yaml
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OVERLAP_DEFAULT = 'overlap=choice("RACE_OVERLAP", "1", ("0", "1")) == "1",'

SPEC = """\
# Made by examples/gpu_race/make_history_repo.py: {commits} first-parent commits, the race
# introduced at commit {culprit} ({subject!r}); {untestable} commits untestable.
study: gpu-race-history
question: Which commit introduced the corrupted sessions?
target:
  command: [sh, -c, 'if [ -e UNTESTABLE ]; then exit 125; fi; exec python3 decode.py']
  timeout: 120
commits:
  repo: {repo}
  good: {good}
  bad: main
  first_parent: true
  build: test ! -e BROKEN
  confidence: 0.95
  max_trials: 600
execution:
  runner: local
  parallel: 16
  trials_per_gpu: 8
"""


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "gpu-race", "GIT_AUTHOR_EMAIL": "gpu-race@example.invalid",
           "GIT_COMMITTER_NAME": "gpu-race", "GIT_COMMITTER_EMAIL": "gpu-race@example.invalid",
           "GIT_AUTHOR_DATE": "2026-11-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-11-01T00:00:00Z",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo)}
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def decode_source(overlap_on: bool) -> str:
    source = (HERE / "decode.py").read_text()
    if OVERLAP_DEFAULT not in source:
        raise SystemExit("make_history_repo: decode.py's RACE_OVERLAP default line changed; update OVERLAP_DEFAULT")
    if overlap_on:
        return source
    return source.replace(OVERLAP_DEFAULT, OVERLAP_DEFAULT.replace('"1", ("0"', '"0", ("0"'))


def untestable_commits(commits: int, culprit: int, count: int) -> dict[int, str]:
    """Spread over the range, never the culprit or its neighbours; alternately build and exit-125."""
    picks: dict[int, str] = {}
    step = commits / (count + 1)
    for i in range(count):
        index = int(step * (i + 1))
        while index in picks or abs(index - culprit) <= 1 or index in (0, commits - 1):
            index += 1
        picks[index] = "BROKEN" if i % 2 == 0 else "UNTESTABLE"
    return picks


def build(repo: Path, commits: int, culprit: int, untestable: int) -> tuple[str, str]:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "workload.py").write_text((HERE / "workload.py").read_text())
    broken = untestable_commits(commits, culprit, untestable)
    notes: list[str] = []
    good = culprit_subject = ""
    for index in range(commits):
        marker = broken.get(index)
        for name in ("BROKEN", "UNTESTABLE"):
            if (repo / name).exists():
                (repo / name).unlink()
        if index == commits - 8:  # a side branch, merged: first-parent bisection skips its inside
            git(repo, "checkout", "-q", "-b", "side")
            (repo / "SIDE.md").write_text("side work\n")
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "side: notes")
            git(repo, "checkout", "-q", "main")
            git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
        if marker:
            (repo / marker).write_text("this commit cannot be tested\n")
        (repo / "decode.py").write_text(decode_source(overlap_on=index >= culprit))
        notes.append(f"- change {index}: " + ("multi-stream overlap for the indexer, on by default"
                                               if index == culprit else "tuning notes"))
        (repo / "NOTES.md").write_text("# changes\n" + "\n".join(notes) + "\n")
        subject = ("indexer: overlap with the main stream on its own CUDA stream" if index == culprit
                   else f"decode: change {index}" + (f" ({marker.lower()})" if marker else ""))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", subject)
        if index == 0:
            good = git(repo, "rev-parse", "HEAD")
        if index == culprit:
            culprit_subject = subject
    return good, culprit_subject


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path, help="folder to create (must not exist)")
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--culprit", type=int, default=61, help="index of the commit that introduces the race")
    parser.add_argument("--untestable", type=int, default=6)
    args = parser.parse_args(argv)
    if args.repo.exists():
        parser.error(f"{args.repo} exists")
    if not 0 < args.culprit < args.commits:
        parser.error("--culprit must be inside the range (after the good commit 0)")
    repo = args.repo.resolve()
    good, subject = build(repo, args.commits, args.culprit, args.untestable)
    spec = repo.with_suffix(".yaml")
    spec.write_text(SPEC.format(commits=args.commits, culprit=args.culprit, subject=subject,
                                untestable=args.untestable, repo=repo.name, good=good))  # beside the spec
    culprit_sha = git(repo, "log", "--first-parent", "--format=%H", f"--grep={subject}", "-F", "main")
    print(f"{repo}: {args.commits} first-parent commits (+1 merge); culprit {culprit_sha[:10]} {subject!r}; "
          f"good {good[:10]}; spec {spec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
