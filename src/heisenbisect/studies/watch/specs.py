"""The specs a watch runs from: ``watch.yaml`` for ``bisect watch --repo DIR -- CMD`` (as
``bisect commits --good/--bad -- CMD`` writes its own), and each regression's bisection spec,
the watched target with a ``commits:`` range from the last known good to the new head.

Both are plain specs, so a watch's steps and its bisections run, resume and report exactly as a
written spec's do; the bisection is `studies.commits`' own, called through its public entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from heisenbisect.errors import HeisenbisectError
from heisenbisect.git import open_repo, resolve
from heisenbisect.hypotheses import load_spec
from heisenbisect.layout import WatchPaths, worktree_folder

STUDY = "watch"  # the study name, hence the folder, of a watch started without a spec


@dataclass(frozen=True)
class Watched:
    """What the command line says about the watched branch and target."""

    command: list[str]
    repo: str = "."
    branch: str = "HEAD"
    out: str | None = None
    result: str = "exit"  # as `bisect trial --result`
    timeout: float = 600.0


def repo_root(repo: str | Path) -> Path:
    """The top folder of the git work tree holding ``repo``; not one: `HeisenbisectError`."""
    found = open_repo(Path(repo).expanduser().resolve(), "--repo")
    try:
        return Path(found.working_tree_dir or found.git_dir).resolve()
    finally:
        found.close()


def head_of(root: Path, branch: str) -> str:
    """The branch's head, as a full sha (an unknown branch: exit 2, naming --branch)."""
    found = open_repo(root, "--repo")
    try:
        return resolve(found, branch, "--branch")
    finally:
        found.close()


def watch_paths(out: str | None, repo: str) -> WatchPaths:
    """``<out>/watch`` or ``<repo's top folder>/reports/watch``."""
    root = Path(out).expanduser().resolve() if out else repo_root(repo) / "reports"
    return WatchPaths(root / STUDY)


def write_watch_spec(watched: Watched, cwd: Path | None = None) -> Path:
    """Write the spec of a watch without a spec file; CMD runs from the current folder's place in
    each commit's worktree (the repository's top folder when the current folder is outside it)."""
    if not watched.command:
        raise HeisenbisectError(
            "watch: give a spec FILE, or the command to run after '--', e.g. "
            "bisect watch --repo . -- pytest -x tests/test_flaky.py"
        )
    if not watched.timeout > 0:
        raise HeisenbisectError(f"--timeout: must be > 0, got {watched.timeout:g}")
    root = repo_root(watched.repo)
    here = (cwd or Path.cwd()).resolve()
    paths = watch_paths(watched.out, str(root))
    target = {
        "command": list(watched.command),
        "result": watched.result,
        "timeout": watched.timeout,
        "cwd": str(here if here.is_relative_to(root) else root),
    }
    text = (
        "# written by: bisect watch --repo DIR -- CMD (no spec file); rerun it for the next step\n"
    )
    text += yaml.safe_dump(
        {"study": STUDY, "target": target, "output": str(paths.root.parent)}, sort_keys=False
    )
    paths.root.mkdir(parents=True, exist_ok=True)
    ignore = paths.root / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")  # inside the repository, `git status` never sees the watch
    paths.spec.write_text(text)
    return paths.spec


def write_bisection_spec(
    spec_path: Path,
    paths: WatchPaths,
    step: int,
    repo: Path,
    good: str,
    bad: str,
    confidence: float,
) -> Path:
    """The watched spec with ``commits: {repo, good, bad}`` and its study under the watch's
    ``bisections/``; its folders made absolute, so it runs from where it is written."""
    raw = yaml.safe_load(spec_path.read_text()) or {}
    spec = load_spec(spec_path)
    target = dict(raw.get("target") or {})
    # the folder of each worktree the watch ran in, as a folder of the repository (see
    # layout.worktree_folder), so the bisection probes the same place from its own spec's folder
    target["cwd"] = str(repo / (worktree_folder(spec, spec_path.parent, repo) or "."))
    commits = dict(raw.get("commits") or {})
    commits.update(repo=str(repo), good=good, bad=bad, confidence=confidence)
    commits.pop("p_bad", None)  # learned from the runs: the watch measured the ends, not a guess
    commits.pop("p_good", None)
    raw.update(
        study=f"step-{step:04d}", target=target, commits=commits, output=str(paths.bisections)
    )
    raw.pop("amplify", None)
    path = paths.bisection_spec(step)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"# written by bisect watch, step {step}: the regression's bisection\n"
    path.write_text(text + yaml.safe_dump(raw, sort_keys=False))
    return path
