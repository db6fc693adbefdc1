"""The report of an amplification: ``amplify.md``, ``amplify.png``, ``amplify.json`` and,
once an improvement is confirmed, ``amplified.yaml`` (the spec with those settings applied).

Rendered from the stores (search and confirmation replayed) and the Optuna study.
"""

from __future__ import annotations

import json
import math
import os
import shlex
from pathlib import Path

import numpy as np
import yaml

from heisenbisect import machine
from heisenbisect.decide.amplify import Claim, Estimate, capacity
from heisenbisect.decide.amplify_outcome import Ending, Summary
from heisenbisect.hypotheses.model import Spec
from heisenbisect.layout import AMPLIFIED_SUFFIX, AmplifyPaths, target_folder
from heisenbisect.records import Config
from heisenbisect.reports import environment as environment_section
from heisenbisect.reports import redacted
from heisenbisect.reports.amplify_knobs import (
    KnobLine,
    bound_warning,
    direction_text,
    helps,
    knob_lines,
)
from heisenbisect.reports.plotting import draw, pyplot
from heisenbisect.reports.text import interval, p_text, percent, table
from heisenbisect.user_text import capped, code, escaped, fenced

BISECT_SIZES = (64, 256, 1024)
# `bisect commits` with given rates takes 1.08-1.12x Fano's floor (docs/bisection.md)
BISECT_OVERHEAD = 1.1
BISECT_ERROR = 0.05


def settings_text(config: Config) -> str:
    """The settings on one line, each value capped (a knob's choice is the user's text)."""
    changes = config.changes
    return ", ".join(capped(f"{name}={value}") for name, value in changes) or "the current settings"


def bisect_trials(p: float, n: int) -> float:
    """Expected `bisect commits` trials with given rates at run-failure rate p (q = 0)."""
    bits = math.log2(n) - _h(BISECT_ERROR) - BISECT_ERROR * math.log2(n - 1)
    c = float(capacity(p))
    return BISECT_OVERHEAD * bits / c if c > 0 else math.inf


def _h(x: float) -> float:
    return -(x * math.log2(x) + (1 - x) * math.log2(1 - x))


def headline(summary: Summary) -> str:
    best = settings_text(summary.best)
    if summary.ending is Ending.CONFIRMED:
        c = summary.confirmation
        assert c is not None
        return (
            f"amplified: {best} gives {c.speedup:.1f}x the current settings' evidence per second "
            f"(confirmed, {p_text(c.p_value)})"
        )
    if summary.ending is Ending.NEVER_FAILED:
        return f"the failure never fired in {summary.search_runs} runs: nothing to amplify"
    if summary.ending is Ending.CURRENT_BEST:
        return f"nothing beats the current settings: no candidate of {summary.candidates} estimated above them"
    return f"not confirmed: {best} did not give significantly more evidence per second than the current settings"


def write_report(
    spec: Spec,
    spec_path: Path,
    summary: Summary,
    paths: AmplifyPaths,
    study,
    ran_in: dict | None = None,
) -> None:
    """report.md, results.json, the plot and (confirmed) amplified.yaml; ``ran_in`` is the environment
    the store recorded (`studies.run_record`), or None for a store from before that was recorded."""
    paths.root.mkdir(parents=True, exist_ok=True)
    trials = _completed(study)
    importances = knob_importances(study, trials)
    assert spec.amplify is not None
    knobs = knob_lines(list(spec.amplify.knobs), dict(summary.best.changes), trials, importances)
    draw(lambda: plot(paths.plot, trials, summary.search_current.value, knobs), paths.plot)
    if summary.ending is Ending.CONFIRMED:
        write_amplified(spec, spec_path, summary.best, paths.amplified)
    elif paths.amplified.exists():
        paths.amplified.unlink()  # a stale one would claim settings this run did not confirm
    folder = target_folder(spec, spec_path.parent)
    texts = {
        paths.results: json.dumps(results(summary, paths), indent=2) + "\n",
        paths.report: markdown(spec, summary, paths, len(trials), knobs)
        + "\n"
        + "\n".join(reproduce_lines(spec, spec_path, summary, paths, folder, ran_in)),
    }
    redacted.write_all(texts, redacted.study_redactor(spec))


