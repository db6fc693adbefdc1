"""The soft prior's rule: weights multiply over the entries a commit matches, never exclude."""

from __future__ import annotations

from heisenbisect.decide.priors import prior_weights
from heisenbisect.hypotheses.model import CommitPrior


def test_weights_multiply_over_matched_entries_and_default_to_one():
    priors = [
        CommitPrior(paths=["pkg/"], weight=3),
        CommitPrior(message="(?i)overlap", weight=2),
        CommitPrior(paths=["docs/*.md"], message="^fix", weight=5),
    ]
    touched = {"a": ("pkg/x.py",), "b": ("docs/x.md",), "c": ("pkg/y.py", "docs/y.md")}
    messages = {"a": "Overlap batches", "b": "fix docs", "c": "refactor"}
    found = prior_weights(priors, ["a", "b", "c", "d"], touched, messages)
    assert found.weights.tolist() == [6.0, 5.0, 3.0, 1.0]
    assert found.matched == ((1, 2), (3,), (1,), ())
