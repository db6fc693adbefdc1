"""The report's cautions beside its verdicts: "Load." when they may depend on how busy the
machine was, "Commits." when they pool runs at several commits of the target. Whether either
applies is decided in `decide.cautions`; this module only words it."""

from __future__ import annotations

from heisenbisect.decide.cautions import Cautions
from heisenbisect.user_text import code


def markdown(cautions: Cautions | None) -> str | None:
    """The cautions as paragraphs of markdown; None when there is none."""
    if cautions is None:
        return None
    notes = [load_line(cautions), commits_line(cautions)]
    return "\n\n".join(note for note in notes if note) or None


def load_line(cautions: Cautions) -> str | None:
    """The one line when the verdicts may depend on load."""
    reasons = [
        f"{code(change)} was {code(was)} in an earlier report and is {code(now)} now"
        for change, was, now in cautions.changed
    ]
    if moved := cautions.load_moved:
        cpus = cautions.cpus
        reasons.append(
            f"the load besides this study's trials moved from {moved[0]:.2f} to {moved[1]:.2f} during it "
            f"(1-minute load average{f', {cpus} CPUs' if cpus else ''})"
        )
    if not reasons:
        return None
    return (
        f"**Load.** The verdicts of reducers and decoys may depend on load: {'; '.join(reasons)}."
    )


def commits_line(cautions: Cautions) -> str | None:
    """One line when the study pooled runs made at different commits of the target: its verdicts
    then judge a mixture, not one version of the code."""
    if len(cautions.commits) < 2:
        return None
    each = ", ".join(f"`{_short(commit)}` ({runs_text(n)})" for commit, n in cautions.commits)
    return (
        f"**Commits.** This study's runs started at {len(cautions.commits)} commits of the target's repository "
        f"({each}): the verdicts pool trials of different code. Rerun with `--fresh` at one commit to judge "
        "that one."
    )


def _short(commit: str) -> str:
    """A commit's short form, keeping the mark of a working tree with uncommitted changes (without
    it, the same commit clean and dirty read as one commit listed twice)."""
    dirty = "+dirty" if commit.endswith("+dirty") else ""
    return commit[:12] + dirty


def runs_text(n: int) -> str:
    return f"{n} run{'s' if n != 1 else ''} of the study"
