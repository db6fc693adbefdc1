"""Soft priors (``commits.priors``): a user's suspicion as per-commit weights, never an exclusion.

``paths:`` of the range drops commits, so a wrong guess there loses the culprit for good; a
prior only makes matching commits likelier before any run, and runs overrule it. Each candidate's
weight is the product of the weights of the entries it matches (1 when none); the posterior
starts from the weights normalized (`decide.posterior.culprit_posterior`'s ``prior``).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heisenbisect.git import CommitInfo, commit_messages, touched_paths
from heisenbisect.hypotheses.model import CommitPrior

FIELD = "commits.priors"  # the spec's section, named when git fails to read the commits


@dataclass(frozen=True)
class Weights:
    """Each candidate's weight (range order) and which entries (1-based) it matched."""

    weights: np.ndarray
    matched: tuple[tuple[int, ...], ...]


def commit_weights(
    repo: Path, candidates: tuple[CommitInfo, ...], priors: list[CommitPrior]
) -> Weights | None:
    """The candidates' weights under ``priors``; None without priors (a uniform prior)."""
    if not priors:
        return None
    shas = [c.sha for c in candidates]
    touched = touched_paths(repo, shas, FIELD) if any(p.paths for p in priors) else {}
    asks_messages = any(p.message is not None for p in priors)
    messages = commit_messages(repo, shas, FIELD) if asks_messages else {}
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
    if prior.paths and not any(
        _path_matches(pattern, path) for pattern in prior.paths for path in paths
    ):
        return False
    return prior.message is None or re.search(prior.message, message) is not None


def _path_matches(pattern: str, path: str) -> bool:
    folder = pattern.rstrip("/")
    return fnmatch.fnmatchcase(path, pattern) or path.startswith(folder + "/")


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
