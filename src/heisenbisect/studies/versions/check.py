"""The first phase of `bisect versions`: runs at the two ends before any version is blamed.

The commit bisection's range check (`decide.range_check`, bound to a strategy by
`studies.commits.check`), in a version bisection's words: the bad end first, interleaved with
the good end; a bad end that does not fail, or that fails less often than the good end (the
ends of a fix, which `bisect versions` does not search), is refused with exit 3.
"""

from __future__ import annotations

from heisenbisect.decide.commits import CommitStrategy
from heisenbisect.decide.range_check import RangeCheckStrategy, RangeSettings, Wording
from heisenbisect.store import Store
from heisenbisect.studies.commits.check import ends_check, replay_check
from heisenbisect.studies.versions.prepare import VersionStudy

WORDS = Wording(
    failing_end="bad end",
    more_runs="--end-runs",
    reversed_advice="the older version (--good) fails more often than the newer (--bad); "
    "bisect versions finds the version that brought a failure, not one that took it away",
    unit="version",
)


def replayed_check(
    study: VersionStudy, strategy: CommitStrategy, store: Store
) -> RangeCheckStrategy:
    """The check over the range's ends, as the stored runs leave it."""
    r = study.request
    settings = RangeSettings(None, None, r.confidence, r.end_runs)
    return replay_check(ends_check(strategy, settings), store)


def check_rows(
    study: VersionStudy, check: RangeCheckStrategy
) -> list[tuple[str, int, int, str | None]]:
    """The live table while the ends run: one row per end."""
    found = check.result()
    return [
        (f"bad end {study.range.bad}", *found.failing, found.state.value),
        (f"good end {study.range.good}", *found.passing, None),
    ]