def _completed(study) -> list:
    import optuna

    return [
        t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE
    ]


def results(summary: Summary, paths: AmplifyPaths) -> dict:
    def est(e: Estimate) -> dict:
        return {
            "runs": e.runs,
            "failed_runs": e.failed_runs,
            "bits_per_s": e.value,
            "bits_per_s_interval": e.interval,
            "rate": e.rate,
            "rate_interval": e.rate_interval,
            "runs_per_s": e.runs_per_s,
            "runs_per_s_interval": e.runs_per_s_interval,
        }

    c = summary.confirmation
    return {
        "ending": summary.ending.value,
        "best": dict(summary.best.changes),
        "search": {
            "runs": summary.search_runs,
            "candidates": summary.candidates,
            "best": est(summary.search_best),
            "current": est(summary.search_current),
        },
        "confirmation": None
        if c is None
        else {
            "claim": c.claim.value,
            "p_value": c.p_value,
            "looks": c.looks_done,
            "best": est(c.best),
            "current": est(c.current),
            "speedup": c.speedup,
        },
        "amplified": str(paths.amplified) if summary.ending is Ending.CONFIRMED else None,
        "optuna_storage": paths.storage_url,
    }


SAMPLER_NAMES = {
    "gp": "candidates from a Gaussian process",
    "tpe": "TPE",
    "random": "random search",
}


def markdown(
    spec: Spec, summary: Summary, paths: AmplifyPaths, optuna_trials: int, knobs: list[KnobLine]
) -> str:
    assert spec.amplify is not None  # an amplify study's spec has its section
    b, cur = summary.best_estimate, summary.current_estimate
    source = (
        "the confirmation's fresh, interleaved runs"
        if summary.confirmation
        else "the search's runs"
    )
    lines = [
        f"# Amplification: {spec.study}",
        "",
        f"**{escaped(headline(summary), 2000)}**",
        "",
        f"Search: {summary.search_runs} runs over {summary.candidates} settings ({optuna_trials} Optuna trials, "
        f"{SAMPLER_NAMES[spec.amplify.sampler]}); the objective is bits about a culprit per "
        "second of run, C(p) / mean run duration "
        "(docs/amplify.md). Estimates below from "
        + source
        + f", {percent(summary.confidence)} intervals.",
        "",
        table(
            [
                "settings",
                "runs",
                "failed runs",
                "run-failure rate",
                "runs per second",
                "bits per second",
            ],
            [
                [
                    f"best: {escaped(settings_text(summary.best), 2000)}",
                    str(b.runs),
                    str(b.failed_runs),
                    f"{percent(b.rate)} {interval(b.rate_interval)}",
                    _span(b.runs_per_s, b.runs_per_s_interval),
                    _span(b.value, b.interval),
                ],
                [
                    "current",
                    str(cur.runs),
                    str(cur.failed_runs),
                    f"{percent(cur.rate)} {interval(cur.rate_interval)}",
                    _span(cur.runs_per_s, cur.runs_per_s_interval),
                    _span(cur.value, cur.interval),
                ],
            ],
        ),
        "",
    ]
    if c := summary.confirmation:
        verdict = "confirmed" if c.claim is Claim.CONFIRMED else "not confirmed"
        lines += [
            f"Confirmation: {verdict} after {c.looks_done} look{'s' if c.looks_done != 1 else ''}, one-sided "
            f"sequential {p_text(c.p_value)} "
            f"(alpha = {1 - summary.confidence:.2g}, weighted Bonferroni over the looks).",
            "",
        ]
    if summary.ending is not Ending.NEVER_FAILED and cur.rate > 0 and b.rate > 0:
        lines += _speedup_section(b, cur, spec)
    if summary.ending is Ending.CONFIRMED:
        lines += [
            f"`{paths.amplified.name}` is the spec with these settings applied (study "
            f"`{spec.study}{AMPLIFIED_SUFFIX}`):",
            "",
            "```",
            f"bisect run {shlex.quote(str(paths.amplified))}",
            f"bisect commits {shlex.quote(str(paths.amplified))}",
            "```",
            "",
        ]
    lines += knob_section(knobs)
    lines += [
        f"![objective over the search, knob importances and directions]({paths.plot.name})",
        "",
        f"Optuna study: {dashboard_line(paths.storage_url)}",
        "",
    ]
    return "\n".join(lines)


