"""Load is evidence: when a study's verdicts may depend on how busy the machine was.

A race's rate moves with contention, so a `reduces` or a `no_effect` measured on a busy machine
may not hold on an idle one (examples/cpu_race: cache=1 and debug_sync=1 do move). The report
says so, in one line beside the verdicts, when either sign is in the store:

- the machine's load besides the study's own trials moved by more than `LOAD_MOVED` x during
  the study (over every run of it, resumes included), or
- a verdict changed between an earlier report of the study (an interim one, rendered while it
  ran) and this one. Every rendered report remembers its verdicts in the store's meta table
  (`studies.run_record.remember`), which hands this module the changes.
"""

from __future__ import annotations

LOAD_MOVED = 2.0
# loads below one busy CPU are treated as one: from 0.1 to 0.3 is noise, not contention
LOAD_FLOOR = 1.0


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
    """(lowest, highest) when the highest exceeds `LOAD_MOVED` x the lowest, each at least `LOAD_FLOOR`."""
    if len(loads) < 2:
        return None
    low, high = max(min(loads), LOAD_FLOOR), max(max(loads), LOAD_FLOOR)
    return (min(loads), max(loads)) if high > LOAD_MOVED * low else None


def caution(environment: dict | None, changed: list[tuple[str, str, str]]) -> str | None:
    """The report's one line when its verdicts may depend on load; None when nothing says so."""
    reasons = [f"`{change}` was `{was}` in an earlier report and is `{now}` now" for change, was, now in changed]
    sessions = (environment or {}).get("sessions") or []
    if moved := load_moved(background_loads(sessions)):
        cpus = (environment or {}).get("cpus")
        reasons.append(
            f"the load besides this study's trials moved from {moved[0]:.2f} to {moved[1]:.2f} during it "
            f"(1-minute load average{f', {cpus} CPUs' if cpus else ''})"
        )
    if not reasons:
        return None
    return f"**Load.** The verdicts of reducers and decoys may depend on load: {'; '.join(reasons)}."
