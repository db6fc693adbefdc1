"""The last phase of `bisect commits`: verify a found culprit with fresh runs before blaming it.

Interleaved runs at the culprit, the commit just before it (its first parent on the searched
line, or the good end) and, for a regression that reverts cleanly, the bad end with the
culprit reverted (`git.reverted_commit`), until `decide.verify` decides. Their trial ids start
with `marks.VERIFY_PREFIX`, so the search never reads them and a resumed study replays the
verification from the store. In the strategy's order (a fix's range read backwards) the culprit
is the commit that fails and its predecessor the one that does not, for either direction.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from heisenbisect.decide.commits import CommitStrategy, State
from heisenbisect.decide.range_check import Refusal
from heisenbisect.decide.verify import Verification, VerifySettings, VerifyStrategy
from heisenbisect.engine import TrialFactory
from heisenbisect.git import reverted_commit
from heisenbisect.hypotheses.model import Spec
from heisenbisect.records import Config, Trial
from heisenbisect.store import Store
from heisenbisect.studies.commits.marks import VERIFY_PREFIX, verification_runs
from heisenbisect.studies.commits.prepare import CommitStudy
from heisenbisect.studies.common import trial_factory


@dataclass(frozen=True)
class VerifyPlan:
    """What is verified: the failing commit, the one before it, the revert (or None)."""

    failing: Config
    passing: Config
    revert: Config | None
    settings: VerifySettings

    def strategy(self) -> VerifyStrategy:
        return VerifyStrategy(self.failing, self.passing, self.settings, self.revert)


@dataclass(frozen=True)
class Phases:
    """How a bisection's phases ended, for commits and versions alike: the range refused (no
    search, or its rates reversed), or the culprit's verification (None: no culprit found)."""

    refusal: Refusal | None
    verifying: VerifyPlan | None


def plan(study: CommitStudy, strategy: CommitStrategy) -> VerifyPlan | None:
    """The verification of the search's culprit; None unless one commit was found (and
    ``commits.verify`` is on)."""
    if not study.commits.verify:
        return None
    found = found_plan(strategy, study.commits.verify_rounds)
    if found is None or study.fix:  # a fix's revert would have to bring the failure back: not run
        return found
    sha = reverted_commit(study.range.repo, study.range.bad.sha, found.failing.commit or "")
    revert = strategy.config_for(sha) if sha is not None else None
    return dataclasses.replace(found, revert=revert)


def found_plan(
    strategy: CommitStrategy, max_rounds: int, unit: str = "commit"
) -> VerifyPlan | None:
    """The culprit and the candidate before it (or the good end), at the rates the search
    settled on; None unless the search found one. A version bisection's too (``unit``)."""
    result = strategy.result()
    if result.state is not State.FOUND:
        return None
    j = result.culprit
    failing = strategy.candidates[j]
    passing = strategy.candidates[j - 1] if j > 0 else strategy.good
    s = strategy.settings
    rates = VerifySettings(
        p_bad=s.p_bad if s.p_bad is not None else result.mean_p_bad,
        p_good=s.p_good if s.p_good is not None else result.mean_p_good,
        confidence=s.confidence,
        max_rounds=max_rounds,
        unit=unit,
    )
    return VerifyPlan(strategy.config_for(failing), strategy.config_for(passing), None, rates)


def replayed(found: VerifyPlan, store: Store) -> VerifyStrategy:
    verifying = found.strategy()
    for config, outcome in verification_runs(store):
        verifying.observe(config, outcome)
    return verifying


def verify_trials(spec: Spec) -> TrialFactory:
    """The spec's trials, their ids marked as verification runs."""
    make = trial_factory(spec)

    def trial(config: Config, index: int, seed: int) -> Trial:
        made = make(config, index, seed)
        return dataclasses.replace(made, trial_id=VERIFY_PREFIX + made.trial_id)

    return trial


def progress_rows(
    study: CommitStudy, found: VerifyPlan, verifying: VerifyStrategy
) -> list[tuple[str, int, int, str | None]]:
    """The live table while verifying: one row per side."""
    v: Verification = verifying.result()
    names = {c.sha: c for c in study.range.candidates}
    good = study.range.good

    def label(config: Config, role: str) -> str:
        info = names.get(config.commit or "")
        short = info.short if info else good.short if config.commit == good.sha else "revert"
        return f"verify {role} {short}"

    rows = [
        (label(found.failing, "failing"), v.culprit.runs, v.culprit.failed, v.state.value),
        (label(found.passing, "before"), v.before.runs, v.before.failed, None),
    ]
    if found.revert is not None and v.revert is not None:
        rows.append(("verify bad end, culprit reverted", v.revert.runs, v.revert.failed, None))
    return rows
