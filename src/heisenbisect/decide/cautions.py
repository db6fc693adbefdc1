"""When a study's verdicts carry a caution: they may depend on load, or they pool several
commits of the target. `reports.cautions` words what is found here.

Load is evidence: a race's rate moves with contention, so a `reduces` or a `no_effect` measured
on a busy machine may not hold on an idle one (examples/cpu_race: cache=1 and debug_sync=1 do
move). Either sign in the store says so:

- the machine's load besides the study's own trials moved by more than `LOAD_MOVED` x during
  the study (over every run of it, resumes included), or
- a verdict changed between an earlier report of the study (an interim one, rendered while it
  ran) and this one. Every rendered report remembers its verdicts in the store's meta table
  (`studies.run_record.remember`), which hands the changes over.

And a study whose runs (the first and its resumes) started at different commits of the target
judges a mixture, not one version of the code.
"""

from __future__ import annotations

from dataclasses import dataclass

LOAD_MOVED = 2.0
# loads below one busy CPU are treated as one: from 0.1 to 0.3 is noise, not contention
LOAD_FLOOR = 1.0

Change = tuple[str, str, str]  # (change, its verdict in an earlier report, its verdict now)


@dataclass(frozen=True)
class Cautions:
    """What the verdicts may depend on besides the changes they judge."""

    changed: tuple[Change, ...] = ()
    load_moved: tuple[float, float] | None = None  # (lowest, highest) background load
    cpus: int | None = None
    commits: tuple[tuple[str, int], ...] = ()  # the target's commits and runs at each, when several

    @property
    def load(self) -> bool:
        return bool(self.changed) or self.load_moved is not None


def cautions_of(environment: dict | None, changed: list[Change]) -> Cautions | None:
    """The study's cautions from its recorded environment and the verdicts that changed; None
    when nothing calls for one."""
    environment = environment or {}
    moved = load_moved(background_loads(environment.get("sessions") or []))
    commits = session_commits(environment)
    if not changed and moved is None and len(commits) < 2:
        return None
    several = tuple(commits) if len(commits) > 1 else ()
    return Cautions(tuple(changed), moved, environment.get("cpus"), several)


def background_loads(sessions: list[dict]) -> list[float]:
    """The load besides the study's trials: each run's start (none of them running yet) and its
    end less its trials in flight (the 1-minute average then holds about that many of its own)."""
    loads = []
    for session in sessions:
        if session.get("load_start") is not None:
            loads.append(session["load_start"])
        if session.get("load_end") is not None:
            loads.append(max(session["load_end"] - (session.get("in_flight") or 0), 0.0))
    return loads


def load_moved(loads: list[float]) -> tuple[float, float] | None:
    """(lowest, highest) when the highest exceeds `LOAD_MOVED` x the lowest, each taken as at
    least `LOAD_FLOOR`."""
    if len(loads) < 2:
        return None
    low, high = max(min(loads), LOAD_FLOOR), max(max(loads), LOAD_FLOOR)
    return (min(loads), max(loads)) if high > LOAD_MOVED * low else None


def session_commits(environment: dict | None) -> list[tuple[str, int]]:
    """The target's commits the study's runs (first and resumes) started at, in order, with how
    many runs each; sessions recorded before the commit was (or outside a repository) count
    for none."""
    commits: dict[str, int] = {}
    for session in (environment or {}).get("sessions") or []:
        if commit := session.get("target_commit"):
            commits[commit] = commits.get(commit, 0) + 1
    return list(commits.items())
