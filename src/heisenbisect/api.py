"""The Python API: run a study from a script or a notebook and get its answer as an object.

``heisenbisect.run(path)`` is ``bisect run path``: the same study (`studies.screening`), the
same store, resume, report and exit code, returned as a `StudyResult` instead of printed;
``heisenbisect.commits(path)`` is ``bisect commits path`` (`CommitsResult`) and
``heisenbisect.amplify(path)`` is ``bisect amplify path`` (`AmplifyResult`). This face only
checks the arguments and calls the study; the CLI's commands call the same studies. Bad input
(a spec, an option, a target that cannot run, a store of another spec) raises
`heisenbisect.HeisenbisectError` (`SpecError` for the spec), which the CLI prints as its one
line with exit 2; Ctrl-C (or SIGTERM under the CLI) raises `StudyInterrupted`, a
`KeyboardInterrupt`, after keeping every finished trial. docs/api.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from heisenbisect.errors import HeisenbisectError
from heisenbisect.runners.registry import checked
from heisenbisect.studies.amplify.result import AmplifyResult, MeasuredSettings
from heisenbisect.studies.amplify.study import amplify_study
from heisenbisect.studies.commits.result import CommitsResult
from heisenbisect.studies.commits.study import bisect_commits
from heisenbisect.studies.options import Options, StudyInterrupted
from heisenbisect.studies.screening import screen
from heisenbisect.studies.screening_result import ArmVerdict, StudyResult

__all__ = [
    "run",
    "commits",
    "amplify",
    "StudyResult",
    "ArmVerdict",
    "CommitsResult",
    "AmplifyResult",
    "MeasuredSettings",
    "StudyInterrupted",
]


def run(
    spec: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    fresh: bool = False,
    parallel: int | None = None,
    runner: str | None = None,
    address: str | None = None,
) -> StudyResult:
    """Screen the factors of the hypotheses file ``spec`` (one at a time or in groups, as its
    ``statistics.strategy`` says), resuming from its store; write the report; return the answer.

    ``out``, ``fresh``, ``parallel``, ``runner`` and ``address`` are ``bisect run``'s options.
    """
    return screen(_options(spec, out, fresh, parallel, runner, address))


def commits(
    spec: str | os.PathLike,
    *,
    config: Sequence[str] = (),
    out: str | os.PathLike | None = None,
    fresh: bool = False,
    parallel: int | None = None,
    runner: str | None = None,
    address: str | None = None,
) -> CommitsResult:
    """Bisect the spec's commit range with a flaky signal, as ``bisect commits`` does; ``config``
    is its ``--config FACTOR=LEVEL`` list (default: every factor at its baseline)."""
    if isinstance(config, str):
        raise HeisenbisectError(
            f"config: expected a list of 'FACTOR=LEVEL' strings, got the string {config!r}"
        )
    return bisect_commits(_options(spec, out, fresh, parallel, runner, address), list(config))


def amplify(
    spec: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    fresh: bool = False,
    parallel: int | None = None,
    runner: str | None = None,
    address: str | None = None,
) -> AmplifyResult:
    """Search the spec's ``amplify.knobs`` for the most evidence per second, confirm the best
    against the current settings and write amplified.yaml when confirmed, as ``bisect amplify``
    does, resuming from its stores; the keyword arguments are its options."""
    return amplify_study(_options(spec, out, fresh, parallel, runner, address))


def _options(
    spec: str | os.PathLike,
    out: str | os.PathLike | None,
    fresh: bool,
    parallel: int | None,
    runner: str | None,
    address: str | None,
) -> Options:
    """Checked arguments of a Python call; a bad one raises `HeisenbisectError` naming it."""
    if not isinstance(spec, (str, os.PathLike)):
        raise HeisenbisectError(
            f"spec: expected the path of a hypotheses file, got {type(spec).__name__}"
        )
    if out is not None and not isinstance(out, (str, os.PathLike)):
        raise HeisenbisectError(f"out: expected a folder's path, got {type(out).__name__}")
    if address is not None and not isinstance(address, str):
        raise HeisenbisectError(
            f"address: expected a Ray address such as 'ray://host:10001', got {address!r}"
        )
    if parallel is not None and (
        isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1
    ):
        raise HeisenbisectError(
            f"parallel: expected a whole number of trials at once, 1 or more, got {parallel!r}"
        )
    if runner is not None:
        checked(runner, "runner")
    return Options(
        os.fspath(spec),
        None if out is None else os.fspath(out),
        bool(fresh),
        parallel,
        runner,
        address,
    )
