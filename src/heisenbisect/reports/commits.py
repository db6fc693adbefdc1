"""The report of a commit bisection: ``commits.md``, ``commits.png`` and ``commits.json``.

Rendered from a strategy rebuilt by replaying the store, never from a live run's memory.
The names do not collide with the screening report (``report.md``, ``results.json``)
of the same study folder.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heisenbisect import __version__, machine
from heisenbisect.decide.commits import CommitStrategy, Result, State
from heisenbisect.decide.crashes import CrashedRuns
from heisenbisect.decide.evidence import Evidence
from heisenbisect.decide.skips import TRACEBACK_HINT
from heisenbisect.decide.verify import Side, Verification
from heisenbisect.git import CommitInfo, CommitRange
from heisenbisect.hypotheses.model import CommitPrior, Spec
from heisenbisect.layout import CommitsPaths
from heisenbisect.records import Config
from heisenbisect.redaction import remembered
from heisenbisect.reports import environment as environment_section
from heisenbisect.reports import redacted
from heisenbisect.reports.evidence import markdown_lines as evidence_lines
from heisenbisect.reports.plotting import draw, pyplot
from heisenbisect.reports.reproduce import trial_command
from heisenbisect.reports.tracebacks import warning_lines
from heisenbisect.reports.verdicts import UNTESTABLE, presentation


@dataclass(frozen=True)
class ReportDetails:
    """What a bisection's report says beyond the posterior (`studies.commits.details_of`)."""

    fix: bool = False  # direction: fix, the search is for where the failure rate went down
    priors: tuple[str, ...] = ()  # commits.priors, one line each, numbered
    weights: tuple[float, ...] | None = None  # each candidate's prior weight, range order
    stored_sources: tuple[str, ...] = ()  # which stored runs fed p, one line per store
    refusal: str | None = None  # why the range was refused: then no culprit is named
    refusal_state: str | None = None  # does_not_fail or reversed
    verification: Verification | None = None  # the found culprit's, in the strategy's order


def write_report(
    paths: CommitsPaths,
    commit_range: CommitRange,
    strategy: CommitStrategy,
    config_key: str,
    crashed: list[CrashedRuns],
    evidence: Evidence | None = None,
    details: ReportDetails | None = None,
    spec: Spec | None = None,
    spec_path: Path | None = None,
    config: Config | None = None,
) -> None:
    """Write the three files. With no valid run at all, no culprit is named: the headline says so.
    With the spec, commits.md ends with its Environment and Reproduce sections."""
    folder = paths.root
    folder.mkdir(parents=True, exist_ok=True)
    evidence = evidence or Evidence()
    result = strategy.result()
    details = details or ReportDetails()
    data = results(commit_range, strategy, result, config_key)
    data |= {
        "direction": "fix" if details.fix else "regression",
        "stored_runs": list(details.stored_sources),
    }
    data |= {
        "refusal": details.refusal,
        "verification": verification_data(details.verification, details.fix),
    }
    if details.refusal is not None:
        data |= {"state": details.refusal_state, "culprit": None, "candidate_set": None}
    elif details.verification is not None and not details.verification.verified:
        data |= {"state": "not_verified"}
    if evidence.no_valid_runs:
        data |= {"state": "no_valid_runs", "culprit": None, "candidate_set": None}
    data |= {"heisenbisect_version": __version__, "no_valid_runs": evidence.no_valid_runs}
    secrets = redacted.study_redactor(spec) if spec is not None else remembered()
    redacted.write(paths.results, json.dumps(data, indent=2, allow_nan=False) + "\n", secrets)
    drawn = draw(lambda: plot_posterior(paths.plot, commit_range, strategy), paths.plot)
    text = markdown(
        commit_range,
        strategy,
        result,
        config_key,
        paths.plot.name if drawn else None,
        crashed,
        details.verification,
    )
    text = _with_details(text, details, commit_range, strategy)
    if details.refusal is not None:
        text = refused_markdown(details.refusal, commit_range, strategy, result, config_key)
    if evidence.no_valid_runs:
        text = "# Commit bisection\n\n" + "\n".join(evidence_lines(evidence, folder))
    else:
        text += "\n" + "\n".join(evidence_lines(evidence, folder))
    if spec is not None and spec_path is not None:
        text += "\n" + "\n".join(reproduce_lines(spec, spec_path, commit_range, config or Config()))
    redacted.write(paths.report, text, secrets)


