"""The soft prior's rule (``commits.priors``): each candidate's weight from what it touched and
its message, never an exclusion.

Pure: the commits' paths and messages come in read (`studies.commits.prepare` asks git). A
candidate's weight is the product of the weights of the entries it matches (1 when none); the
posterior starts from the weights normalized (`decide.posterior.culprit_posterior`'s ``prior``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class PriorEntry(Protocol):
    """One suspicion, as the spec's ``commits.priors`` entry holds it."""

    @property
    def paths(self) -> Sequence[str]: ...

    @property
    def message(self) -> str | None: ...

    @property
    def weight(self) -> float: ...


@dataclass(frozen=True)
class Weights:
    """Each candidate's weight (range order) and which entries (1-based) it matched."""

    weights: np.ndarray
    matched: tuple[tuple[int, ...], ...]


def prior_weights(
    priors: Sequence[PriorEntry],
    shas: Sequence[str],
    touched: Mapping[str, tuple[str, ...]],
    messages: Mapping[str, str],
) -> Weights:
    """The weights of the commits ``shas`` that touched ``touched[sha]`` with ``messages[sha]``."""
    weights = np.ones(len(shas))
    matched = []
    for k, sha in enumerate(shas):
        paths, message = touched.get(sha, ()), messages.get(sha, "")
        hits = tuple(n for n, prior in enumerate(priors, 1) if matches(prior, paths, message))
        for n in hits:
            weights[k] *= priors[n - 1].weight
        matched.append(hits)
    return Weights(weights, tuple(matched))


def matches(prior: PriorEntry, paths: tuple[str, ...], message: str) -> bool:
    """Whether a commit touching ``paths`` with ``message`` matches ``prior``."""
    if prior.paths and not any(
        _path_matches(pattern, path) for pattern in prior.paths for path in paths
    ):
        return False
    return prior.message is None or re.search(prior.message, message) is not None


def _path_matches(pattern: str, path: str) -> bool:
    folder = pattern.rstrip("/")
    return fnmatch.fnmatchcase(path, pattern) or path.startswith(folder + "/")
