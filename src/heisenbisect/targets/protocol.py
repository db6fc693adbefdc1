"""The trial protocol: what a target receives, and how its report turns into an `Outcome`.

A target gets its config as environment variables and arguments, plus
``HEISENBISECT_TRIAL_ID``, ``HEISENBISECT_SEED`` and ``HEISENBISECT_RESULT`` (a path).
It reports JSON ``{"failures": F, "total": N, "metrics": {...}}`` in that file or as a
line on stdout (the last such line counts, whatever follows it on stderr). How a run that
reports nothing is read depends on the target's ``result``: under ``json`` (a spec's
default) it is an error whatever its exit code, since silence is not "clean"; under
``exit`` its exit code counts as `git bisect run` reads one: 0 clean, 125 untestable, any
other 1..127 failed. In both, a run that died on a could-not-run traceback (an ImportError,
a SyntaxError: `targets.tracebacks`) is untestable, death by a signal is an error, and so
is a target that never ran (command not found, script missing): the interpreter's own
complaint is not a failed test. A result that breaks the protocol (a misspelt ``failures``
or ``total``, a result printed on stderr) is an error that says what was wrong; other top-level
numbers (``"tok_s": 12.5``, ``"overlap": true``) are kept as metrics and named in the outcome's
detail, so that the study warns once instead of losing every run.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from heisenbisect.records import EXTRA_RESULT_FIELDS, Outcome, Trial, TrialStatus
from heisenbisect.targets.tracebacks import last_traceback

SKIP_EXIT_CODE = 125
MAX_RESULT_BYTES = 1 << 20  # a result is a few numbers; a megabyte is a bug, not a report
MAX_RESULT_DEPTH = 32
MAX_COUNT = 2**63 - 1  # sqlite's INTEGER: a larger count is a target's bug, not a report
MAX_METRIC = int(float.fromhex("0x1.fffffffffffffp+1023"))  # the largest finite float
NEVER_RAN = "target did not run: "  # the detail of an outcome whose target never started its test
NO_RESULT = "no result line"  # the start of the detail of a `json` run that reported nothing
RESULT_KEYS = ("failures", "total", "metrics")
NEVER_RAN_TAIL_LINES = 20  # the interpreter's complaint is among the last lines of stderr
ResultMode = Literal["json", "exit"]


def trial_environment(
    trial: Trial, result_path: Path, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The full environment of a trial process: ``base`` plus the config's and the protocol's."""
    env = merged_environment(trial.env, base)
    env.update(protocol_variables(trial, result_path))
    return env


def protocol_variables(trial: Trial, result_path: Path | str) -> dict[str, str]:
    """The variables every trial gets besides its config's; reports show them in by-hand commands."""
    return {
        "HEISENBISECT_TRIAL_ID": trial.trial_id,
        "HEISENBISECT_SEED": str(trial.seed),
        "HEISENBISECT_RESULT": str(result_path),
    }