def knob_section(knobs: list[KnobLine]) -> list[str]:
    """Each knob's best value, range and direction, and the warning when a best value is on a bound."""
    rows = [
        [
            code(k.name),
            escaped(k.best),
            escaped(k.range),
            f"**on its {k.bound}**" if k.bound else "inside",
            direction_text(k),
            "-" if k.importance is None else f"{k.importance:.2f}",
        ]
        for k in knobs
    ]
    lines = [
        "## Knobs",
        "",
        table(["knob", "best", "range", "best in range", "direction", "importance"], rows),
        "",
    ]
    if warning := bound_warning(knobs):
        lines += [warning, ""]
    return lines


def dashboard_line(storage_url: str) -> str:
    """The optuna-dashboard command when it is installed, else how to install it."""
    import importlib.util

    if importlib.util.find_spec("optuna_dashboard") is not None:
        return f"`optuna-dashboard {storage_url}`"
    return (
        f"`{storage_url}`; optuna-dashboard is not installed: `pip install 'heisenbisect[optuna]'`, then "
        f"`optuna-dashboard {storage_url}`"
    )


def reproduce_lines(
    spec: Spec,
    spec_path: Path,
    summary: Summary,
    paths: AmplifyPaths,
    folder: Path,
    ran_in: dict | None = None,
) -> list[str]:
    """Where it ran (as recorded, else the machine now) and how to run it again: the commands, one
    run at the best settings."""
    assert spec.amplify is not None
    env = spec.environment(Config()) | spec.amplify.environment(summary.best)
    words = ["env", *(f"{k}={v}" for k, v in env.items() if v is not None)]
    argv = spec.target.argv + spec.arguments(Config()) + spec.amplify.arguments(summary.best)
    by_hand = (
        f"cd {shlex.quote(str(folder))} && {shlex.join(words + argv)}"
        if argv
        else f"# the built-in {spec.target.kind} target: run `bisect amplify` to reproduce"
    )
    return [
        *environment_section.markdown_lines(ran_in or machine.describe(folder)),
        "## Reproduce",
        "",
        "```",
        f"bisect amplify {shlex.quote(str(spec_path))}      # resumes from its stores; finished runs are reused",
        "```",
        "",
        f"One run at the best settings ({escaped(settings_text(summary.best), 2000)}) by hand:",
        "",
        *fenced([by_hand]),
        "",
    ]


def _span(value: float, bounds: tuple[float, float]) -> str:
    return f"{value:.3g} [{bounds[0]:.3g}, {bounds[1]:.3g}]"


def _speedup_section(b: Estimate, cur: Estimate, spec: Spec) -> list[str]:
    rows = []
    for n in BISECT_SIZES:
        tb, tc = bisect_trials(b.rate, n), bisect_trials(cur.rate, n)
        rows.append(
            [
                f"bisect commits, {n} commits",
                f"{tc:.0f}",
                f"{tb:.0f}",
                _hours(tc * cur.duration),
                _hours(tb * b.duration),
                f"{(tc * cur.duration) / (tb * b.duration):.2f}x",
            ]
        )
    # screening decides an arm once the baseline has failed often enough: its runs scale as 1 / p
    ratio_trials = cur.rate and b.rate / cur.rate
    fps_ratio = (b.rate / b.duration) / (cur.rate / cur.duration)
    rows.append(
        [
            "bisect run, per decided arm (relative)",
            "1",
            f"{1 / ratio_trials:.2f}",
            "1",
            f"{1 / fps_ratio:.2f}",
            f"{fps_ratio:.2f}x",
        ]
    )
    return [
        "Expected cost, current settings against the best (posterior mean rates; `bisect commits` "
        f"with given rates needs about {BISECT_OVERHEAD}x Fano's floor, q = 0, 95% confidence; "
        "`bisect run` relative, from failed runs per second; run time summed over runs, divide by the "
        f"runs in parallel, {spec.execution.parallel} in this spec):",
        "",
        table(
            [
                "study",
                "trials now",
                "trials amplified",
                "run time now",
                "run time amplified",
                "speed-up",
            ],
            rows,
        ),
        "",
    ]


