"""The last phase of `bisect versions`: verify a found culprit version with fresh runs.

The same verification as `bisect commits` (`studies.commits.verify`, `decide.verify`): fresh
interleaved runs at the culprit version and the version before it (the previous candidate, or
the good end), each in its cached environment, until `decide.verify.VerifyStrategy` decides.
Their trial ids start with `studies.commits.marks.VERIFY_PREFIX`, so the search never reads them
and a resumed study replays the verification from the store. There is no revert to run: a
release is not a commit.
"""

from __future__ import annotations

from heisenbisect.decide.commits import CommitStrategy
from heisenbisect.decide.verify import VerifySettings, VerifyStrategy
from heisenbisect.records import Config
from heisenbisect.studies.commits.verify import VerifyPlan, found_plan

UNIT = "version"  # how the verification's reasons and line name a candidate


def plan(strategy: CommitStrategy) -> VerifyPlan | None:
    """The verification of the search's culprit version; None unless one was found."""
    return found_plan(strategy, VerifySettings.max_rounds, UNIT)


def progress_rows(
    found: VerifyPlan, verifying: VerifyStrategy
) -> list[tuple[str, int, int, str | None]]:
    """The live table while verifying: one row per side."""
    v = verifying.result()

    def label(config: Config, role: str) -> str:
        return f"verify {role} {config.commit}"

    return [
        (label(found.failing, "culprit"), v.culprit.runs, v.culprit.failed, v.state.value),
        (label(found.passing, "before"), v.before.runs, v.before.failed, None),
    ]
