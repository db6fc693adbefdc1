"""Observations recorded by hand (``bisect commits mark``), kept in the bisection's own store.

A CI run, a colleague's report, a run on a machine the runner cannot reach: each enters as
outcomes of its commit beside the automated runs (`mark bad REV --runs 20 --failures 3` is 20
runs, 3 of them failed), so the posterior, `next` and a resumed automated search all use them.
The store is append-only: `undo` records that the last mark is withdrawn (its runs stay in the
store, and replays leave them out), and `log` prints every mark as the command that makes it.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass
from typing import Literal

from heisenbisect.decide.commits import CommitStrategy
from heisenbisect.errors import HeisenbisectError
from heisenbisect.git import CommitRange
from heisenbisect.records import Config, Outcome, TrialStatus, trial_id
from heisenbisect.store import Store

MARKS_KEY = "marks"  # the store's meta key: every mark, undone ones included, in order
MARK_ID = re.compile(r"^mark-(\d+)-")
# trial ids of culprit verification's runs (`studies.commits.verify`): fresh runs that judge the
# search's answer, so the search itself never reads them
VERIFY_PREFIX = "verify-"

Verb = Literal["good", "bad", "skip"]


@dataclass(frozen=True)
class Mark:
    """One ``bisect commits mark``: ``runs`` runs of ``sha``, ``failures`` of them failed."""

    number: int
    verb: str
    rev: str  # as the user wrote it
    sha: str
    runs: int
    failures: int
    undone: bool = False

    def command(self, prefix: str) -> str:
        """The command line that records this mark again."""
        counts = f" --runs {self.runs} --failures {self.failures}" if self.verb != "skip" else ""
        return f"{prefix} mark {self.verb} {self.sha}{counts}"


def counts_of(verb: Verb, runs: int | None, failures: int | None) -> tuple[int, int]:
    """(runs, failures) a mark records; bad input is a `HeisenbisectError` naming the option."""
    if verb == "skip":
        if runs is not None or failures is not None:
            raise HeisenbisectError(
                "mark skip: takes no --runs or --failures (the commit cannot be tested)"
            )
        return 1, 0
    if runs is not None and runs < 1:
        raise HeisenbisectError(f"--runs: must be at least 1, got {runs}")
    if failures is not None and failures < 0:
        raise HeisenbisectError(f"--failures: must be at least 0, got {failures}")
    if verb == "good":
        if failures:
            raise HeisenbisectError(
                f"--failures: a good mark records passing runs only, got {failures}; "
                "record runs with failures as: mark bad REV --runs N --failures K"
            )
        return runs or 1, 0
    failures = 1 if failures is None else failures
    runs = runs or max(failures, 1)
    if not 1 <= failures <= runs:
        raise HeisenbisectError(
            f"--failures: a bad mark needs 1 <= failures <= runs, got {failures} of {runs}"
        )
    return runs, failures


REPAIR = "bisect commits [FILE] log --repair"


def marks_of(store: Store) -> list[Mark]:
    """The marks log; one that does not parse, or holds a mark that cannot be (negative runs, an
    unknown verb), is a `HeisenbisectError` naming the store and the entry, never a guess."""
    marks, problem = parse_marks(store.meta(MARKS_KEY))
    if problem is not None:
        raise HeisenbisectError(
            f"{store.path}: the marks log is damaged at {problem}; `{REPAIR}` keeps the "
            f"{len(marks)} mark{'s' if len(marks) != 1 else ''} before it (their runs stay stored)"
        )
    return marks


def parse_marks(text: str | None) -> tuple[list[Mark], str | None]:
    """(the valid marks from the start of the log, where it first went wrong or None)."""
    decoder = json.JSONDecoder()
    text = text or "[]"
    at = _skip(text, 0)
    if not text.startswith("[", at):
        return [], "character 1 (not a JSON list)"
    at = _skip(text, at + 1)
    marks: list[Mark] = []
    while not text.startswith("]", at):
        where = f"entry {len(marks) + 1} (character {at + 1})"
        try:
            item, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            return marks, f"{where}: {exc.msg}"
        if (problem := _mark_problem(item, len(marks) + 1)) is not None:
            return marks, f"{where}: {problem}"
        marks.append(Mark(**item))
        at = _skip(text, at)
        if text.startswith(",", at):
            at = _skip(text, at + 1)
        elif not text.startswith("]", at):
            return marks, f"character {at + 1}: expected ',' or ']'"
    if text[at + 1 :].strip():
        return marks, f"character {at + 2}: text after the list"
    return marks, None


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


FIELDS = {"number": int, "verb": str, "rev": str, "sha": str, "runs": int, "failures": int}


def _mark_problem(item: object, number: int) -> str | None:
    """What makes ``item`` not the ``number``-th mark this module writes, or None."""
    if not isinstance(item, dict):
        return f"expected an object, got {type(item).__name__}"
    unknown = set(item) - set(FIELDS) - {"undone"}
    missing = set(FIELDS) - set(item)
    if unknown or missing:
        return f"fields {sorted(missing)} missing, {sorted(unknown)} unknown"
    for name, kind in FIELDS.items():
        if type(item[name]) is not kind:
            return f"{name} must be {kind.__name__}, got {item[name]!r}"
    if type(item.get("undone", False)) is not bool:
        return f"undone must be true or false, got {item['undone']!r}"
    if item["number"] != number:
        return f"number must be {number}, got {item['number']}"
    if not re.fullmatch(r"[0-9a-f]{40}", item["sha"]):
        return f"sha must be a full commit id, got {item['sha']!r}"
    verb, runs, failed = item["verb"], item["runs"], item["failures"]
    possible = {
        "skip": (runs, failed) == (1, 0),
        "good": runs >= 1 and failed == 0,
        "bad": 1 <= failed <= runs,
    }
    if verb not in possible:
        return f"verb must be good, bad or skip, got {verb!r}"
    if not possible[verb]:
        return f"impossible counts for a {verb} mark: {runs} runs, {failed} failed"
    return None


def repair(store: Store) -> tuple[int, int]:
    """Keep the valid start of a damaged marks log (the rest's runs stay stored, left out by
    `in_force`); return (marks kept, entries dropped, counted as marks the outcomes name)."""
    marks, problem = parse_marks(store.meta(MARKS_KEY))
    if problem is None:
        return len(marks), 0
    numbers = {int(n[1]) for _, o in store.outcomes() if (n := MARK_ID.match(o.trial_id))}
    _save(store, marks)
    return len(marks), len({n for n in numbers if n > len(marks)})


def _save(store: Store, marks: list[Mark]) -> None:
    store.set_meta(MARKS_KEY, json.dumps([asdict(m) for m in marks]))


def record_mark(
    store: Store,
    commit_range: CommitRange,
    base: Config,
    verb: Verb,
    rev: str,
    sha: str,
    runs: int,
    failures: int,
) -> Mark:
    """Store the mark's runs as outcomes of ``sha`` (a candidate of ``commit_range`` or its good
    end) under the bisection's ``base`` config; no replay of the store is needed for it."""
    if sha != commit_range.good.sha and sha not in {c.sha for c in commit_range.candidates}:
        raise HeisenbisectError(
            f"mark: {rev!r} ({sha[:10]}) is not a commit of the bisected range or its ends; "
            "marks count only there (`bisect commits log` lists the range)"
        )
    marks = marks_of(store)
    mark = Mark(len(marks) + 1, verb, rev, sha, runs, failures)
    config = Config(changes=base.changes, commit=sha)  # as `CommitStrategy.config_for` makes it
    first = max(store.used_indices(config.key), default=-1) + 1
    status = TrialStatus.SKIP if verb == "skip" else TrialStatus.OK
    for j in range(runs):
        index = first + j
        store.record(
            Outcome(
                trial_id=f"mark-{mark.number:04d}-{trial_id(config.key, index)}",
                config_key=config.key,
                index=index,
                status=status,
                failures=int(j < failures),
                total=1,
                detail=f"marked by hand: {mark.command('bisect commits')}",
            ),
            config,
        )
    _save(store, [*marks, mark])
    return mark


