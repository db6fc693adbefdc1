"""What amplify.md says of each knob: where the best setting sits in its range, and which way helps.

A best setting on a bound of its search range (``gap_ms`` at its ``low``) says the optimum may lie
beyond it: the range should be widened and the search run again, or the "best" is only the best
of a box drawn too small. The direction is Spearman's rank correlation (scipy) between a knob's
value and the objective over the search's candidates: the importance bar alone says a knob matters,
not whether to raise or lower it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from heisenbisect.hypotheses.model import Knob
from heisenbisect.user_text import code, escaped

BOUND_SHARE = 0.02  # within 2% of the (log-)range of an end counts as on it
DIRECTION_P = 0.05


@dataclass(frozen=True)
class KnobLine:
    name: str
    best: str
    range: str
    bound: str | None  # "low" or "high" when the best sits on it
    rho: float | None  # Spearman correlation of the knob with the objective
    p: float | None  # its two-sided p-value: a direction is claimed below DIRECTION_P
    importance: float | None


def on_bound(knob: Knob, value: object) -> str | None:
    """``"low"`` / ``"high"`` when ``value`` sits on that end of the knob's range; None inside it
    (and for a choice knob, which has no range to widen)."""
    if knob.type == "choice" or knob.low is None or knob.high is None:
        return None
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if knob.type == "int" and x in (knob.low, knob.high):
        return "low" if x == knob.low else "high"
    scale = (lambda v: math.log(v)) if knob.log else (lambda v: v)
    if knob.log and x <= 0:
        return None
    share = (scale(x) - scale(knob.low)) / (scale(knob.high) - scale(knob.low))
    if share <= BOUND_SHARE:
        return "low"
    if share >= 1 - BOUND_SHARE:
        return "high"
    return None


def direction(
    values: list[float | None], objective: list[float | None]
) -> tuple[float, float] | None:
    """Spearman's rho of a knob's values against the objective and its p-value; None with too few
    or no spread."""
    from scipy import stats

    pairs = [
        (v, o)
        for v, o in zip(values, objective)
        if v is not None and o is not None and math.isfinite(o)
    ]
    if len(pairs) < 4 or len({v for v, _ in pairs}) < 2 or len({o for _, o in pairs}) < 2:
        return None
    found = stats.spearmanr([v for v, _ in pairs], [o for _, o in pairs])
    rho, p = float(found.statistic), float(found.pvalue)
    return (rho, p) if math.isfinite(rho) and math.isfinite(p) else None


def helps(line: KnobLine) -> str | None:
    """``"higher"`` / ``"lower"`` when the knob's direction is clear (p below `DIRECTION_P`)."""
    if line.rho is None or line.p is None or line.p >= DIRECTION_P:
        return None
    return "higher" if line.rho > 0 else "lower"


def direction_text(line: KnobLine) -> str:
    if line.rho is None or line.p is None:
        return "-"
    way = helps(line)
    numbers = f"Spearman rho {line.rho:+.2f}, p {'< 1e-4' if line.p < 1e-4 else f'= {line.p:.2g}'}"
    return f"{way} gives more evidence ({numbers})" if way else f"none clear ({numbers})"


def knob_lines(
    knobs: list[Knob], best: dict[str, object], trials: list, importances: dict[str, float]
) -> list[KnobLine]:
    """One line per knob: its best value, range, bound, direction over ``trials`` (Optuna's
    completed trials: ``params`` and ``value``) and importance."""
    objective = [t.value for t in trials]
    lines = []
    for knob in knobs:
        numeric = knob.type != "choice"
        values = [t.params.get(knob.name) for t in trials]
        found = (
            direction([float(v) if v is not None else None for v in values], objective)
            if numeric
            else None
        )
        span = (
            f"{knob.low:g} .. {knob.high:g}{' (log)' if knob.log else ''}"
            if numeric
            else ", ".join(map(str, knob.choices or []))
        )
        value = best.get(knob.name)
        lines.append(
            KnobLine(
                knob.name,
                "current"
                if value is None
                else f"{value:g}"
                if isinstance(value, float)
                else str(value),
                span,
                None if value is None else on_bound(knob, value),
                found[0] if found else None,
                found[1] if found else None,
                importances.get(knob.name),
            )
        )
    return lines


def bound_warning(lines: list[KnobLine]) -> str | None:
    """The report's line when a best value sits on a bound of its range."""
    at = [
        f"{code(line.name)} at its {line.bound} ({escaped(line.best)})"
        for line in lines
        if line.bound
    ]
    if not at:
        return None
    return (
        f"**Widen the range.** The best setting sits on a bound of the search: {', '.join(at)}. The optimum may "
        "lie beyond it: widen that knob's range in the spec's `amplify:` section and run `bisect amplify --fresh`."
    )
