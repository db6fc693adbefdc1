"""A group screening's result, built for reports: the final Holm family settles every claim.

During the study an arm is decided by Holm over the arms that exist at that moment; the search
then adds arms, which can only raise adjusted p-values. So the claims are settled here, by Holm
over the final family: a claim whose adjusted p-value no longer clears alpha is withdrawn
(``inconclusive``, with a note), never kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from heisenbisect.decide.combinations import Change
from heisenbisect.decide.group.records import (
    CLAIMS,
    SET_ASIDE,
    UNTESTABLE,
    Arm,
    Breaker,
    ChangeVerdict,
    CombinationResult,
    GroupResult,
    GroupSettings,
    Role,
    SearchArm,
    TrialCost,
)
from heisenbisect.decide.reach import applied_verdict, reach_of
from heisenbisect.decide.screening import arm_result
from heisenbisect.decide.sequential import ArmState
from heisenbisect.records import Verdict

WITHDRAWN = "not significant after Holm over the final family of {n} hypotheses"


@dataclass(frozen=True)
class SearchState:
    """What a group screening's search leaves for its result: its arms, and the final Holm family."""

    settings: GroupSettings
    baseline: ArmState
    arms: tuple[Arm, ...]
    candidates: tuple[Change, ...]
    combinations: tuple[tuple[int, str], ...]  # (combination arm, where it came from)
    variables: Mapping[str, str]  # each env factor's variable
    stopped: frozenset[int]  # the arms whose search answer is "stops"
    difference: Mapping[int, float]  # Holm-adjusted p-values over the final family: the claims'
    equivalence: Mapping[int, float]  # and the clearing groups'
    cannot_reproduce: bool
    finished: bool


def final_verdict(
    arm: Arm,
    difference: Mapping[int, float],
    equivalence: Mapping[int, float],
    alpha: float,
    n: int,
) -> tuple[Verdict, str]:
    """The arm's verdict once the final family is known, and the note that explains a withdrawal."""
    verdict = arm.state.verdict or Verdict.INCONCLUSIVE
    note = arm.state.note
    if verdict in CLAIMS and arm.id in difference and difference[arm.id] > alpha:
        return Verdict.INCONCLUSIVE, WITHDRAWN.format(n=n)
    if verdict is Verdict.NO_EFFECT and arm.id in equivalence and equivalence[arm.id] > alpha:
        return Verdict.INCONCLUSIVE, WITHDRAWN.format(n=n)
    return verdict, note


def decision_text(arm: Arm, verdict: Verdict) -> str:
    if arm.closed:
        return arm.closed
    if arm.masking:
        return f"{verdict.value}; stopped the failure while none of its halves did"
    if arm.role.value == "clear" and verdict is Verdict.NO_EFFECT:
        return "cleared: no_effect in group"
    if arm.role.value == "clear" and arm.children:
        return f"split: {'lower' if arm.state.lower else 'higher'} than the baseline (search test, not a claim)"
    return verdict.value


def applied_change(search: SearchState, decided: ChangeVerdict) -> ChangeVerdict:
    """The change's verdict once its variable's reach over every run with it applied is known:
    ``not_applied`` for one never read, cleared by a group or not (`decide.reach`)."""
    var = search.variables.get(decided.change[0])
    if var is None or decided.verdict not in {v.value for v in Verdict}:
        return decided  # an arg factor, or untestable
    reach = reach_of(var, [a.seen.reads for a in search.arms if decided.change in a.changes])
    arm = None if decided.via_group or decided.arm is None else search.arms[decided.arm]
    seen = arm is not None and (
        arm.state.pending_zero
        or arm.state.sequential_p <= search.settings.screening.alpha
        or arm.id in search.stopped
    )
    verdict, why = applied_verdict(Verdict(decided.verdict), reach, seen)
    note = "; ".join(filter(None, (decided.note, why)))
    return dataclasses.replace(decided, verdict=verdict.value, note=note, reach=reach)


def split_further(arm: Arm, arms: tuple[Arm, ...], change: Change) -> bool:
    """A clearing group split into clearing groups or single arms, one of them holding ``change``. A search
    group taken up as a clearing group keeps the search's halves as children: those do not count."""
    return any(
        arms[c].role in (Role.CLEAR, Role.SINGLE) and change in arms[c].changes
        for c in arm.children
    )


PART = {
    Role.GROUP: "search",
    Role.CLEAR: "clearing",
    Role.SINGLE: "own_arms",
    Role.PROBE: "reductions",
    Role.COMBINATION: "reductions",
}


