"""The server `TrialTarget`: a server per config, of any stack (`stack`), a stress workload per trial.

A trial's config reaches the server as environment variables (``env`` factors) and
launch arguments (``arg`` factors, appended to ``server_args``). One launch serves up to
``trials_per_launch`` trials of the same config, one trial at a time; a launch costs
minutes (weights, CUDA graphs), a trial about one. The trial's outcome is the number of
corrupted sessions out of the sessions that ran without an infrastructure error, plus the
side signals the spec asks for (bad logprobs, matching server-log lines; `log_signals`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from heisenbisect.checks.log_signals import LogSignal, count_signals, signal_line
from heisenbisect.errors import HeisenbisectError
from heisenbisect.records import Outcome, Trial, TrialStatus
from heisenbisect.redaction import Redactor, argv_secrets, env_secrets
from heisenbisect.stacks.base import Stack
from heisenbisect.targets.base import TrialTarget
from heisenbisect.targets.openai.stress import run_stress
from heisenbisect.targets.openai.workload import (
    StressCancelled,
    StressResult,
    StressSettings,
    StressTimeout,
)
from heisenbisect.targets.protocol import (
    NEVER_RAN,
    merged_environment,
    never_ran_reason,
    trial_outcome,
)
from heisenbisect.targets.server.launch_flags import SHARED_PROBE, unknown_flags
from heisenbisect.targets.server.overridden import OVERRIDDEN
from heisenbisect.targets.server.pool import Launch, ServerPool, pool_for
from heisenbisect.targets.server.process import Readiness, ServerProcess
from heisenbisect.user_text import capped

# a server runs one config's env and args, in one folder, at one commit (worktree paths are reused)
ServerKey = tuple[tuple[tuple[str, str | None], ...], tuple[str, ...], str | None, str | None]


class ServerTarget(TrialTarget):
    """Runs trials against servers it launches, reuses and tears down itself.

    ``launcher`` is the command before the stack's launch template (its own, as
    ``vllm serve``, or another; tests pass the fake server). The process
    environment (``CUDA_VISIBLE_DEVICES`` included) passes through to the server,
    overlaid by ``env`` and then by the trial's env, where None unsets a variable.
    Kept servers live in a pool shared by all copies of this target in the process
    (see `pool`); one idle longer than ``idle_timeout_s`` is stopped.
    """

    keeps_state: ClassVar[bool] = True  # servers are kept across a config's trials
    secret_names: tuple[str, ...] = ()  # ``spec.secrets``: more names whose values are masked

    def __init__(
        self,
        model: str,
        *,
        stack: Stack,
        launcher: tuple[str, ...] = (),
        server_args: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
        log_signals: tuple[LogSignal, ...] = (),
        startup_timeout_s: float = 1800.0,
        trials_per_launch: int = 1,
        workload: StressSettings = StressSettings(),
        trial_timeout_s: float = 600.0,
        crashes_count: bool = False,
        cwd: str | None = None,
        stop_grace_s: float = 10.0,
        poll_s: float = 1.0,
        idle_timeout_s: float = 600.0,
    ):
        self.model = model
        self.stack = stack
        self.log_signals = tuple(log_signals)
        self.server_args = tuple(server_args)
        self.env = dict(env or {})
        self.launcher = tuple(launcher)
        self.startup_timeout_s = startup_timeout_s
        self.trials_per_launch = trials_per_launch
        self.workload = workload
        self.trial_timeout_s = trial_timeout_s
        self.crashes_count = crashes_count
        self.cwd = cwd
        self.stop_grace_s = stop_grace_s
        self.poll_s = poll_s
        self.idle_timeout_s = idle_timeout_s
        self._init_state()

    def _init_state(self) -> None:
        self._pool: ServerPool = pool_for(
            self.fingerprint(), self.stop_grace_s, self.idle_timeout_s
        )
        self._probe = SHARED_PROBE

    def fingerprint(self) -> str:
        """Equal for copies of this target (and for targets configured alike)."""
        text = repr(
            (
                self.stack,
                self.model,
                self.server_args,
                sorted(self.env.items()),
                self.launcher,
                self.cwd,
                self.trials_per_launch,
                self.stop_grace_s,
                self.idle_timeout_s,
            )
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in ("_pool", "_probe"):
            state.pop(name)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_state()

    # ------------------------------------------------------------------ contract

    def execute(self, trial: Trial, log_path: Path, cancelled: threading.Event) -> Outcome:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        secrets = Redacted.secrets_of(
            [*self.launcher, *self.server_args, *trial.args],
            {**os.environ, **self.env, **trial.env},
            self.workload.api_key,
            self.secret_names,
        )
        with open(log_path, "w", encoding="utf-8") as handle:
            status, detail, ran = self._execute(
                trial, log_path, Redacted(handle, secrets), cancelled
            )
        detail = Redacted.text(detail, secrets)
        duration = time.monotonic() - started
        if ran is None:
            return _outcome(trial, status, log_path, duration, detail)
        result, signals, launch_metrics = ran
        metrics = {
            **result.metrics(),
            **launch_metrics,
            **{f"signal_{k}": float(v) for k, v in signals.items()},
        }
        failures, total = result.corrupted, result.total - result.errors
        if self.crashes_count:
            failures, total = failures + result.errors, result.total
        if total == 0:
            first = next((s.detail for s in result.kept), "")
            detail = "; ".join(
                filter(None, (f"every session failed with an error, e.g. {first}", detail))
            )
            return _outcome(trial, TrialStatus.ERROR, log_path, duration, detail, metrics)
        # a matching log line is one failure of its own class, at most one per session not already failed
        failures = min(total, failures + sum(signals.values()))
        tally = " ".join(filter(None, (result.tally_line(), signal_line(signals))))
        return trial_outcome(
            trial,
            TrialStatus.OK,
            failures=failures,
            total=total,
            metrics=metrics,
            duration_s=duration,
            log_path=log_path,
            detail="; ".join(filter(None, (tally, detail))),
        )

    def close(self) -> None:
        self._pool.close()

    # ------------------------------------------------------------------ steps

    def _execute(self, trial: Trial, log_path: Path, log, cancelled: threading.Event):
        env = self.server_environment(trial)
        cwd = trial.workdir or self.cwd
        args = [*self.server_args, *trial.args]
        log.write(f"trial {trial.trial_id} config {trial.config.key} seed {trial.seed}\n")
        log.write(
            f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', '(unset)')} "
            f"PYTHONPATH={env.get('PYTHONPATH', '(unset)')}\n"
        )
        log.flush()
        if self.stack.help_args is not None:
            probe = self._probe.flags(
                self.launcher, env, cwd, trial.config.commit, self.stack.help_args
            )
            if probe.error:
                log.write(probe.error + "\n")
                if probe.never_ran:  # the study stops at once (`studies.guard`)
                    return TrialStatus.ERROR, NEVER_RAN + probe.never_ran, None
                return TrialStatus.ERROR, f"cannot read the server's flags: {probe.error}", None
            unknown = unknown_flags(args, probe.flags)
            if unknown:
                message = (
                    f"this {self.stack.title} does not know {', '.join(unknown)}: config untestable"
                )
                log.write(message + "\n")
                return TrialStatus.SKIP, message, None
        if overridden := OVERRIDDEN.get((self.fingerprint(), self._server_key(trial, args, cwd))):
            log.write(overridden + " (found at an earlier launch of this config)\n")
            return TrialStatus.SKIP, overridden, None
        launch, failure = self._acquire(trial, args, env, cwd, log, cancelled)
        if failure:
            return (*failure, None)
        server = launch.server
        offset = server.log_size()
        settings = replace(
            self.workload,
            seed=trial.seed,
            api_key=api_key_of(args) or self.workload.api_key,
            model=self.model if self.stack.names_model and self.model else self.workload.model,
        )
        log.write(
            f"server {server.url} pid {server.proc.pid}; trial {launch.trials + 1} "
            f"of at most {self.trials_per_launch} on this launch\n"
        )
        log.flush()
        launch_metrics = launch.metrics() if self.trials_per_launch > 1 else {}
        died = finished = False
        server_log = ""
        try:
            result = run_stress(
                server.url,
                settings,
                cancelled,
                deadline_s=self.trial_timeout_s,
                reference_book=launch.reference,
            )
            finished, died = True, not server.alive()
        except StressCancelled:
            return TrialStatus.ERROR, "cancelled", None
        except StressTimeout as exc:
            return TrialStatus.TIMEOUT, str(exc), None
        except HeisenbisectError as exc:
            return TrialStatus.ERROR, str(exc), None
        finally:
            server_log = _copy_server_log(server, offset, log, "during this trial")
            self._release(launch, keep=finished and not died)
        _write_sessions(result, log, settings, evidence_path(log_path))
        signals = count_signals(self.log_signals, server_log)
        if signals:
            log.write(f"server-log signals during this trial: {signal_line(signals)}\n")
        if died:
            log.write("the server died during the trial (its log is above)\n")
            return (
                TrialStatus.OK,
                "the server died during the trial",
                (result, signals, launch_metrics),
            )
        return TrialStatus.OK, "", (result, signals, launch_metrics)

    def server_environment(self, trial: Trial) -> dict[str, str]:
        """The server's environment: this process's, then the target's, then the trial's."""
        env = merged_environment(trial.env, {**os.environ, **self.env})
        if not trial.workdir or "PYTHONPATH" in trial.env:
            return env
        for folder in self.stack.source_folders:
            root = Path(trial.workdir, folder)
            if (root / self.stack.package).is_dir():
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (str(root), env.get("PYTHONPATH")) if p
                )
                break
        return env

    @staticmethod
    def _server_key(trial: Trial, args: list[str], cwd: str | None) -> ServerKey:
        return (tuple(sorted(trial.env.items())), tuple(args), cwd, trial.config.commit)

    def _acquire(self, trial, args, env, cwd, log, cancelled):
        """A ready server for this trial's config: an idle one, or a fresh launch whose effective
        arguments are the ones it was launched with (the stack's read-back, if it has one)."""
        key = self._server_key(trial, args, cwd)
        launch = self._pool.take(key)
        if launch is not None and launch.server.alive():
            return launch, None
        if launch is not None:  # died while idle
            self._pool.release(launch, keep=False)
        try:
            server = ServerProcess.start(self.stack, self.launcher, self.model, args, env, cwd)
        except OSError as exc:
            command = " ".join(self.launcher or self.stack.launch[:1])
            log.write(f"cannot start {command}: {exc}\n")
            return None, (TrialStatus.ERROR, f"{NEVER_RAN}cannot start the server {command}: {exc}")
        launch = Launch(server, key)
        self._pool.add(launch)
        log.write(f"launching: {' '.join(server.argv)}\n")
        log.flush()
        readiness = server.wait_ready(self.startup_timeout_s, cancelled, self.poll_s)
        _copy_server_log(server, 0, log, "startup")
        if readiness is Readiness.READY:
            log.write(f"server ready after {time.monotonic() - server.started:.1f}s\n")
            if self.stack.read_back and (overridden := self._overridden(server, args, log)):
                self._release(launch, keep=False)
                OVERRIDDEN.add((self.fingerprint(), key), overridden)
                return None, (TrialStatus.SKIP, overridden)
            return launch, None
        log_tail = server.log_tail()
        self._release(launch, keep=False)
        log.write(f"server {readiness.value} during startup\n")
        if readiness is Readiness.CANCELLED:
            return None, (TrialStatus.ERROR, "cancelled")
        if readiness is Readiness.TIMEOUT:
            return None, (
                TrialStatus.TIMEOUT,
                f"server not ready after {self.startup_timeout_s:g}s; log tail:\n{log_tail}",
            )
        code = server.proc.returncode
        if code is not None and (reason := never_ran_reason(code, log_tail)):
            return None, (TrialStatus.ERROR, f"{NEVER_RAN}{' '.join(server.argv[:3])}: {reason}")
        return None, (
            TrialStatus.ERROR,
            f"server exited with {code} during startup; log tail:\n{log_tail}",
        )

    def _overridden(self, server: ServerProcess, args: list[str], log) -> str | None:
        """Why the fresh server does not run the config (an argument the stack overrode), or None."""
        read_back = self.stack.read_back
        found = (
            read_back(server.url, api_key_of(args) or self.workload.api_key, args)
            if read_back
            else None
        )
        if found is None:
            log.write("the server serves no effective arguments: they are not checked\n")
            return None
        if not found:
            return None
        message = (
            f"{self.stack.title} overrode "
            + "; ".join(o.text() for o in found)
            + ": config untestable"
        )
        log.write(message + "\n")
        return message

    def _release(self, launch: Launch, keep: bool) -> None:
        launch.trials += 1
        self._pool.release(launch, keep and launch.trials < self.trials_per_launch)

    def servers(self) -> list[ServerProcess]:
        """The servers alive now, idle or busy (for tests and diagnostics)."""
        return self._pool.servers()


def api_key_of(args: list[str] | tuple[str, ...]) -> str | None:
    """The key a server launched with ``--api-key K`` (or ``--api-key=K``) demands, if any."""
    for i, arg in enumerate(args):
        if arg == "--api-key" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--api-key="):
            return arg.split("=", 1)[1]
    return None


class Redacted:
    """A log that never holds a secret (`redaction`): a server may print its arguments (SGLang's
    ServerArgs), api_key included, the launch line names them and a target may print its
    environment; every write goes through here with each secret masked."""

    def __init__(self, handle, secrets: Redactor):
        self.handle = handle
        self.secrets = secrets

    @staticmethod
    def secrets_of(
        args: list[str],
        env: Mapping[str, str | None],
        api_key: str | None,
        names: tuple[str, ...] = (),
    ) -> Redactor:
        pairs = [*argv_secrets(args, names), *env_secrets(env, names)]
        keys = [("api-key", api_key_of(args) or ""), ("api-key", api_key or "")]
        return Redactor().with_known([*pairs, *keys], names)

    @staticmethod
    def text(text: str, secrets: Redactor) -> str:
        return secrets.text(text)

    def write(self, text: str) -> int:
        return self.handle.write(self.secrets.text(text))

    def flush(self) -> None:
        self.handle.flush()


def _copy_server_log(server: ServerProcess, offset: int, log, when: str) -> str:
    """What the server printed from ``offset`` on, into the trial's log; returned too."""
    try:
        with open(server.log_path, "rb") as handle:
            handle.seek(offset)
            text = handle.read(4 * 1024 * 1024).decode(errors="replace")
    except OSError:
        return ""
    if text:
        log.write(
            f"---- server log: {when} ----\n"
            + text
            + ("" if text.endswith("\n") else "\n")
            + "----\n"
        )
    return text


def evidence_path(log_path: Path) -> Path:
    """Where a trial's evidence goes: ``trial-0003.log`` -> ``trial-0003.evidence.json``."""
    return log_path.with_name(log_path.stem + ".evidence.json")


def _write_sessions(result: StressResult, log, settings: StressSettings, evidence: Path) -> None:
    """Server, settings, the kept bad sessions with their full request and response, and the tally, into
    the log (which a Ray worker ships back); the same as one JSON document beside it."""
    if result.server:
        server = result.server
        source = f" (from {server.version_source})" if server.version_source else ""
        log.write(
            f"stress against {server.url} model {capped(server.model)} version {server.version or 'unknown'}{source}\n"
        )
    log.write("workload " + json.dumps(settings.evidence(), ensure_ascii=False) + "\n")
    evidence.write_text(
        json.dumps(result.evidence(settings), indent=2, ensure_ascii=False), encoding="utf-8"
    )
    if any(s.evidence for s in result.kept):
        log.write(f"evidence (the first bad sessions' requests and responses): {evidence}\n")
    for session in result.kept:
        if session.detail:
            mode = " (streamed)" if session.stream else ""
            log.write(f"session {session.index}{mode}: {session.kind}: {session.detail}\n")
            if session.excerpt:
                log.write(f"    {session.excerpt}\n")
            if session.evidence:
                log.write(f"    evidence {json.dumps(session.evidence, ensure_ascii=False)}\n")
    log.write(result.tally_line() + "\n")


def _outcome(
    trial: Trial,
    status: TrialStatus,
    log_path: Path,
    duration: float,
    detail: str,
    metrics: Mapping[str, float] | None = None,
) -> Outcome:
    return trial_outcome(
        trial, status, metrics=metrics, duration_s=duration, log_path=log_path, detail=detail
    )
