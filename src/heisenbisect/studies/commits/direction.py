"""A fix bisection (``direction: fix``) as a regression bisection of the reversed range.

The posterior (`decide.posterior`) knows one shape: commits from the culprit on fail at p, the
ones before it (and the known-good end) at q < p. Where a failure rate went *down*, the old end
``good`` fails and the new end ``bad`` does not, and the fix F is the first commit of the low
rate. Read the range backwards and it is that shape exactly: candidates ``c[N-2], ..., c[0],
good`` (the last, ``good``, is the known-failing end) with ``bad`` = ``c[N-1]`` as the known
end that does not fail; a culprit at strategy index i is "``c[N-2-i]`` and everything older
fails", so the fix is ``c[N-1-i]``. Nothing in the statistics changes, so what is shown for
regressions (calibration, stop rule) holds for fixes. `FixView` shows the reversed strategy
in the range's own order (oldest first), for the reports and the progress table.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from heisenbisect.decide.commits import CommitStrategy, Result
from heisenbisect.decide.posterior import Posterior
from heisenbisect.git import CommitRange


def strategy_order(commit_range: CommitRange, fix: bool) -> tuple[list[str], str]:
    """(the strategy's candidates, oldest first as it reads them; its known-good end)."""
    shas = [c.sha for c in commit_range.candidates]
    if not fix:
        return shas, commit_range.good.sha
    return [*reversed(shas[:-1]), commit_range.good.sha], shas[-1]


def strategy_weights(weights: np.ndarray | None, fix: bool) -> np.ndarray | None:
    """Per-candidate prior weights (range order) in the strategy's order: the fix at c[k] is index N-1-k."""
    if weights is None or not fix:
        return weights
    return weights[::-1].copy()


class FixView:
    """A fix bisection's `CommitStrategy` as its reports read one, in the range's order.

    Posterior and culprit indices name the fixing commit (``c[k]`` is strategy index N-1-k);
    run counts name the probed commit (``c[k]`` is strategy index N-2-k, ``bad`` the strategy's
    good end, and the old end ``good`` is the strategy's last candidate, shown as the good end).
    """

    def __init__(self, inner: CommitStrategy):
        self.inner = inner
        self.settings = inner.settings
        n = len(inner.candidates)
        self._last = n - 1
        self.trials = self._runs(inner.trials, inner.good_trials)
        self.failures = self._runs(inner.failures, inner.good_failures)
        self.errors = self._runs(inner.errors, 0)
        self.skips = self._runs(inner.skips, inner.good_skips)
        self.hiding = self._runs(inner.hiding, False)
        self.untestable = self._runs(inner.untestable, inner.good_untestable)
        self.good_trials = int(inner.trials[-1])
        self.good_failures = int(inner.failures[-1])

    def _runs(self, counts: np.ndarray, at_new_end: object) -> np.ndarray:
        return np.concatenate([counts[-2::-1], np.asarray([at_new_end], dtype=counts.dtype)])

    def posterior(self) -> Posterior:
        post = self.inner.posterior()
        return dataclasses.replace(
            post,
            probs=post.probs[::-1].copy(),
            rate_bad=post.rate_bad[::-1].copy(),
            rate_good=post.rate_good[::-1].copy(),
        )

    def result(self) -> Result:
        result = self.inner.result()
        flip = self._last
        return dataclasses.replace(
            result,
            culprit=flip - result.culprit,
            group=tuple(sorted(flip - i for i in result.group)),
            runners_up=tuple((flip - i, p) for i, p in result.runners_up),
            held_by=None if result.held_by is None else flip - 1 - result.held_by,
        )
