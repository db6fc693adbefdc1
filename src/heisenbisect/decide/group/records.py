"""The records of a group screening: its settings, the arms of its search, and its result.

Apart from the strategy (`decide.group` and the modules it is made of, which keep its arms in
these records) and `decide.group.result` (which builds the result from them), so neither imports
the other.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from heisenbisect.decide.combinations import Change
from heisenbisect.decide.reach import Reach
from heisenbisect.decide.screening import ArmResult, ScreeningSettings
from heisenbisect.decide.sequential import ArmRuns, ArmState
from heisenbisect.records import Verdict

UNTESTABLE = "untestable"
LOWER = "lower"  # a search group far below the baseline's rate: a reducer inside, split to find it
PARTNER = "partner"  # a clearing group lower than the baseline that stopped the failure beside a single reducer
# a clearing group lower than the baseline whose changes went back to the search, to find the reducer
SEARCHED = "searched"
SET_ASIDE = (
    "stops",
    PARTNER,
    SEARCHED,
)  # a clearing group's answers that hand its changes to a reduction or the search, not a verdict
CLAIMS = (Verdict.ELIMINATES, Verdict.REDUCES, Verdict.INCREASES)


@dataclass(frozen=True)
class GroupSettings:
    screening: ScreeningSettings = field(default_factory=ScreeningSettings)
    group_size: int | None = None  # default: Hwang's size for ``expected_effects``
    expected_effects: int = 2
    # each error of the search's test (`sequential.ZeroTest`): a set at zero_rate "fails", one at
    # the baseline's rate "stops"
    miss_rate: float = 0.01
    # a probe's, a clearing group's and a masking re-check's chance to answer "stops" for a set at twice
    # zero_rate: a wrong stop sends a reduction after a combination that is not there, and an OR pair's
    # member alone (7.8% under a 15% baseline, inside the 5-10% indifference zone) is answered "stops"
    # 3% of the time at miss_rate 0.01, 0.4% at 0.003, for 23 more clean runs to show a zero (108, not 85)
    stop_miss_rate: float = 0.003
    # the errors of a search group's level test, "far below the baseline's rate (a reducer inside)?"
    # (`SearchAnswers.level_test`): "at the baseline's rate" for a group at (1 - min_reduction) x it, a
    # missed reducer, which the clearing group's own test then finds at a higher cost; and "lower" for
    # a group at the baseline's rate, which splits an inert group (tens of runs)
    level_miss_rate: float = 0.05
    lower_miss_rate: float = 0.01
    reduction_probes: int = (
        48  # probes one smallest-combination search (ddmin) may run before it reports what it has
    )
    untestable_attempts: int = 3  # trials, none of them clean, that make an arm untestable


class Role(str, enum.Enum):
    GROUP = "group"  # search for eliminators and breakers: closed when shown above zero_rate, split when below
    CLEAR = "clear"  # the changes the search left: cleared by an equivalence test, split when it differs
    SINGLE = "single"  # one change: always runs to its own verdict
    PROBE = "probe"  # a subset tried by the combination search: closed once it answers
    COMBINATION = "combination"  # a smallest stopping combination: runs to its own verdict


@dataclass
class Arm:
    """One arm of the search: a set of changes run together, its role, and its sequential test."""

    id: int
    changes: tuple[Change, ...]
    role: Role
    state: ArmState
    offset: int  # baseline runs before this arm existed: its looks use the baseline runs after them
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    closed: str = ""  # why the search stopped this arm without a claim
    equivalence_p: float = (
        1.0  # groups: sequential p-value against "its rate is not the baseline's"
    )
    masking: bool = False  # stopped the failure while every half kept failing
    answer: str = ""  # the search's answer, fixed when the search closed the arm
    recheck: bool = False  # reopened to confirm a suspected masking with m more clean runs
    problem: tuple[str | None, str] | None = (
        None  # (log path, detail) of the last trial that did not run
    )
    search_evidence: ArmRuns | None = (
        None  # a promoted arm's runs from before: the search's answers only
    )
    scan: tuple[int, int, str] = (
        0,
        0,
        "pending",
    )  # strict test's (runs read, failed among them, first answer)
    scan_from: int = (
        0  # the strict test reads runs from here: a masking's second look reads only fresh runs
    )
    stop_checked: bool = False  # a set's stop with failed runs was asked again on fresh runs
    asked_again: bool = (
        False  # a probe ddmin stood on, reopened once to answer from fresh runs before refining
    )
    partner: int | None = (
        None  # a clearing group lower than the baseline: its probe with the single reducers (-1: none)
    )
    first_role: Role | None = (
        None  # its role when added: whose cost its runs before a promotion are
    )
    # a search group that failed waits for its level test (`SearchAnswers.level_test`) before it closes,
    # unless a sibling was shown far below the baseline's rate, which explains their parent's
    awaits_level: bool = True
    lowered: bool = (
        False  # a single promoted by the search with failed runs: far below the baseline
    )

    def __post_init__(self) -> None:
        if self.first_role is None:
            self.first_role = self.role

    @property
    def seen(self) -> ArmRuns:
        """Every run of this config, what the search answers from; claims read ``state.evidence``."""
        return self.search_evidence or self.state.evidence

    @property
    def open(self) -> bool:
        return self.state.verdict is None


@dataclass(frozen=True)
class SearchArm:
    """One arm of the search (a group, a single change, a probe or a combination), for reports."""

    id: int
    parent: int | None
    role: str
    changes: tuple[Change, ...]
    result: ArmResult
    decision: str
    equivalence_p: float | None
    masking: bool
    all_runs: int  # every run of its config, the search's before a promotion included: each stored run once
    open: bool  # still running (an interim report): a clearing group not yet decided


@dataclass(frozen=True)
class ChangeVerdict:
    """What the study says about one candidate change, and which arm says it."""

    change: Change
    verdict: str  # a Verdict value, or "untestable"
    arm: int | None  # the deciding arm's id
    via_group: bool  # cleared by a group arm rather than by its own arm
    note: str = ""
    reach: Reach | None = None  # an env factor's: whether its variable reached the target


@dataclass(frozen=True)
class Breaker:
    change: Change
    arm: int
    attempts: int
    statuses: Mapping[str, int]
    log_path: str | None
    detail: str


@dataclass(frozen=True)
class CombinationResult:
    changes: tuple[Change, ...]
    arm: int
    verdict: Verdict
    origin: str
    members: tuple[tuple[Change, str], ...]  # each member's own verdict


@dataclass(frozen=True)
class TrialCost:
    """Where a study's trials went, each counted once: they add up to ``GroupResult.trials_total``.

    ``search``: search groups and masking re-checks; ``clearing``: clearing groups; ``own_arms``:
    single changes' claim arms (a breaker's trials included); ``reductions``: ddmin's probes, the
    partner and reducer probes and the combination arms. An arm promoted from the search counts its
    runs before the promotion where it began (a single that stopped: search), its claim's runs apart.
    """

    baseline: int
    search: int
    clearing: int
    own_arms: int
    reductions: int

    @property
    def total(self) -> int:
        return self.baseline + self.search + self.clearing + self.own_arms + self.reductions


@dataclass(frozen=True)
class GroupResult:
    baseline: ArmResult
    changes: tuple[ChangeVerdict, ...]
    arms: tuple[SearchArm, ...]
    combinations: tuple[CombinationResult, ...]
    untestable: tuple[Breaker, ...]
    settings: GroupSettings
    family: int  # hypotheses in the final Holm family
    finished: bool
    trials_total: int  # every trial of the study (baseline and arms, with or without a result), each counted once
    cost: TrialCost | None = None  # trials_total by part of the search

    def trials_of(self, change: Change) -> tuple[int, int]:
        """(own, group): runs of the change's own config, and of the groups it was one of."""
        own = sum(a.all_runs for a in self.arms if a.changes == (change,))
        group = sum(a.all_runs for a in self.arms if len(a.changes) > 1 and change in a.changes)
        return own, group

    @property
    def cannot_reproduce(self) -> bool:
        return self.baseline.verdict is Verdict.CANNOT_REPRODUCE

    def held_by_skips(self) -> list[ChangeVerdict]:
        """The changes ``untestable`` because their skipped runs may hide the failure (`decide.skips`):
        no answer, unlike a breaker's ``untestable`` (a change none of whose runs ended cleanly)."""
        broken = {b.change for b in self.untestable}
        return [v for v in self.changes if v.verdict == UNTESTABLE and v.change not in broken]