def merged_environment(
    changes: Mapping[str, str | None], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``base`` (default: this process's environment) with ``changes`` applied; None unsets."""
    env = dict(os.environ if base is None else base)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


@dataclass(frozen=True)
class Report:
    """What a target reported: a JSON result, or nothing (then the exit code decides)."""

    failures: int
    total: int
    metrics: Mapping[str, float]
    extras: tuple[str, ...] = ()  # top-level numbers beside the protocol's keys, kept as metrics


class ReportError(ValueError):
    """The target wrote a result that does not follow the protocol."""


@dataclass(frozen=True)
class Captured:
    """What a finished target left to read besides its result file.

    ``result_line``: the last stdout line that looks like a result object (raw bytes);
    ``trailing_line``: the last non-empty stdout line after it, if any; ``near_miss_line``:
    the last stdout line that is a result with its ``failures`` misspelt or missing;
    ``stderr_result_line``: the last such line (either kind) on stderr; ``stderr_tail``: the
    end of stderr, where an interpreter says why it could not start the test.
    """

    result_line: bytes | None = None
    trailing_line: str | None = None
    stderr_tail: str = ""
    near_miss_line: bytes | None = None
    stderr_result_line: bytes | None = None


def looks_like_result(line: bytes) -> bool:
    """A stdout line the protocol reads as a result: a JSON object that mentions failures."""
    stripped = line.strip()
    return stripped.startswith(b"{") and b'"failures"' in stripped


_KEY = re.compile(rb'"([^"\\]{1,40})"\s*:')
_FAILURE_WORDS = frozenset({"fail", "fails", "failed", "failing", "failure"})


def looks_like_near_miss(line: bytes) -> bool:
    """A stdout line meant as a result whose ``failures`` is missing or misspelt: a JSON
    object with a top-level ``total`` or a near-miss of ``failures`` but no ``failures``
    (``{"failed": 3, "total": 20}``). Cheap for the lines that cannot be one."""
    stripped = line.strip()
    if (
        not (stripped.startswith(b"{") and stripped.endswith(b"}"))
        or len(stripped) > MAX_RESULT_BYTES
    ):
        return False
    if not any(
        key == b"total" or misspelt_failures(key.decode(errors="replace"))
        for key in _KEY.findall(stripped)
    ):
        return False
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    if not isinstance(parsed, dict) or "failures" in parsed:
        return False
    return any(key == "total" or misspelt_failures(key) for key in parsed)


def misspelt_failures(key: str) -> bool:
    """``failed``, ``fails``, ``failure``, ``failing``, ``Failures``, ``faliures``,
    ``num_failures``, ``failed_runs``: meant as ``failures``, which it is not."""
    if key == "failures":
        return False
    folded = key.lower()
    return (
        folded in _FAILURE_WORDS
        or "failure" in folded
        or "failed" in folded
        or difflib.SequenceMatcher(None, folded, "failures").ratio() >= 0.8
    )


def parse_report(data: str | bytes, source: str = "result") -> Report:
    """Parse a result; any deviation from the protocol is a `ReportError` saying what it is."""
    if isinstance(data, bytes):
        if len(data) > MAX_RESULT_BYTES:
            raise ReportError(
                f"{source} is {len(data)} bytes, over the {MAX_RESULT_BYTES} byte limit"
            )
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ReportError(
                f"{source} is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})"
            ) from None
    elif len(data.encode("utf-8", "surrogatepass")) > MAX_RESULT_BYTES:
        raise ReportError(f"{source} is over the {MAX_RESULT_BYTES} byte limit")
    try:
        parsed = json.loads(data, parse_constant=_NonFinite)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source} is not JSON: {exc}") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ReportError(f"{source}: a number is out of range: {exc}") from None
    except RecursionError:
        raise ReportError(f"{source} is nested deeper than {MAX_RESULT_DEPTH} levels") from None
    _check_values(parsed, source, "", 0)
    extras: dict[str, float] = {}
    if isinstance(parsed, dict):
        extras = _extra_metrics(parsed, source)
    if not isinstance(parsed, dict) or "failures" not in parsed:
        raise ReportError(f"{source} JSON needs a 'failures' field")
    failures, total = parsed["failures"], parsed.get("total", 1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (failures, total)):
        raise ReportError(
            f"{source}: 'failures' and 'total' must be integers, got {failures!r}, {total!r}"
        )
    if total > MAX_COUNT:
        raise ReportError(
            f"{source}: 'total' is {_shorten(str(total))}, out of range (at most {MAX_COUNT})"
        )
    if not 0 <= failures <= total or total < 1:
        raise ReportError(
            f"{source}: need 0 <= failures <= total and total >= 1, got {failures}/{total}"
        )
    metrics = parsed.get("metrics") or {}
    if not isinstance(metrics, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in metrics.values()
    ):
        raise ReportError(f"{source}: 'metrics' must map names to numbers")
    for name, value in metrics.items():
        if isinstance(value, int) and abs(value) > MAX_METRIC:
            raise ReportError(
                f"{source}: metrics.{name} is {_shorten(str(value))}, out of range for a float"
            )
    kept = {str(k): float(v) for k, v in metrics.items()}
    extras = {name: value for name, value in extras.items() if name not in kept}
    return Report(failures, total, {**kept, **extras}, tuple(extras))


def _extra_metrics(parsed: dict, source: str) -> dict[str, float]:
    """The top-level numbers beside the protocol's keys, as metrics (a boolean as 0 or 1).

    A near miss of a missing key (``failed`` without ``failures``, ``totl`` without ``total``)
    is refused: read as an extra, a misspelt ``failures`` would turn a failed run into a clean
    one. So is an extra that is not a number: it cannot be a metric and may be a result meant
    otherwise."""
    unknown = [str(key) for key in parsed if key not in RESULT_KEYS]
    misspelt = [key for key in unknown if misspelt_failures(key)]
    if unknown and "failures" not in parsed:
        named = (misspelt or unknown)[0]
        raise ReportError(f"unknown key {named!r} in the {source}; expected 'failures'")
    for key in unknown:
        for wanted in RESULT_KEYS[1:]:
            if wanted not in parsed and _near(key, wanted):
                raise ReportError(f"unknown key {key!r} in the {source}; expected {wanted!r}")
    extras = {}
    for key in unknown:
        value = parsed[key]
        if not isinstance(value, (int, float)):
            raise ReportError(
                f"unknown key {key!r} in the {source} is not a number; expected 'failures', "
                "'total' and 'metrics' (other numbers are kept as metrics)"
            )
        if abs(value) > MAX_METRIC:
            raise ReportError(
                f"{source}: {key} is {_shorten(str(value))}, out of range for a float"
            )
        extras[key] = float(value)
    return extras


def _near(key: str, wanted: str) -> bool:
    return difflib.SequenceMatcher(None, key.lower(), wanted).ratio() >= 0.8


class _NonFinite(str):
    """JSON's NaN / Infinity / -Infinity, kept as a marker so the check can name its field."""


def _check_values(value: object, source: str, path: str, depth: int) -> None:
    """Refuse non-finite numbers (anywhere) and deep nesting, naming the offending field."""
    if depth > MAX_RESULT_DEPTH:
        raise ReportError(f"{source} is nested deeper than {MAX_RESULT_DEPTH} levels")
    where = path or "(top level)"
    if isinstance(value, _NonFinite):
        raise ReportError(f"{source}: {where} is {value}; every number must be finite")
    if isinstance(value, float) and not math.isfinite(value):
        raise ReportError(
            f"{source}: {where} is {value} (out of range); every number must be finite"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _check_values(item, source, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_values(item, source, f"{path}[{i}]", depth + 1)


def find_report(result_path: Path, captured: Captured) -> tuple[Report | None, str]:
    """The result file wins; else the last result line on stdout. Returns (report, warning)."""
    if result_path.exists() and not result_path.is_file():
        raise ReportError(
            f"the result path {result_path} was made into something other than a file"
        )
    if result_path.exists() and result_path.stat().st_size > 0:
        size = result_path.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise ReportError(
                f"result file is {size} bytes, over the {MAX_RESULT_BYTES} byte limit"
            )
        return parse_report(result_path.read_bytes(), "result file"), ""
    if captured.result_line is None:
        if captured.near_miss_line is not None:
            parse_report(captured.near_miss_line, "result line on stdout")  # raises, naming the key
            raise ReportError("result line on stdout JSON needs a 'failures' field")
        return None, ""
    report = parse_report(captured.result_line, "result line on stdout")
    warning = ""
    if captured.trailing_line is not None:
        warning = f"stdout went on after the result: {_shorten(captured.trailing_line)!r}"
    return report, warning


_NEVER_RAN_PATTERNS: tuple[tuple[frozenset[int], re.Pattern[str]], ...] = (
    (frozenset({127}), re.compile(r"(command )?not found|No such file or directory", re.I)),
    (frozenset({126}), re.compile(r"Permission denied|cannot execute|Is a directory", re.I)),
    (frozenset({2}), re.compile(r"can't open file|^unknown option -", re.M)),
    (
        frozenset({1}),
        re.compile(r"^\S*python[0-9.]*: (No module named|Error while finding module)", re.M),
    ),
)


def never_ran_reason(returncode: int, stderr_tail: str) -> str | None:
    """Why the target's test never started, when its exit and stderr say so (else None).

    The shell's 127 (command not found) and 126 (not executable), Python's 2 with "can't
    open file" and 1 with "python: No module named X": the interpreter complaining, not the
    test failing. The stderr line is required too: a test may exit 2 on its own account.
    """
    for codes, pattern in _NEVER_RAN_PATTERNS:
        if returncode in codes:
            for line in reversed(stderr_tail.splitlines()):
                if pattern.search(line):
                    return f"exit {returncode}: {_shorten(line.strip())}"
    return None


def is_never_ran(outcome: Outcome) -> bool:
    return outcome.status is TrialStatus.ERROR and outcome.detail.startswith(NEVER_RAN)


def outcome_from_exit(
    trial: Trial,
    returncode: int,
    result_path: Path,
    captured: Captured,
    *,
    crashes_count: bool,
    duration_s: float,
    log_path: Path | None,
    skip_exits: frozenset[int] = frozenset(),
    fail_exits: frozenset[int] = frozenset(),
    result: ResultMode = "exit",
    traceback_is_failure: bool = False,
) -> Outcome:
    """Turn a finished process into an outcome, following the protocol above.

    ``skip_exits`` / ``fail_exits`` remap exit codes (``bisect trial`` reads pytest's
    "could not test" codes as untestable); an explicit result still beats an exit code.
    ``result`` says how a run without a result is read; ``traceback_is_failure`` reads a
    could-not-run traceback as the exit code says, for a target whose failure is one.
    """

    def make(
        status: TrialStatus, failures: int = 0, total: int = 0, metrics=None, detail=""
    ) -> Outcome:
        return trial_outcome(
            trial,
            status,
            failures=failures,
            total=total,
            metrics=metrics,
            duration_s=duration_s,
            log_path=log_path,
            detail=detail,
        )

    if returncode == SKIP_EXIT_CODE or returncode in skip_exits:
        return make(TrialStatus.SKIP, detail=f"exit {returncode}: untestable")
    try:
        report, warning = find_report(result_path, captured)
    except ReportError as exc:
        return make(TrialStatus.ERROR, detail=str(exc))
    if report is not None:
        notes = [EXTRA_RESULT_FIELDS + ", ".join(report.extras)] if report.extras else []
        notes += [warning] if warning else []
        if returncode != 0:
            notes.append(f"then {exit_description(returncode)}")
        return make(TrialStatus.OK, report.failures, report.total, report.metrics, "; ".join(notes))
    if captured.stderr_result_line is not None:
        line = _shorten(captured.stderr_result_line.decode(errors="replace").strip())
        return make(
            TrialStatus.ERROR,
            detail=f"a result line was printed on stderr, not stdout: {line!r}; "
            "print it on stdout or write it to $HEISENBISECT_RESULT",
        )
    if reason := never_ran_reason(
        returncode, _last_lines(captured.stderr_tail, NEVER_RAN_TAIL_LINES)
    ):
        return make(TrialStatus.ERROR, detail=NEVER_RAN + reason)
    crash = last_traceback(captured.stderr_tail) if returncode != 0 else None
    if crash is not None and crash.could_not_run and not traceback_is_failure:
        return make(
            TrialStatus.SKIP,
            detail=f"could not run: {exit_description(returncode)} after {crash.exception}",
        )
    if returncode in fail_exits:
        return make(TrialStatus.OK, 1, 1, detail=f"exit {returncode}")
    if returncode < 0 or returncode > 127:
        detail = exit_description(returncode)
        if crashes_count and _died_by_signal(returncode):
            return make(TrialStatus.OK, 1, 1, detail=detail + " (crashes count as failures)")
        return make(TrialStatus.ERROR, detail=detail)
    if result == "json":
        return make(
            TrialStatus.ERROR,
            detail=no_result_detail(returncode, crash.exception if crash else None, log_path),
        )
    return make(TrialStatus.OK, 1 if returncode else 0, 1, detail=f"exit {returncode}")


def no_result_detail(returncode: int, exception: str | None, log_path: Path | None) -> str:
    """Why a `json` run is no evidence: it said nothing, and silence is not "clean"."""
    where = f" (log: {log_path})" if log_path else ""
    if exception is not None:
        return f"{NO_RESULT}: exit {returncode} after {exception}{where}"
    return (
        f"{NO_RESULT}: exit {returncode} without a JSON result on stdout or in $HEISENBISECT_RESULT{where}; "
        "if the exit code alone says whether the run failed, target.result: exit reads it instead"
    )


def _last_lines(text: str, count: int) -> str:
    return "\n".join(text.splitlines()[-count:])


def exit_description(returncode: int) -> str:
    """``killed by SIGSEGV`` for a signal, ``exit 3`` otherwise; 128+N names the shell's convention."""
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    if returncode > 128 and _valid_signal(returncode - 128):
        return f"exit {returncode} (128+{signal_name(returncode - 128)}: how a shell reports a death by signal)"
    if returncode > 127:
        return f"exit {returncode}: outside the protocol's 0-127, not evidence"
    return f"exit {returncode}"


def _died_by_signal(returncode: int) -> bool:
    return returncode < 0 or (returncode > 128 and _valid_signal(returncode - 128))


def _valid_signal(signum: int) -> bool:
    return 0 < signum < signal.NSIG


def trial_outcome(
    trial: Trial,
    status: TrialStatus,
    *,
    failures: int = 0,
    total: int = 0,
    metrics: Mapping[str, float] | None = None,
    duration_s: float = 0.0,
    log_path: Path | None = None,
    detail: str = "",
) -> Outcome:
    """The outcome of ``trial``, keyed as the store keys it."""
    return Outcome(
        trial_id=trial.trial_id,
        config_key=trial.config.key,
        index=trial.index,
        status=status,
        failures=failures,
        total=total,
        metrics=metrics or {},
        duration_s=duration_s,
        log_path=str(log_path) if log_path else None,
        detail=detail,
    )


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