def trial_cost(search: SearchState) -> TrialCost:
    """Every trial of the study by the part of the search that asked for it (`TrialCost`): an arm's
    runs since its last promotion by its role now, its runs before it by the role it was added with."""
    parts = dict.fromkeys(PART.values(), 0)
    for arm in search.arms:
        claim = arm.state.evidence.attempts
        parts[PART[arm.role]] += claim
        parts[PART[arm.first_role or arm.role]] += arm.seen.attempts - claim
    return TrialCost(baseline=search.baseline.evidence.attempts, **parts)


def build_result(search: SearchState) -> GroupResult:
    s = search.settings.screening
    conf = s.confidence
    cannot = search.cannot_reproduce
    base_verdict = Verdict.CANNOT_REPRODUCE if cannot else Verdict.NO_EFFECT
    baseline = arm_result(search.baseline, base_verdict, 1.0, conf, "")
    difference, equivalence = search.difference, search.equivalence
    n = len(difference) + len(equivalence)
    arms, verdicts = [], {}
    for arm in search.arms:
        verdict, note = final_verdict(arm, difference, equivalence, s.alpha, n)
        if cannot:
            verdict = Verdict.CANNOT_REPRODUCE
        verdicts[arm.id] = verdict
        arms.append(
            SearchArm(
                id=arm.id,
                parent=arm.parent,
                role=arm.role.value,
                changes=arm.changes,
                result=arm_result(arm.state, verdict, difference.get(arm.id, 1.0), conf, note),
                decision=decision_text(arm, verdict),
                equivalence_p=equivalence.get(arm.id),
                masking=arm.masking,
                all_runs=arm.seen.runs,
                open=arm.open and not cannot,
            )
        )
    changes = []
    for change in search.candidates:
        deciding = [
            a
            for a in search.arms
            if change in a.changes
            and (a.role is Role.SINGLE or a.role is Role.CLEAR and a.answer not in SET_ASIDE)
        ]
        single = next((a for a in deciding if a.role is Role.SINGLE), None)
        if cannot:
            changes.append(ChangeVerdict(change, Verdict.CANNOT_REPRODUCE.value, None, False))
        elif single is not None and single.answer == UNTESTABLE:
            changes.append(ChangeVerdict(change, UNTESTABLE, single.id, False, single.closed))
        elif single is not None:
            changes.append(
                ChangeVerdict(
                    change, verdicts[single.id].value, single.id, False, arms[single.id].result.note
                )
            )
        else:
            leaves = [
                a for a in deciding if not split_further(a, search.arms, change)
            ]  # where a split ended
            leaf = (leaves or deciding)[-1] if leaves or deciding else None
            split = leaf is None or split_further(leaf, search.arms, change)
            word = Verdict.INCONCLUSIVE.value if split or leaf is None else verdicts[leaf.id].value
            changes.append(
                ChangeVerdict(change, word, None if leaf is None else leaf.id, leaf is not None)
            )
    changes = [applied_change(search, v) for v in changes]
    for (
        v
    ) in changes:  # a single change's own arm says not_applied too, in the search's table and tree
        if v.verdict == Verdict.NOT_APPLIED.value and not v.via_group and v.arm is not None:
            shown = arms[v.arm]
            result = dataclasses.replace(
                shown.result, verdict=Verdict.NOT_APPLIED, note=v.note, reach=v.reach
            )
            arms[v.arm] = dataclasses.replace(
                shown, result=result, decision=Verdict.NOT_APPLIED.value
            )
    breakers = []
    for arm in search.arms:
        if arm.role is Role.SINGLE and arm.answer == UNTESTABLE:
            log, detail = arm.problem or (None, "")
            ev = arm.state.evidence
            breakers.append(
                Breaker(arm.changes[0], arm.id, ev.attempts, dict(ev.statuses), log, detail)
            )
    combinations = []
    for arm_id, origin in search.combinations:
        arm = search.arms[arm_id]
        members = []
        for change in arm.changes:
            alone = next((c.verdict for c in changes if c.change == change), None)
            # a change outside the candidates cannot happen; keep the record honest
            members.append((change, alone if alone is not None else Verdict.INCONCLUSIVE.value))
        combinations.append(
            CombinationResult(arm.changes, arm_id, verdicts[arm_id], origin, tuple(members))
        )
    return GroupResult(
        baseline=baseline,
        changes=tuple(changes),
        arms=tuple(arms),
        combinations=tuple(combinations),
        untestable=tuple(breakers),
        settings=search.settings,
        family=n,
        finished=search.finished,
        trials_total=search.baseline.evidence.attempts + sum(a.seen.attempts for a in search.arms),
        cost=trial_cost(search),
    )
