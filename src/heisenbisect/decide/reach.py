"""Did a factor's change reach the target? `not_applied`, from the env reads of its runs.

A change whose variable no Python process of the target ever read cannot have acted through
Python: screened, it looks exactly like a decoy, and a misspelt ``APP_LOKC`` would be
reported as "the fix has no effect". The rule, which never turns a claim into a wrong one:

- only an arm that the runs leave at ``no_effect`` or ``inconclusive`` is relabelled;
  an effect (``eliminates``, ``reduces``, ``increases``) stands, since it proves the change
  reached the target (a shell wrapper, C code: readers the tracker cannot see);
- and only when its own sequential test saw no difference at level alpha (before the
  correction across arms) and it is not a pending zero: a hint of an effect points at such
  a reader, so the arm keeps its verdict, with a note;
- ``not_applied`` needs at least one run with a result in which a Python process tracked
  reads (an arm whose every trial crashed may have crashed on the change), no read of the
  variable by name in any tracked run, and no process that copied the whole environment
  (which may read any name) in any of them.

An arm left at ``no_effect`` or ``inconclusive`` that the tracker could not see at all (no
tracked run with a result: a target that is not Python, ``python -I`` or ``-S``; or a process
that copied the whole environment) keeps its verdict with a note saying so: it may be a change
that never reached the target.

No arm stops early for being unread: an effect carried by a reader the tracker cannot see
shows only with the arm's full runs, so the arm runs to its statistical verdict, and is
relabelled at the end (docs/refusals.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from heisenbisect.records import EnvReads, Verdict

RELABELLED = (Verdict.NO_EFFECT, Verdict.INCONCLUSIVE)
NEAR_MIN_LENGTH = 4  # as in runners/env_reads/hook/sitecustomize.py, which records near names
SUGGESTIONS = 2
UNSEEN = "a shell wrapper, C code"
UNSEEN_REACH = "the tracker cannot tell whether the change reached the target"
ALONE = "the runs alone: "  # how a not_applied note names the verdict its runs gave


def runs_alone(note: str) -> str | None:
    """The verdict a ``not_applied`` arm's runs gave by themselves, read back from its note."""
    start = note.find(ALONE)
    return None if start < 0 else note[start + len(ALONE) :].split(")", 1)[0]


@dataclass
class ReadTally:
    """An arm's env reads so far: tracked runs, the runs that read each name, where the environment was copied."""

    tracked_runs: int = 0
    tracked_results: int = 0  # tracked runs that produced a result
    reading_runs: dict[str, int] = field(default_factory=dict)
    copying_runs: int = 0
    copied_at: dict[str, None] = field(default_factory=dict)  # file:line, in order of appearance

    def add(self, reads: EnvReads | None, has_result: bool = True) -> None:
        if reads is None:
            return
        self.tracked_runs += 1
        self.tracked_results += has_result
        for name in reads.names:
            self.reading_runs[name] = self.reading_runs.get(name, 0) + 1
        if reads.copied_at:
            self.copying_runs += 1
            self.copied_at.update(dict.fromkeys(reads.copied_at))


