"""The generic target: run a command once per trial, following the trial protocol.

stdout and stderr come through two pipes, read as they arrive: a result line on stdout is
found wherever the target's (or CUDA's, or PyTorch's) stderr lines fall, and the trial's
log keeps both, labelled, each capped at its head and tail so a runaway target cannot fill
the disk. While the trial runs the log grows as the target prints (`live_log.LiveLog`:
``tail -f`` it); when it ends the log is rewritten to read::

    --- stdout (1234 bytes) ---
    ...
    --- stderr (56 bytes) ---
    ...
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

from heisenbisect.hypotheses.model import Spec
from heisenbisect.hypotheses.targets import CommandSection
from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.redaction import Redactor, argv_secrets, env_secrets
from heisenbisect.targets import env_reads
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.live_log import LiveLog
from heisenbisect.targets.process import kill_tree, start_process_group
from heisenbisect.targets.protocol import (
    MAX_RESULT_BYTES,
    Captured,
    ResultMode,
    looks_like_near_miss,
    looks_like_result,
    outcome_from_exit,
    trial_environment,
    trial_outcome,
)

WATCH_INTERVAL_S = 0.1
DRAIN_S = 2.0  # after the leader exits, how long a stray holder of its pipes may keep them open
CHUNK = 65536
LOG_HEAD_BYTES = 1 << 20  # per stream: the first and the last MiB are kept, the middle is cut
LOG_TAIL_BYTES = 1 << 20
STDERR_TAIL_LINES = 400  # enough for a deep import chain's traceback, which the protocol classifies


@dataclass(frozen=True)
class CommandTarget(TrialTarget):
    """Runs ``argv + trial.args`` in ``cwd`` with the trial's environment; kills it at ``timeout_s``.

    ``skip_exits`` / ``fail_exits``: exit codes read as untestable / failed besides the protocol's.
    ``result``: how a run that reports no result is read (`protocol.outcome_from_exit`); a
    spec's target defaults to ``json`` (`command_target`), ``bisect trial`` to ``exit``.
    ``watch_vars``: the env factors' variables; their reads by the trial's Python processes come
    back in the outcome's ``env_reads`` (`targets.env_reads`). Empty: nothing is tracked.
    """

    argv: tuple[str, ...]
    timeout_s: float
    cwd: str | None = None
    crashes_count: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    skip_exits: frozenset[int] = frozenset()
    fail_exits: frozenset[int] = frozenset()
    result: ResultMode = "exit"
    traceback_is_failure: bool = False
    watch_vars: tuple[str, ...] = ()
    secret_names: tuple[str, ...] = ()  # ``spec.secrets``, masked besides the secret-looking

    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome:
        log_path = log_path.resolve()  # the target runs elsewhere: hand it an absolute path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        if not self.watch_vars:
            return self._execute(trial, log_path, cancelled, None)
        reads = env_reads.reads_folder(log_path)
        outcome = self._execute(trial, log_path, cancelled, reads)
        return dataclasses.replace(outcome, env_reads=env_reads.collect(reads))

    def redactor(self, env: dict[str, str], args: tuple[str, ...]) -> Redactor:
        """What a trial's log and outcome must not hold: the secrets of its environment (the
        spec's and the inherited) and of its command line (`redaction`)."""
        names = self.secret_names
        pairs = [*env_secrets(env, names), *argv_secrets([*self.argv, *args], names)]
        return Redactor(names=names).with_known(pairs)

    def _execute(
        self, trial: Trial, log_path: Path, cancelled: threading.Event, reads: Path | None
    ) -> Outcome:
        result_path = log_path.with_suffix(".result.json")
        remove_leftover(result_path)
        env = trial_environment(trial, result_path)
        env.update(self.extra_env)
        if reads is not None:
            env.update(env_reads.tracking_environment(env, self.watch_vars, reads))
        secrets = self.redactor(env, trial.args)
        outcome = self._run(trial, log_path, cancelled, env, secrets, result_path)
        return dataclasses.replace(outcome, detail=secrets.text(outcome.detail))

    def _run(
        self,
        trial: Trial,
        log_path: Path,
        cancelled: threading.Event,
        env: dict[str, str],
        secrets: Redactor,
        result_path: Path,
    ) -> Outcome:
        live = LiveLog(log_path, secrets)
        started = time.monotonic()
        try:
            proc = start_process_group(
                [*self.argv, *trial.args],
                cwd=trial.workdir or self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            why = f"cannot start {self.argv[0]!r}: {exc}\n".encode()
            live.replace_with(lambda log: None if log.write(why) else None)
            return _outcome(trial, TrialStatus.ERROR, log_path, 0.0, f"cannot start: {exc}")
        out, err = (
            StreamCapture("stdout", live, scan_results=True),
            StreamCapture("stderr", live, scan_results=True),
        )
        try:
            ended = _collect(proc, {proc.stdout: out, proc.stderr: err}, self.timeout_s, cancelled)
        finally:
            live.close()
        duration = time.monotonic() - started

        def both_streams(log: BinaryIO) -> None:
            out.write_to(log)
            err.write_to(log)

        live.replace_with(both_streams)
        if ended == "timeout":
            return _outcome(
                trial, TrialStatus.TIMEOUT, log_path, duration, f"killed after {self.timeout_s:g}s"
            )
        if ended == "cancelled":
            return _outcome(trial, TrialStatus.ERROR, log_path, duration, "cancelled")
        return outcome_from_exit(
            trial,
            proc.returncode,
            result_path,
            out.captured(
                stderr_tail=err.tail_text(STDERR_TAIL_LINES),
                stderr_result_line=err.any_result_line(),
            ),
            crashes_count=self.crashes_count,
            duration_s=duration,
            log_path=log_path,
            skip_exits=self.skip_exits,
            fail_exits=self.fail_exits,
            result=self.result,
            traceback_is_failure=self.traceback_is_failure,
        )


def command_target(spec: Spec, spec_dir: Path) -> CommandTarget:
    """A spec's command target; a relative ``target.cwd`` is taken from the spec's folder.

    It watches its env factors' variables (`targets.env_reads`), so that a factor that never
    reached it is reported ``not_applied``, not taken for a decoy."""
    target = spec.target
    cwd = str((spec_dir / target.cwd).resolve()) if target.cwd else str(spec_dir.resolve())
    return CommandTarget(
        argv=tuple(with_this_python(target.argv)),
        timeout_s=target.timeout,
        cwd=cwd,
        crashes_count=target.crashes_count,
        result=target.result,
        traceback_is_failure=cast(CommandSection, target).traceback_is_failure,
        watch_vars=watched_variables(spec),
        secret_names=tuple(spec.secrets),
    )


def watched_variables(spec: Spec) -> tuple[str, ...]:
    """The variables the env factors set, each once."""
    return tuple(dict.fromkeys(f.env_var for f in spec.factors if f.kind == "env"))


def with_this_python(argv: list[str]) -> list[str]:
    """A bare ``python``/``python3`` means the interpreter running heisenbisect (its venv).

    Otherwise a target started from an unactivated virtualenv would meet a system Python
    without its packages, exit 1 on the ImportError, and count as a failure.
    """
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return argv


class StreamCapture:
    """One output stream: its first and last bytes for the log, and its result line.

    Lines are scanned as they arrive, so the last result line is found even when more than
    the kept tail follows it; so is the last line meant as a result with ``failures``
    misspelt (stdout), and a result printed on the wrong stream (stderr).
    """

    def __init__(self, name: str, live: LiveLog | None = None, scan_results: bool = False):
        self.name = name
        self.live = live  # where the head goes as it arrives
        self.scan_results = scan_results
        self.size = 0
        self.head = bytearray()
        self.tail = bytearray()
        self._partial = bytearray()  # the current line, up to a result's size limit
        self._partial_overflow = False
        self.result_line: bytes | None = None
        self.trailing_line: bytes | None = None
        self.near_miss_line: bytes | None = None

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        room = max(0, LOG_HEAD_BYTES - len(self.head))
        head_part, data_for_tail = data[:room], data[room:]
        if head_part:
            self.head += head_part
            if self.live is not None:
                self.live.write(self.name, head_part)
        if data_for_tail and self.live is not None and self.size - len(data) <= LOG_HEAD_BYTES:
            self.live.note(
                self.name,
                f"{self.name} went past {LOG_HEAD_BYTES} bytes; its last "
                f"{LOG_TAIL_BYTES} are added when the trial ends",
            )
        if data_for_tail:
            self.tail += data_for_tail
            if len(self.tail) > 2 * LOG_TAIL_BYTES:
                del self.tail[: len(self.tail) - LOG_TAIL_BYTES]
        if self.scan_results:
            self._scan(data)

    def _scan(self, data: bytes) -> None:
        *complete, rest = data.split(b"\n")
        for piece in complete:
            self._add_to_line(piece)
            self._end_line()
        self._add_to_line(rest)

    def _add_to_line(self, piece: bytes) -> None:
        if self._partial_overflow:
            return
        self._partial += piece
        if len(self._partial) > MAX_RESULT_BYTES + 1:
            # too long to be a valid result; keep its start so an oversized one is reported as such
            del self._partial[MAX_RESULT_BYTES + 1 :]
            self._partial_overflow = True

    def _end_line(self) -> None:
        line = bytes(self._partial)
        self._partial.clear()
        self._partial_overflow = False
        if not line.strip():
            return
        if looks_like_result(line):
            self.result_line, self.trailing_line = line, None
        elif self.result_line is not None:
            self.trailing_line = line
        elif looks_like_near_miss(line):
            self.near_miss_line = line

    def finish(self) -> None:
        if self._partial:
            self._end_line()

    def captured(self, stderr_tail: str, stderr_result_line: bytes | None = None) -> Captured:
        self.finish()
        trailing = (
            None
            if self.trailing_line is None
            else self.trailing_line[:400].decode(errors="replace").strip()
        )
        return Captured(
            self.result_line, trailing, stderr_tail, self.near_miss_line, stderr_result_line
        )

    def any_result_line(self) -> bytes | None:
        """The last line meant as a result, well-formed or not (for stderr, where none belongs)."""
        self.finish()
        return self.result_line or self.near_miss_line

    def tail_text(self, lines: int) -> str:
        kept = bytes(self.head[-LOG_TAIL_BYTES:]) + bytes(self.tail[-LOG_TAIL_BYTES:])
        return "\n".join(kept.decode(errors="replace").splitlines()[-lines:])

    def write_to(self, log) -> None:
        """This stream's part of the final log: its label, its head, a cut marker, its tail."""
        name = self.name
        log.write(f"--- {name} ({self.size} bytes) ---\n".encode())
        log.write(bytes(self.head))
        tail = bytes(self.tail[-LOG_TAIL_BYTES:])
        cut = self.size - len(self.head) - len(tail)
        if cut > 0:
            log.write(f"\n[heisenbisect: {cut} bytes of {name} cut here]\n".encode())
        log.write(tail)
        if self.size and not (tail or bytes(self.head)).endswith(b"\n"):
            log.write(b"\n")


def _collect(
    proc: subprocess.Popen, streams: dict, timeout_s: float, cancelled: threading.Event
) -> str:
    """Read both pipes until they close and the process ends; kill its whole tree on timeout or
    cancellation. Returns how it ended: ``exited``, ``timeout`` or ``cancelled``.

    Once the leader has exited, its group is killed (a lingering child is not kept) and any
    holder of the pipes that escaped it gets ``DRAIN_S`` before the pipes are abandoned.
    """
    selector = selectors.DefaultSelector()
    for pipe, capture in streams.items():
        selector.register(pipe, selectors.EVENT_READ, capture)
    deadline = time.monotonic() + timeout_s
    reason, stop_reading_at = "exited", None  # set once the tree was killed
    try:
        while selector.get_map() or proc.poll() is None:
            now = time.monotonic()
            if stop_reading_at is None:
                if cancelled.is_set() or now >= deadline:
                    reason = "cancelled" if cancelled.is_set() else "timeout"
                    kill_tree(proc)
                    stop_reading_at = time.monotonic() + DRAIN_S
                elif proc.poll() is not None:
                    kill_tree(
                        proc
                    )  # the leader is gone; a lingering grandchild in its group is not kept
                    stop_reading_at = time.monotonic() + DRAIN_S
            elif now >= stop_reading_at:
                break
            if not selector.get_map():
                try:
                    proc.wait(timeout=WATCH_INTERVAL_S)
                except subprocess.TimeoutExpired:
                    pass
                continue
            ready = selector.select(timeout=WATCH_INTERVAL_S)
            if not ready:  # quiet for a moment: a partial line held for redaction shows now
                for capture in streams.values():
                    if capture.live is not None:
                        capture.live.release_held()
            for key, _ in ready:
                data = os.read(key.fd, CHUNK)
                if data:
                    key.data.feed(data)
                else:
                    selector.unregister(key.fileobj)
    finally:
        selector.close()
        for pipe in streams:
            pipe.close()
    if stop_reading_at is None:
        kill_tree(proc)  # it closed its pipes, then exited: its group goes with it
    return reason


def remove_leftover(path: Path) -> None:
    """Clear a result path an earlier run of this trial left, even one a target made a folder."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _outcome(
    trial: Trial, status: TrialStatus, log_path: Path, duration: float, detail: str
) -> Outcome:
    return trial_outcome(trial, status, duration_s=duration, log_path=log_path, detail=detail)
