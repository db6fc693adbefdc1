"""Soft priors (``commits.priors``): a user's suspicion as per-commit weights, never an exclusion.

``paths:`` of the range drops commits, so a wrong guess there loses the culprit for good; a
prior only makes matching commits likelier before any run, and runs overrule it. Each candidate's
weight is the product of the weights of the entries it matches (1 when none); the posterior
starts from the weights normalized (`decide.posterior.culprit_posterior`'s ``prior``).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heisenbisect.errors import HeisenbisectError
from heisenbisect.git import CommitInfo
from heisenbisect.hypotheses.model import CommitPrior


@dataclass(frozen=True)
class Weights:
    """Each candidate's weight (range order) and which entries (1-based) it matched."""

    weights: np.ndarray
    matched: tuple[tuple[int, ...], ...]


def commit_weights(repo: Path, candidates: tuple[CommitInfo, ...], priors: list[CommitPrior]) -> Weights | None:
    """The candidates' weights under ``priors``; None without priors (a uniform prior)."""
    if not priors:
        return None
    shas = [c.sha for c in candidates]
    touched = touched_paths(repo, shas) if any(p.paths for p in priors) else {}
    messages = commit_messages(repo, shas) if any(p.message is not None for p in priors) else {}
    weights = np.ones(len(shas))
    matched = []
    for k, sha in enumerate(shas):
        paths, message = touched.get(sha, ()), messages.get(sha, "")
        hits = tuple(n for n, prior in enumerate(priors, 1) if matches(prior, paths, message))
        for n in hits:
            weights[k] *= priors[n - 1].weight
        matched.append(hits)
    return Weights(weights, tuple(matched))


def matches(prior: CommitPrior, paths: tuple[str, ...], message: str) -> bool:
    """Whether a commit touching ``paths`` with ``message`` matches ``prior``."""
    if prior.paths and not any(_path_matches(pattern, path) for pattern in prior.paths for path in paths):
        return False
    return prior.message is None or re.search(prior.message, message) is not None


def _path_matches(pattern: str, path: str) -> bool:
    folder = pattern.rstrip("/")
    return fnmatch.fnmatchcase(path, pattern) or path.startswith(folder + "/")


def touched_paths(repo: Path, shas: list[str]) -> dict[str, tuple[str, ...]]:
    """``{sha: paths it changes}``, a merge against its first parent; one git process for all."""
    out = _git(repo, ["diff-tree", "--stdin", "-r", "--root", "--name-only", "-m", "--first-parent"], "\n".join(shas))
    touched: dict[str, list[str]] = {}
    current = None
    wanted = set(shas)
    for line in out.splitlines():
        if line in wanted:
            current = line
            touched.setdefault(current, [])
        elif line and current is not None:
            touched[current].append(line)
    return {sha: tuple(paths) for sha, paths in touched.items()}


def commit_messages(repo: Path, shas: list[str]) -> dict[str, str]:
    """``{sha: whole message}``; one git process for all."""
    out = _git(repo, ["log", "--no-walk=unsorted", "--stdin", "--format=%H%x00%B%x1e"], "\n".join(shas))
    messages = {}
    for record in out.split("\x1e"):
        sha, sep, body = record.strip("\n").partition("\x00")
        if sep:
            messages[sha] = body
    return messages


def _git(repo: Path, args: list[str], stdin: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise HeisenbisectError(f"{repo}: commits.priors: git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def describe_priors(priors: list[CommitPrior]) -> list[str]:
    """One line per entry, numbered as `Weights.matched` numbers them."""
    lines = []
    for n, prior in enumerate(priors, 1):
        parts = []
        if prior.paths:
            parts.append("touches " + ", ".join(f"`{p}`" for p in prior.paths))
        if prior.message is not None:
            parts.append(f"message matches `{prior.message}`")
        lines.append(f"{n}. {' and '.join(parts)}: weight {prior.weight:g}")
    return lines
