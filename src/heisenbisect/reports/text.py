"""Small formatting helpers shared by the markdown reports."""

from __future__ import annotations


def percent(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 0.001 or x == 0 else f"{100 * x:.2g}%"


def interval(bounds: tuple[float, float]) -> str:
    return f"[{percent(bounds[0])}, {percent(bounds[1])}]"


def pvalue(p: float) -> str:
    if p >= 1:
        return "1"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def p_text(p: float) -> str:
    """``p = 0.03`` or ``p < 1e-4``: a p-value in a sentence."""
    shown = pvalue(p)
    return f"p {shown[0]} {shown[1:]}" if shown.startswith("<") else f"p = {shown}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def join_words(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]