def _hours(seconds: float) -> str:
    """Run time in the unit that reads best: seconds, minutes or hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plot(path: Path, trials: list, current_value: float, knobs: list[KnobLine]) -> None:
    plt = pyplot()

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    numbers = [t.number for t in trials]
    values = [t.value for t in trials]
    left.scatter(numbers, values, s=12, label="candidate (estimate)")
    if values:
        left.step(
            numbers, np.maximum.accumulate(values), where="post", color="C1", label="best so far"
        )
    left.axhline(current_value, color="grey", linestyle="--", label="current settings")
    left.set_xlabel("Optuna trial")
    left.set_ylabel("bits per second")
    left.set_title("objective over the search")
    left.legend(fontsize=8)
    ranked = sorted(
        (k for k in knobs if k.importance is not None), key=lambda k: -(k.importance or 0)
    )[::-1]
    colours = {"higher": "tab:green", "lower": "tab:red", None: "tab:gray"}
    right.barh(
        [
            f"{k.name} (no clear direction)" if helps(k) is None else f"{k.name} ({helps(k)} helps)"
            for k in ranked
        ],
        [k.importance for k in ranked],
        color=[colours[helps(k)] for k in ranked],
    )
    right.set_xlabel("importance (PED-ANOVA)")
    right.set_title(
        "knobs: green higher helps, red lower helps, gray unclear (Spearman, p < 0.05)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def knob_importances(study, trials: list) -> dict[str, float]:
    """Optuna's PED-ANOVA importances (fANOVA would need scikit-learn); empty while too few trials vary."""
    import optuna

    if len(trials) < 4:
        return {}
    try:
        return optuna.importance.get_param_importances(
            study, evaluator=optuna.importance.PedAnovaImportanceEvaluator()
        )
    except (RuntimeError, ValueError):
        return {}


def write_amplified(spec: Spec, spec_path: Path, best: Config, path: Path) -> None:
    """The spec file with ``best`` applied: env knobs in target.env, arg knobs on the command (a
    server's: on its server_args).

    Its paths (target.cwd, target.files, commits.repo) are rewritten relative to ``path``'s own
    folder, naming the places the spec's named: the file works from any folder and on any
    machine that has the same tree, and never names a repository's working tree by an absolute
    path (under `bisect commits`, a folder of the repository maps into each commit's worktree).
    ``output: ..`` keeps its studies beside the original's; the study is renamed
    ``<study>-amplified`` so its stores never mix with the original's.
    """
    data = yaml.safe_load(Path(spec_path).read_text())
    assert spec.amplify is not None
    base = Path(spec_path).resolve().parent
    here = path.parent.resolve()

    def moved(relative_to_spec: str) -> str:
        return os.path.relpath(base / Path(relative_to_spec).expanduser(), here)

    target = data.setdefault("target", {})
    target["cwd"] = moved(spec.target.cwd or ".")
    if spec.target.files:
        target["files"] = [moved(pattern) for pattern in spec.target.files]
    env = {**target.get("env", {}), **spec.amplify.environment(best)}
    if env:
        target["env"] = env
    args = spec.amplify.arguments(best)
    if args:  # a server's arguments follow its server_args
        holder, key = (
            (target["server"], "server_args") if "server" in target else (target, "command")
        )
        command = holder.get(key) or []
        holder[key] = (shlex.split(command) if isinstance(command, str) else list(command)) + args
    if (commits := data.get("commits")) and "repo" in commits:
        commits["repo"] = moved(commits["repo"])
    data["study"] = f"{spec.study}{AMPLIFIED_SUFFIX}"
    data["output"] = os.path.relpath(here.parent, here)
    header = (
        f"# {moved(Path(spec_path).name)} with the settings `bisect amplify` confirmed: {settings_text(best)}\n"
        "# (written by bisect amplify; paths relative to this file)\n"
    )
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, width=100))