def describe_priors(priors: list[CommitPrior]) -> list[str]:
    """One line per ``commits.priors`` entry, numbered as `decide.priors.Weights.matched` numbers them."""
    lines = []
    for n, prior in enumerate(priors, 1):
        parts = []
        if prior.paths:
            parts.append("touches " + ", ".join(f"`{p}`" for p in prior.paths))
        if prior.message is not None:
            parts.append(f"message matches `{prior.message}`")
        lines.append(f"{n}. {' and '.join(parts)}: weight {prior.weight:g}")
    return lines


def reproduce_lines(
    spec: Spec, spec_path: Path, commit_range: CommitRange, config: Config
) -> list[str]:
    """Where it ran, the command that resumes it, and one probe by hand at the bad commit."""
    flags = [word for change in config.changes for word in ("--config", "=".join(change))]
    return [
        *environment_section.markdown_lines(
            machine.describe(commit_range.repo)
            | {
                "target_commit": f"each probed commit of good {commit_range.good.short} .. bad {commit_range.bad.short}"
            }
        ),
        "## Reproduce",
        "",
        "```",
        shlex.join(["bisect", "commits", str(spec_path), *flags])
        + "      # resumes from its store; finished trials are reused",
        "```",
        "",
        f"One trial at the bad commit `{commit_range.bad.short}` by hand (check it out, build as `commits.build` "
        "says, then from the target's folder):",
        "",
        "```",
        f"git -C {shlex.quote(str(commit_range.repo))} checkout {commit_range.bad.sha}",
        trial_command(spec, config),
        "```",
        "",
    ]


def headline(
    commit_range: CommitRange,
    result: Result,
    confidence: float,
    verification: Verification | None = None,
) -> str:
    """One sentence: what is known about the culprit. A found commit that fresh runs did not
    confirm is not called the culprit: the line is read before the verification line under it."""
    cands = commit_range.candidates
    top = cands[result.culprit]
    if result.state is State.FOUND:
        named = f"{top.short} {top.subject!r} (posterior {result.probability:.3f})"
        return unconfirmed(named, verification) or f"culprit {named}"
    if result.state is State.SKIPPED:
        shas = ", ".join(cands[i].short for i in result.group)
        return (
            f"the first bad commit could be any of {shas}: untestable commits keep them apart "
            f"(together {result.group_probability:.3f})"
        )
    reason = {
        State.BUDGET: f"budget spent after {result.trials} trials",
        State.EXHAUSTED: "no testable commit left whose runs could tell more",
        State.CONTRADICTION: "the evidence is impossible under the given p_bad / p_good",
        State.RUNNING: "not finished (interrupted)",
    }[result.state]
    return (
        f"undecided ({reason}): most probable {top.short} {top.subject!r} at {result.probability:.3f}, "
        f"below the {confidence:g} asked for"
    )


def unconfirmed(named: str, verification: Verification | None) -> str | None:
    """The headline of a found culprit that its verification did not confirm; None otherwise."""
    if verification is None or verification.verified:
        return None
    return f"unconfirmed: {named} is NOT verified by fresh runs"


def results(
    commit_range: CommitRange, strategy: CommitStrategy, result: Result, config_key: str
) -> dict:
    cands = commit_range.candidates
    probs = strategy.posterior().probs
    decided = result.state in (State.FOUND, State.SKIPPED)
    return {
        "state": result.state.value,
        "culprit": cands[result.culprit].sha if result.state is State.FOUND else None,
        "most_probable": cands[result.culprit].sha,
        "confidence": result.probability,
        "candidate_set": [cands[i].sha for i in result.group] if decided else None,
        "candidate_set_confidence": result.group_probability,
        "held_by_skips_at": None if result.held_by is None else cands[result.held_by].sha,
        "required_confidence": strategy.settings.confidence,
        "config": config_key,
        "good": commit_range.good.sha,
        "bad": commit_range.bad.sha,
        "candidates": len(cands),
        "trials": result.trials,
        "p_bad": _rate(strategy.settings.p_bad, result.mean_p_bad),
        "p_good": _rate(strategy.settings.p_good, result.mean_p_good),
        "good_end": {"trials": strategy.good_trials, "failures": strategy.good_failures},
        "runners_up": [{"commit": cands[j].sha, "posterior": p} for j, p in result.runners_up],
        "probes": [
            {
                "commit": cands[i].sha,
                "position": i,
                "trials": int(strategy.trials[i]),
                "failures": int(strategy.failures[i]),
                "errors": int(strategy.errors[i]),
                "skipped": int(strategy.skips[i]),
                "untestable": bool(strategy.untestable[i]),
                "skips_may_be_the_failure": bool(strategy.hiding[i]),
                "posterior": float(probs[i]),
            }
            for i in _touched(strategy)
        ],
    }


