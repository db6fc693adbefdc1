"""Text that came from a user or a server (factor levels, knob values, model names, versions)
shown as text: capped in length and escaped for markdown and HTML, so that a `<b>` in a level
or a 5 MB version string never turns into markup or floods a terminal."""

from __future__ import annotations

import re

SHOWN_CHARS = 200  # what a report or a terminal shows of one user-given value
_BACKTICKS = re.compile(r"`+")
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")  # what marks up text inside a line


def capped(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with how long it was."""
    one = text.replace("\r", "\\r").replace("\n", "\\n")
    if len(one) <= limit:
        return one
    return f"{one[:limit]}... ({len(text)} characters)"


def code(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as a markdown code span: nothing inside is markup, HTML included. The fence is
    one backtick longer than any run inside, padded where the text starts or ends with one."""
    shown = capped(text, limit)
    longest = max((len(m) for m in _BACKTICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") or not shown.strip() else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def escaped(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as literal markdown prose: markdown's punctuation backslashed, HTML's
    ``& < >`` as entities."""
    shown = capped(text, limit)
    shown = shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", shown)


def fenced(lines: list[str]) -> list[str]:
    """``lines`` as a fenced code block whose fence no backtick run inside can close."""
    longest = max((len(m) for line in lines for m in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence]
