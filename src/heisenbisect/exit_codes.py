"""The exit codes of every `bisect` command, documented in README.md like pytest documents its own.

A script (or CI job, or `git bisect run` wrapper) must be able to tell "decided" from "ran but
could not decide" from "never tested anything" without parsing text.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    DECIDED = (
        0  # every question answered: all arms decided, a culprit found, an amplification confirmed
    )
    UNDECIDED = (
        1  # the study ran, but some answer is missing: inconclusive, or not_applied (fix the spec)
    )
    USAGE = 2  # bad input: the spec, the command line, a target that cannot run, a store in the way
    CANNOT_REPRODUCE = 3  # the baseline (or the bad end) never failed: nothing can be judged
    NO_VALID_RUNS = 4  # no trial produced a result: every one errored, was skipped or timed out


def signal_exit_code(signum: int) -> int:
    """A command stopped by a signal exits as a shell reports it: 128 + the signal's number."""
    return 128 + signum