def _rate(known: float | None, mean: float) -> dict:
    return {"known": known} if known is not None else {"posterior_mean": mean}


def _touched(strategy: CommitStrategy) -> list[int]:
    return [
        int(i)
        for i in np.flatnonzero(
            (strategy.trials > 0)
            | (strategy.errors > 0)
            | (strategy.skips > 0)
            | strategy.untestable
        )
    ]


def markdown(
    commit_range: CommitRange,
    strategy: CommitStrategy,
    result: Result,
    config_key: str,
    plot: str | None,
    crashed: list[CrashedRuns],
    verification: Verification | None = None,
) -> str:
    cands = commit_range.candidates
    probs = strategy.posterior().probs
    settings = strategy.settings
    top = cands[result.culprit]
    lines = [
        "# Commit bisection",
        "",
        f"**{_sentence(headline(commit_range, result, settings.confidence, verification))}.**",
        "",
        f"- range: good `{commit_range.good.short}` .. bad `{commit_range.bad.short}`, "
        f"{len(cands)} candidate commits",
        f"- config: `{config_key}`",
        f"- trials: {result.trials} (good end: {strategy.good_trials} runs, {strategy.good_failures} failed)",
        f"- failure rate of a bad commit p: {_rate_text(settings.p_bad, result.mean_p_bad)}; "
        f"of a good commit q: {_rate_text(settings.p_good, result.mean_p_good)}",
        f"- stops at posterior >= {settings.confidence:g} or after {settings.max_trials} trials",
        *_stored_runs_line(settings.stored_bad_runs, settings.stored_bad_failures),
        "",
        *_learned_rates_caveat(settings.p_bad, settings.p_good),
        "## Most probable culprit" if result.state is not State.FOUND else "## Culprit",
        "",
        *_commit_block(top, result.probability),
        "",
    ]
    if result.state is State.SKIPPED:
        lines += [
            "Untestable commits keep these apart (as `git bisect` says: only skipped commits left to test):",
            "",
            *[f"- `{cands[i].short}` {cands[i].subject} ({probs[i]:.3f})" for i in result.group],
            "",
        ]
    lines += _hidden_skip_lines(commit_range, strategy, result)
    lines += warning_lines(crashed, _commit_labeller(commit_range))
    lines += ["## Runners-up", "", "| commit | subject | posterior |", "|---|---|---|"]
    lines += [
        f"| `{cands[j].short}` | {_cell(cands[j].subject)} | {p:.3f} |"
        for j, p in result.runners_up
    ]
    lines += [
        "",
        "## Probed commits",
        "",
        "Oldest first; position 1 is the first commit after good.",
        "",
        "| position | commit | subject | runs | failures | errors | untestable | posterior |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i in _touched(strategy):
        lines.append(
            f"| {i + 1} | `{cands[i].short}` | {_cell(cands[i].subject)} | {strategy.trials[i]} | "
            f"{strategy.failures[i]} | {strategy.errors[i]} | {'yes' if strategy.untestable[i] else ''} | "
            f"{probs[i]:.3f} |"
        )
    lines += ["", f"![posterior over the range]({plot})", ""] if plot else [""]
    return "\n".join(lines)


def _with_details(
    text: str, details: ReportDetails, commit_range: CommitRange, strategy: CommitStrategy
) -> str:
    """The direction under the title; the soft priors and the stored runs used before the runners-up."""
    head, sep, rest = text.partition("\n\n")
    if details.verification is not None:
        line = verification_line(details.verification, details.fix)
        block = rest.find("## Culprit\n\n")
        end = rest.find("\n\n", block + len("## Culprit\n\n")) if block >= 0 else -1
        if end >= 0:  # the last item of the culprit's block
            rest = rest[:end] + f"\n- verification: {line}" + rest[end:]
    if details.fix:
        head += (
            "\n\nDirection: **fix**. The search is for the first commit whose failure rate went *down*: "
            'below, "culprit" is that commit, p the rate before it (at good and older) and q the rate from it on.'
        )
    extra: list[str] = []
    if details.stored_sources:
        extra += [
            "## Stored runs used",
            "",
            "Runs of the same target and config at the failing end, found by the commit they ran:",
            "",
            *[f"- {line}" for line in details.stored_sources],
            "",
        ]
    if details.priors and details.weights is not None:
        probs = strategy.posterior().probs
        weighted = [k for k, w in enumerate(details.weights) if w != 1.0]
        cands = commit_range.candidates
        extra += [
            "## Soft priors",
            "",
            "A suspicion weights commits before any run; runs overrule it, and no commit is excluded:",
            "",
            *details.priors,
            "",
            f"{len(weighted)} of {len(cands)} candidates weighted:",
            "",
            "| commit | subject | weight | posterior |",
            "|---|---|---|---|",
            *[
                f"| `{cands[k].short}` | {_cell(cands[k].subject)} | {details.weights[k]:g} | {probs[k]:.3f} |"
                for k in weighted[:20]
            ],
            *([f"| ... | {len(weighted) - 20} more | | |"] if len(weighted) > 20 else []),
            "",
        ]
    if extra:
        before, marker, after = rest.partition("## Runners-up")
        rest = (
            before + "\n".join(extra) + "\n" + marker + after
            if marker
            else rest + "\n" + "\n".join(extra)
        )
    return head + sep + rest


def verification_line(v: Verification, fix: bool, unit: str = "commit") -> str:
    """One sentence: verified or not, with the fresh runs' rates on each side and their count
    (``unit``: what the candidates are, "version" for `bisect versions`)."""
    # in the strategy's order the culprit side fails; a fix is the side that no longer does
    named, before = (v.before, v.culprit) if fix else (v.culprit, v.before)
    word = "fix" if fix else "culprit"
    verdict = {"verified": "verified", "not_verified": "NOT verified"}.get(
        v.state.value, "verification not finished"
    )
    why = f" ({v.reason})" if v.reason and not v.verified else ""
    revert = ""
    if v.revert is not None:
        said = {True: "reverting it fixes the bad end", False: "reverting it does not fix it"}
        fixes = "undecided" if v.revert_fixes is None else said[v.revert_fixes]
        revert = f"; the bad end with it reverted: {v.revert.text()} ({fixes})"
    return (
        f"{verdict}{why}: fresh runs at the {word}: {named.text()}; at the {unit} before it: "
        f"{before.text()}{revert}; {v.runs} verification runs"
    )


def verification_data(v: Verification | None, fix: bool) -> dict | None:
    """commits.json's ``verification``: the sides in the range's terms (a fix's culprit is
    the side that no longer fails)."""
    if v is None:
        return None
    named, before = (v.before, v.culprit) if fix else (v.culprit, v.before)
    return {
        "state": v.state.value,
        "reason": v.reason,
        "rounds": v.rounds,
        "runs": v.runs,
        "culprit": _side_data(named),
        "before": _side_data(before),
        "revert": None if v.revert is None else _side_data(v.revert),
        "revert_fixes": v.revert_fixes,
    }


def _side_data(side: Side) -> dict:
    return {"runs": side.runs, "failed": side.failed, "errors": side.errors, "rate": side.rate}


def refused_markdown(
    refusal: str, commit_range: CommitRange, strategy: CommitStrategy, result: Result, key: str
) -> str:
    """commits.md of a refused range: why, and the runs it rests on; no culprit, no posterior."""
    cands = commit_range.candidates
    lines = [
        "# Commit bisection",
        "",
        f"**Refused: {refusal}.**",
        "",
        "No culprit is named: a range whose bad end does not fail, or whose ends are swapped, has",
        "none. The runs at each end are below (docs/refusals.md, `bisect commits`).",
        "",
        f"- range: good `{commit_range.good.short}` .. bad `{commit_range.bad.short}`, "
        f"{len(cands)} candidate commits",
        f"- config: `{key}`",
        f"- trials: {result.trials} (good end: {strategy.good_trials} runs, "
        f"{strategy.good_failures} failed)",
        "",
        "| position | commit | subject | runs | failures | errors |",
        "|---|---|---|---|---|---|",
    ]
    for i in _touched(strategy):
        lines.append(
            f"| {i + 1} | `{cands[i].short}` | {_cell(cands[i].subject)} | {strategy.trials[i]} | "
            f"{strategy.failures[i]} | {strategy.errors[i]} |"
        )
    return "\n".join([*lines, ""])


def _stored_runs_line(runs: int, failed: int) -> list[str]:
    """Item of the summary list when earlier studies' runs at the bad commit fed p."""
    if not runs:
        return []
    return [
        f"- p starts from {runs} runs ({failed} failed) already stored at the bad commit under this target "
        "and config by `bisect run`'s baseline or `bisect amplify`'s current settings (the study folder's "
        "study.sqlite, amplify.sqlite, confirm.sqlite), used as evidence instead of the generic prior alone"
    ]


def _learned_rates_caveat(p_bad: float | None, p_good: float | None) -> list[str]:
    """Why a posterior over learned rates can overstate at a particular rate, and the remedy."""
    if p_bad is not None and p_good is not None:
        return []
    return [
        "The failure rates were learned, so the posterior averages over their priors: over those",
        "priors it is calibrated, but at a particular rate it can overstate. In simulation a 0.95",
        "culprit was right 93% of the time when bad commits failed in only 5% of runs, and 94%",
        'when good ones failed at a fifth of the bad rate (docs/bisection.md, "Calibration").',
        "Set `commits.p_bad` / `commits.p_good` when you know them: `bisect run`'s baseline rate",
        "at the bad commit is a good p_bad.",
        "",
    ]


def _commit_labeller(commit_range: CommitRange) -> Callable[[Config], str]:
    """``config -> "`abc1234` subject"`` for a probe's commit, or the good end."""
    infos = {info.sha: info for info in commit_range.candidates}

    def describe(config: Config) -> str:
        info = infos.get(config.commit or "")
        return f"`{info.short}` {info.subject}" if info else f"good end `{commit_range.good.short}`"

    return describe


def _commit_block(info: CommitInfo, probability: float) -> list[str]:
    return [
        f"- sha: `{info.sha}`",
        f"- subject: {info.subject}",
        f"- author: {info.author}",
        f"- date: {info.date}",
        f"- posterior: {probability:.3f}",
    ]


def _rate_text(known: float | None, mean: float) -> str:
    return f"{known:g} (given)" if known is not None else f"{mean:.3f} (learned, posterior mean)"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def plot_posterior(path: Path, commit_range: CommitRange, strategy: CommitStrategy) -> None:
    plt = pyplot()

    probs = strategy.posterior().probs
    positions = np.arange(1, len(probs) + 1)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5), sharex=True, height_ratios=[3, 1])
    top.bar(positions, probs, width=1.0, color="tab:red")
    top.set_ylabel("P(first bad commit)")
    top.set_ylim(0, 1)
    top.set_title(
        f"Posterior over {len(probs)} candidates, good {commit_range.good.short} .. bad {commit_range.bad.short}"
    )
    runs = strategy.trials
    bottom.bar(positions, runs, width=1.0, color="tab:gray", label="runs")
    bottom.bar(positions, strategy.failures, width=1.0, color="tab:red", label="failures")
    skipped = np.flatnonzero(strategy.untestable) + 1
    untestable = presentation(UNTESTABLE)
    bottom.scatter(
        skipped, np.zeros_like(skipped), marker="x", color=untestable.colour, label=untestable.word
    )
    bottom.set_ylabel("runs")
    bottom.set_xlabel("candidate position (oldest first)")
    bottom.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _hidden_skip_lines(
    commit_range: CommitRange, strategy: CommitStrategy, result: Result
) -> list[str]:
    """Why commits whose skips may be the failure are untestable, and a held answer's wait."""
    cands = commit_range.candidates

    def skipped(i: int) -> str:
        return f"skipped {strategy.skips[i]} of {strategy.skips[i] + strategy.trials[i]} runs"

    lines = [
        f"- `{cands[i].short}` {skipped(int(i))} and never failed"
        for i in np.flatnonzero(strategy.hiding)
    ]
    if result.held_by is not None and result.state is not State.RUNNING:
        i = result.held_by
        lines.append(
            f"- `{cands[i].short}`, just before the most probable culprit, {skipped(i)} and never "
            "failed: not yet enough runs to tell whether its skips are the failure, so no "
            "culprit is named past it"
        )
    if not lines:
        return []
    return [
        "## Skips that may be the failure",
        "",
        "A could-not-run traceback may be the failure itself at these commits, so their clean "
        "runs are not read as good (they are read against the commits whose failures show):",
        "",
        *lines,
        "",
        f"{_sentence(TRACEBACK_HINT)}.",
        "",
    ]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