@dataclass(frozen=True)
class Reach:
    """Whether one variable reached the target in a set of runs."""

    var: str
    tracked_runs: int  # runs in which some Python process tracked its reads
    tracked_results: int  # of those, the runs that produced a result
    read_in: int  # tracked runs in which a process looked the variable up by name
    copied_in: int  # tracked runs in which a process copied the whole environment
    copied_at: tuple[str, ...]
    similar: tuple[str, ...]  # names close to it that were read: "did you mean"

    @property
    def never_read(self) -> bool:
        return self.tracked_results > 0 and self.read_in == 0 and self.copied_in == 0

    def line(self) -> str:
        """One line for a report row, the terminal and `bisect validate --probe`."""
        if self.tracked_runs == 0:
            return (
                f"{self.var}: not tracked (no Python process of the target loaded the tracker: "
                "not Python, or run with `python -I` or `-S`)"
            )
        runs = f"{self.tracked_runs} run{'s' if self.tracked_runs != 1 else ''}"
        if self.read_in:
            return f"{self.var} read in {self.read_in} of {runs}"
        if self.copied_in:
            return (
                f"{self.var} never read by name in {runs}, but the environment was copied whole "
                f"(at {self.copied_at[0]}) in {self.copied_in}: it may have been read from the copy"
            )
        return f"{self.var} never read by a Python process of the target in {runs}{self.did_you_mean()}"

    def short(self) -> str:
        """The report row's words for a variable never read: ``APP_LOKC never read; did you mean APP_LOCK?``"""
        text = f"`{self.var}` never read"
        if self.similar:
            text += "; did you mean " + " or ".join(f"`{n}`" for n in self.similar) + "?"
        return text

    def did_you_mean(self) -> str:
        return f"; did you mean {' or '.join(self.similar)}?" if self.similar else ""

    def record(self) -> dict:
        """For results.json."""
        return {
            "var": self.var,
            "tracked_runs": self.tracked_runs,
            "tracked_runs_with_result": self.tracked_results,
            "read_in_runs": self.read_in,
            "copied_in_runs": self.copied_in,
            "copied_at": list(self.copied_at),
            "did_you_mean": list(self.similar),
        }


def reach_of(var: str, tallies: Iterable[ReadTally]) -> Reach:
    """The variable's reach over the runs of ``tallies`` (every arm that applied it)."""
    tracked = results = read_in = copied_in = 0
    names: set[str] = set()
    sites: dict[str, None] = {}
    for tally in tallies:
        tracked += tally.tracked_runs
        results += tally.tracked_results
        read_in += tally.reading_runs.get(var, 0)
        copied_in += tally.copying_runs
        names.update(tally.reading_runs)
        sites.update(tally.copied_at)
    return Reach(var, tracked, results, read_in, copied_in, tuple(sites), similar_names(var, names))


def similar_names(var: str, names: Iterable[str]) -> tuple[str, ...]:
    """The read names that may be what ``var`` meant, closest first."""
    close = [n for n in names if near(var, n)]
    close.sort(key=lambda n: (-difflib.SequenceMatcher(None, var.upper(), n.upper()).ratio(), n))
    return tuple(close[:SUGGESTIONS])


def near(a: str, b: str) -> bool:
    """Within one deletion of each other on each side, case ignored (the hook's test): a swap,
    a slip, a missing or extra letter, a lower-case spelling."""
    if a == b or min(len(a), len(b)) < NEAR_MIN_LENGTH:
        return False
    return not _deletions(a).isdisjoint(_deletions(b))


def _deletions(name: str) -> set[str]:
    name = name.upper()
    return {name} | {name[:i] + name[i + 1 :] for i in range(len(name))}


def applied_verdict(
    verdict: Verdict, reach: Reach | None, effect_seen: bool
) -> tuple[Verdict, str]:
    """The arm's verdict once its variable's reach is known, and the note that says why.

    ``effect_seen``: the arm's own test saw a difference (see the module doc); the verdict
    then stands, and an unread variable is only noted."""
    if reach is None:
        return verdict, ""
    if verdict in RELABELLED and (reach.tracked_results == 0 or reach.copied_in):
        return verdict, f"{reach.line()}: {UNSEEN_REACH}"  # the verdict may be a change never made
    if not reach.never_read:
        return verdict, ""
    if verdict in RELABELLED and not effect_seen:
        return Verdict.NOT_APPLIED, f"{reach.line()} ({ALONE}{verdict.value})"
    if verdict is Verdict.CANNOT_REPRODUCE:
        return verdict, ""
    if verdict in RELABELLED:
        return verdict, (
            f"{reach.line()}, yet its own test sees a difference from the baseline: "
            f"something the tracker cannot see may read it ({UNSEEN})"
        )
    return (
        verdict,
        f"{reach.line()}: the effect shows that something the tracker cannot see reads it ({UNSEEN})",
    )
