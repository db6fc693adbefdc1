"""Matplotlib for the reports' plots: user text drawn as text, and a plot that cannot be drawn
never costs the report.

A factor level such as ``$\\frac{1}{$`` is mathtext to matplotlib by default, and a parse error
there used to fail `bisect run` before results.json and report.md were written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PLOT_LABEL_CHARS = 60  # a longer level or subject is cut on the plot; the report has it whole


def pyplot() -> Any:
    """``matplotlib.pyplot`` off-screen, with mathtext and TeX off: every ``$`` is a dollar."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    matplotlib.rcParams["text.usetex"] = False
    import matplotlib.pyplot as plt

    return plt


def draw(make: Callable[[], None], path: Path) -> bool:
    """Run ``make`` (which writes the plot at ``path``); False, with one line on stderr, when it
    fails. A plot only illustrates: the results and the markdown are written either way."""
    try:
        make()
    except Exception as exc:  # matplotlib's own errors have no common base; none may cost a report
        pyplot().close("all")
        path.unlink(missing_ok=True)  # no stale plot beside new results
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(
            f"warning: {path}: the plot could not be drawn ({reason[:200]}); "
            "the results and the report are written",
            file=sys.stderr,
        )
        return False
    return True
