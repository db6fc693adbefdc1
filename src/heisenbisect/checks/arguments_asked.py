"""What a user turn asked a tool for: the built-in prompts' templates, read back from their text.

The stress workload formats its built-in prompts from `BUILTIN_PROMPTS` (a placeholder per
argument: city and unit, query and count, path and line, the expression), so the same template
reads the asked values back out of the request: the `arguments` check needs no side channel from
the workload, and a rerun asks the same. A template is matched whole, so ordinary text or a
user's own prompt asks nothing of this module.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any


@dataclass(frozen=True)
class PromptTemplate:
    """A user turn that asks ``tool`` for the arguments its placeholders name."""

    tool: str
    text: str

    def format(self, **values: Any) -> str:
        return self.text.format(**values)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        parts = []
        for literal, name, _, _ in string.Formatter().parse(self.text):
            parts.append(re.escape(literal))
            if name:
                parts.append(f"(?P<{name}>.+?)")
        return re.compile("".join(parts), re.DOTALL)

    def asked(self, text: str) -> dict[str, str] | None:
        """The values ``text`` asks for, as text, or None when it is not this template's."""
        match = self.pattern.fullmatch(text.strip())
        return dict(match.groupdict()) if match else None


BUILTIN_PROMPTS: Mapping[str, PromptTemplate] = {
    t.tool: t
    for t in (
        PromptTemplate(
            "get_weather",
            "What is the weather in {city} right now, in {unit}? Use the get_weather tool.",
        ),
        PromptTemplate(
            "search_docs",
            "Search the docs for '{query}' and give me the top {max_results} results. "
            "Use search_docs.",
        ),
        PromptTemplate(
            "read_file", "Show me {path} starting at line {start_line}. Use the read_file tool."
        ),
        PromptTemplate("calculate", "Compute {expression} exactly with the calculate tool."),
    )
}


@dataclass(frozen=True)
class Asked:
    """One round's question: the tool it names and the argument values it gives."""

    tool: str
    values: Mapping[str, Any]


def asked_builtin(text: str) -> Asked | None:
    """What a built-in prompt asks, or None for any other text."""
    for template in BUILTIN_PROMPTS.values():
        values = template.asked(text)
        if values is not None:
            return Asked(template.tool, values)
    return None
