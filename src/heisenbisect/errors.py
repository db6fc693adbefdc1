"""One root exception for everything a user can cause; `cli.main` prints it alone, exit 2."""

from __future__ import annotations


class HeisenbisectError(Exception):
    """A problem the user can fix (bad spec, bad ref, changed spec): printed without traceback."""

    exit_code = 2


class SpecError(HeisenbisectError):
    """The hypotheses file is invalid.

    Holds every problem of the file at once, each formatted as
    ``file:line:col: path.to.field: what is wrong, got VALUE``.
    Common causes: a misspelt key (the message suggests the closest one), a level
    list with fewer than two entries, a factor name used twice, YAML indentation.
    """

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class DiskFullError(HeisenbisectError):
    """No room to write the study's record: every finished trial is kept, and the same command
    resumes once there is room (the command line prints it)."""


class StoreMismatchError(HeisenbisectError):
    """The store holds trials of a different spec; rerun with ``--fresh`` to start over."""


class InfrastructureError(Exception):
    """Broken infrastructure (not the target): a runner could not run a trial at all."""
