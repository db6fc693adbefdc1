"""Show a study's progress: a live rich table on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from heisenbisect.records import Config, Outcome

if TYPE_CHECKING:  # rich loads only for a live table: `--plain` starts its first trial without it
    from rich.console import Console
    from rich.table import Table

# (config label, runs done, failed runs, verdict or None) for every config of the study
Snapshot = Callable[[], Iterable[tuple[str, int, int, str | None]]]
DONE = "done"  # a snapshot row that sums up decided arms rather than being one
Notes = Callable[[], list[str]]  # lines under the table: what runs now besides trials (a build)


def short_key(key: str, shown: int = 3) -> str:
    """A config key that stays one readable line when a group sets hundreds of factors."""
    parts = key.split(",")
    if len(parts) <= shown:
        return key
    return f"{len(parts)} changes ({','.join(parts[:shown])},...)"


class PlainProgress:
    """One line per finished trial, for logs and pipes, and one line per verdict the moment it is
    decided (or changes: a claim the grown Holm family withdrew), read from the study's ``snapshot``."""

    def __init__(self, stream=None, snapshot: Snapshot | None = None):
        self._stream = (
            stream or sys.stderr
        )  # looked up now, not at import: stderr may have been replaced since
        self._done = 0
        self._snapshot = snapshot
        self._verdicts: dict[str, str | None] = {}

    def update(self, in_flight: Counter[Config], last: Outcome | None) -> None:
        if last is None:
            return
        self._done += 1
        counts = f"{last.failures}/{last.total} failed" if last.total else last.detail
        print(
            f"[{self._done}] {short_key(last.config_key)} #{last.index}: {last.status.value} {counts} "
            f"({last.duration_s:.1f}s); running {sum(in_flight.values())}",
            file=self._stream,
            flush=True,
        )
        self._print_verdicts()

    def _print_verdicts(self) -> None:
        if self._snapshot is None:
            return
        for label, runs, failed, verdict in self._snapshot():
            if verdict == DONE or self._verdicts.get(label) == verdict:
                continue
            if verdict is not None or self._verdicts.get(label) is not None:
                shown = verdict or "reopened (the grown Holm family needs more runs)"
                print(
                    f"verdict so far: {short_key(label)}: {shown} ({failed} of {runs} runs failed)",
                    file=self._stream,
                    flush=True,
                )
            self._verdicts[label] = verdict

    def close(self) -> None:
        pass


class LiveProgress:
    """A table of every config: runs done, failed, running now, verdict so far."""

    def __init__(
        self, title: str, snapshot: Snapshot, console: Console, notes: Notes | None = None
    ):
        self._title = title
        self._snapshot = snapshot
        self._notes = notes
        self._started = time.monotonic()
        self._done = 0
        # when each config's trials started running (kept while any of them runs): the caption
        # shows how long, so a trial that hangs is seen hanging, not as a frozen table
        self._running_since: dict[str, float] = {}
        from rich.live import Live

        self._live = Live(
            self._render(Counter()), console=console, refresh_per_second=4, transient=False
        )
        self._live.start()

    def update(self, in_flight: Counter[Config], last: Outcome | None) -> None:
        if last is not None:
            self._done += 1
        now = time.monotonic()
        running = {config.key for config, n in in_flight.items() if n}
        self._running_since = {key: self._running_since.get(key, now) for key in sorted(running)}
        self._live.update(
            self._render(in_flight)
        )  # here, not in rich's thread: the snapshot reads the strategy

    def _render(self, in_flight: Counter[Config]) -> Table:
        from rich.table import Table

        running = {config.key: n for config, n in in_flight.items()}
        elapsed = time.monotonic() - self._started
        table = Table(title=f"{self._title}: {self._done} trials done, {elapsed:.0f}s")
        for column in ("config", "runs", "failed", "running", "verdict"):
            table.add_column(column, justify="left" if column in ("config", "verdict") else "right")
        for label, runs, failed, verdict in self._snapshot():
            table.add_row(
                label, str(runs), str(failed), str(running.get(label, 0) or ""), verdict or "…"
            )
        notes = running_lines(self._running_since, time.monotonic())
        if self._notes is not None:
            notes += self._notes()
        if notes:
            table.caption = "\n".join(notes)
        return table

    def close(self) -> None:
        self._live.stop()


def running_lines(since: dict[str, float], now: float) -> list[str]:
    """``running CONFIG: 42s`` for each config with a trial running, the longest first."""
    return [
        f"running {_running_label(key)}: {now - start:.0f}s"
        for key, start in sorted(since.items(), key=lambda item: item[1])
    ]


def _running_label(key: str) -> str:
    """A config key short enough for the caption: a commit as its first 10 hex digits."""
    head, at, commit = key.rpartition(",@")
    return f"{short_key(head)} @{commit[:10]}" if at else short_key(key)


def make_progress(
    title: str,
    snapshot: Snapshot,
    plain: bool = False,
    notes: Notes | None = None,
    verdicts: bool = False,
) -> PlainProgress | LiveProgress:
    """``verdicts``: the snapshot's last column holds verdicts (screening), which plain lines print
    as they are decided; elsewhere it holds estimates that change with every trial."""
    if plain or not (console := _console()).is_terminal:
        return PlainProgress(snapshot=snapshot if verdicts else None)
    return LiveProgress(title, snapshot, console, notes)


def _console() -> Console:
    from rich.console import Console

    return Console(stderr=True)
