"""The report of a version bisection: ``versions.md`` and ``results.json``.

Rendered from a strategy rebuilt by replaying the store, never from a live run's memory; the
deciding is the commit bisection's (`decide.commits`), over versions instead of commits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from heisenbisect import __version__, machine
from heisenbisect.decide.commits import CommitStrategy, Result, State
from heisenbisect.decide.crashes import CrashedRuns
from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.verify import Verification
from heisenbisect.layout import VersionsPaths
from heisenbisect.records import Config
from heisenbisect.releases import VersionRange
from heisenbisect.reports import environment as environment_section
from heisenbisect.reports.commits import unconfirmed, verification_data, verification_line
from heisenbisect.reports.evidence import markdown_lines as evidence_lines
from heisenbisect.reports.tracebacks import warning_lines

HIDING = (
    "; it skips more often than the versions whose failures show, so its clean runs are not read "
    'as good: its skips may be the failure (docs/bisection.md, "Skips that may be the failure")'
)


@dataclass(frozen=True)
class VersionsReport:
    """What the report says beyond the strategy: the installation and each untestable version."""

    pins: tuple[str, ...] = ()
    untestable: dict[str, str] = field(default_factory=dict)  # version: why (install, import)
    verification: Verification | None = None  # the found culprit's, when one was found
    rerun: str = ""  # the command line that resumes the study
    refusal: str | None = None  # why the range was refused (exit 3): no culprit is named
    refusal_state: str | None = None  # does_not_fail or reversed


def headline(
    versions: VersionRange,
    result: Result,
    confidence: float,
    verification: Verification | None = None,
) -> str:
    """One sentence: what is known about the first bad version (one its fresh runs did not
    confirm is not called the culprit)."""
    cands = versions.candidates
    top = cands[result.culprit]
    if result.state is State.FOUND:
        named = f"{versions.package} {top} (posterior {result.probability:.3f})"
        if said := unconfirmed(named, verification):
            return said
        before = predecessor(versions, result.culprit)
        return f"culprit {named}; the last good version is {before}"
    if result.state is State.SKIPPED:
        names = ", ".join(cands[i] for i in result.group)
        return (
            f"the first bad version could be any of {names}: untestable versions keep them apart "
            f"(together {result.group_probability:.3f})"
        )
    reason = {
        State.BUDGET: f"budget spent after {result.trials} trials",
        State.EXHAUSTED: "no testable version left whose runs could tell more",
        State.CONTRADICTION: "the evidence is impossible under the failure rates",
        State.RUNNING: "not finished (interrupted)",
    }[result.state]
    return (
        f"undecided ({reason}): most probable {versions.package} {top} at "
        f"{result.probability:.3f}, below the {confidence:g} asked for"
    )


def predecessor(versions: VersionRange, index: int) -> str:
    """The version just before candidate ``index``: the previous candidate, or the good end."""
    return versions.candidates[index - 1] if index > 0 else versions.good


def write_report(
    paths: VersionsPaths,
    versions: VersionRange,
    strategy: CommitStrategy,
    crashed: list[CrashedRuns],
    evidence: Evidence,
    details: VersionsReport,
) -> None:
    """Write versions.md and results.json. With no valid run at all, no culprit is named."""
    paths.root.mkdir(parents=True, exist_ok=True)
    result = strategy.result()
    data = results(versions, strategy, result, details)
    data["refusal"] = details.refusal
    if details.refusal is not None:
        data |= {"state": details.refusal_state, "culprit": None, "predecessor": None}
        data |= {"candidate_set": None}
    elif details.verification is not None and not details.verification.verified:
        data |= {"state": "not_verified"}
    if evidence.no_valid_runs:
        data |= {"state": "no_valid_runs", "culprit": None, "predecessor": None}
        data |= {"candidate_set": None}
    paths.results.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    if evidence.no_valid_runs:
        text = "# Version bisection\n\n" + "\n".join(evidence_lines(evidence, paths.root))
    elif details.refusal is not None:
        text = refused_markdown(details.refusal, versions, strategy)
    else:
        text = markdown(versions, strategy, result, crashed, details)
        text += "\n" + "\n".join(evidence_lines(evidence, paths.root))
    text += "\n" + "\n".join(_reproduce(details))
    paths.report.write_text(text)


def results(
    versions: VersionRange, strategy: CommitStrategy, result: Result, details: VersionsReport
) -> dict:
    cands = versions.candidates
    probs = strategy.posterior().probs
    found = result.state is State.FOUND
    decided = found or result.state is State.SKIPPED
    return {
        "kind": "versions",
        "package": versions.package,
        "state": result.state.value,
        "culprit": cands[result.culprit] if found else None,
        "predecessor": predecessor(versions, result.culprit) if found else None,
        "verification": verification_data(details.verification, False),
        "most_probable": cands[result.culprit],
        "confidence": result.probability,
        "candidate_set": [cands[i] for i in result.group] if decided else None,
        "candidate_set_confidence": result.group_probability,
        "required_confidence": strategy.settings.confidence,
        "good": versions.good,
        "bad": versions.bad,
        "source": versions.source,
        "pins": list(details.pins),
        "candidates": list(cands),
        "trials": result.trials,
        "p_bad": {"posterior_mean": result.mean_p_bad},
        "p_good": {"posterior_mean": result.mean_p_good},
        "good_end": {"trials": strategy.good_trials, "failures": strategy.good_failures},
        "runners_up": [{"version": cands[j], "posterior": p} for j, p in result.runners_up],
        "probes": [
            {
                "version": cands[i],
                "position": i,
                "trials": int(strategy.trials[i]),
                "failures": int(strategy.failures[i]),
                "errors": int(strategy.errors[i]),
                "untestable": bool(strategy.untestable[i]),
                "why_untestable": details.untestable.get(cands[i]),
                "skips_may_be_the_failure": bool(strategy.hiding[i]),
                "posterior": float(probs[i]),
            }
            for i in touched(strategy)
        ],
        "heisenbisect_version": __version__,
        "no_valid_runs": False,
    }


def refused_markdown(refusal: str, versions: VersionRange, strategy: CommitStrategy) -> str:
    """versions.md of a refused range: why, and the runs at the ends; no culprit, no posterior."""
    bad = len(versions.candidates) - 1
    return "\n".join(
        [
            "# Version bisection",
            "",
            f"**Refused: {refusal}.**",
            "",
            "No culprit is named: a range whose bad end does not fail, or fails less often than",
            "its good end, has none to name (docs/bisection.md, the ends first).",
            "",
            f"- package: `{versions.package}`, from {versions.source}",
            f"- bad end `{versions.bad}`: {strategy.trials[bad]} runs, "
            f"{strategy.failures[bad]} failed",
            f"- good end `{versions.good}`: {strategy.good_trials} runs, "
            f"{strategy.good_failures} failed",
            "",
        ]
    )


def touched(strategy: CommitStrategy) -> list[int]:
    """The candidates that ran, errored or were found untestable, oldest first."""
    ran = (strategy.trials > 0) | (strategy.errors > 0) | strategy.untestable
    return [int(i) for i in ran.nonzero()[0]]


def markdown(
    versions: VersionRange,
    strategy: CommitStrategy,
    result: Result,
    crashed: list[CrashedRuns],
    details: VersionsReport,
) -> str:
    cands = versions.candidates
    probs = strategy.posterior().probs
    settings = strategy.settings
    pins = ", ".join(f"`{p}`" for p in details.pins) or "none"
    found = result.state is State.FOUND
    lines = [
        "# Version bisection",
        "",
        f"**{_sentence(headline(versions, result, settings.confidence, details.verification))}.**",
        "",
        f"- package: `{versions.package}`, from {versions.source}; beside it: {pins}",
        f"- range: good `{versions.good}` .. bad `{versions.bad}`, {len(cands)} candidate "
        "versions (each installed once into an environment of its own)",
        f"- trials: {result.trials} (good end: {strategy.good_trials} runs, "
        f"{strategy.good_failures} failed)",
        f"- failure rate of a bad version p: {result.mean_p_bad:.3f}; of a good version q: "
        f"{result.mean_p_good:.3f} (learned, posterior means)",
        f"- stops at posterior >= {settings.confidence:g} or after {settings.max_trials} trials",
        *([f"- verification: {_verification(details.verification)}"] if found else []),
        "",
    ]
    if details.untestable:
        lines += ["## Untestable versions", "", "Never the culprit; skipped as `git bisect` skips:"]
        hiding = {cands[int(i)] for i in strategy.hiding.nonzero()[0]}
        lines += [
            "",
            *[
                f"- `{v}`: {why}" + (HIDING if v in hiding else "")
                for v, why in sorted(details.untestable.items())
            ],
            "",
        ]
    lines += warning_lines(crashed, _labeller(versions))
    lines += ["## Runners-up", "", "| version | posterior |", "|---|---|"]
    lines += [f"| `{cands[j]}` | {p:.3f} |" for j, p in result.runners_up]
    lines += [
        "",
        "## Probed versions",
        "",
        "Oldest first; position 1 is the first version after good.",
        "",
        "| position | version | runs | failures | errors | untestable | posterior |",
        "|---|---|---|---|---|---|---|",
    ]
    for i in touched(strategy):
        lines.append(
            f"| {i + 1} | `{cands[i]}` | {strategy.trials[i]} | {strategy.failures[i]} | "
            f"{strategy.errors[i]} | {'yes' if strategy.untestable[i] else ''} | "
            f"{probs[i]:.3f} |"
        )
    return "\n".join([*lines, ""])


def _verification(v: Verification | None) -> str:
    """The culprit's verification line, with the unit the study bisects."""
    return "not run" if v is None else verification_line(v, False, "version")


def _labeller(versions: VersionRange):
    def describe(config: Config) -> str:
        if config.commit == versions.good:
            return f"good end `{versions.good}`"
        return f"`{versions.package} {config.commit}`"

    return describe


def _reproduce(details: VersionsReport) -> list[str]:
    return [
        *environment_section.markdown_lines(machine.describe(None)),
        "## Reproduce",
        "",
        "```",
        f"{details.rerun}      # resumes from its store; installed versions are reused",
        "```",
        "",
    ]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