def undo_mark(store: Store) -> Mark | None:
    """Withdraw the last mark still in force; None when there is none. Its runs stay stored."""
    marks = marks_of(store)
    live = [m for m in marks if not m.undone]
    if not live:
        return None
    last = live[-1]
    _save(
        store,
        [Mark(**{**asdict(m), "undone": True}) if m.number == last.number else m for m in marks],
    )
    return last


def in_force(store: Store) -> list[tuple[Config, Outcome]]:
    """The store's outcomes in arrival order, less the runs of marks not in force: undone, or
    dropped from the log by `repair`."""
    live = {m.number for m in marks_of(store) if not m.undone}
    return [
        (c, o)
        for c, o in store.outcomes()
        if not ((n := MARK_ID.match(o.trial_id)) and int(n[1]) not in live)
    ]


def search_runs(store: Store) -> list[tuple[Config, Outcome]]:
    """`in_force` less the verification's runs: what the search (and its range check) reads."""
    return [(c, o) for c, o in in_force(store) if not o.trial_id.startswith(VERIFY_PREFIX)]


def verification_runs(store: Store) -> list[tuple[Config, Outcome]]:
    return [(c, o) for c, o in store.outcomes() if o.trial_id.startswith(VERIFY_PREFIX)]


def replay_without_undone(strategy: CommitStrategy, store: Store) -> int:
    """Feed `search_runs` to ``strategy``; return how many."""
    outcomes = search_runs(store)
    for config, outcome in outcomes:
        strategy.observe(config, outcome)
    return len(outcomes)


def log_lines(store: Store, prefix: str) -> list[str]:
    """Every mark as the command that records it (undone ones commented out), with how many
    automated runs the store holds beside them."""
    marks = marks_of(store)
    ids = [o.trial_id for _, o in store.outcomes()]
    verifying = sum(1 for t in ids if t.startswith(VERIFY_PREFIX))
    automated = sum(1 for t in ids if not MARK_ID.match(t)) - verifying
    also = f" and {verifying} verification runs" if verifying else ""
    lines = [f"# {automated} automated runs{also} in {shlex.quote(str(store.path))}"]
    for mark in marks:
        line = mark.command(prefix)
        lines.append(f"# undone: {line}" if mark.undone else line)
    return lines
