"""The flag registry types every stack's readers return (a boolean environment flag, a boolean
launch argument), and the syntax-tree helpers their environment readers share."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Literal

Style = Literal["store_true", "store_false", "boolean_optional"]
TRUE_WORDS = ("true", "1", "yes", "y")
FALSE_WORDS = ("false", "0", "no", "n")


@dataclass(frozen=True)
class EnvFlag:
    name: str
    default: bool | None  # None: unset by default, or computed at run time (see default_source)
    default_source: str  # as written in the registry, e.g. "True", "None", "_default_hip"
    line: int
    comment: str = ""  # the comment lines right above its declaration

    @property
    def default_text(self) -> str:
        if self.default is not None:
            return "true" if self.default else "false"
        if self.default_source == "None":
            return "unset"
        if self.default_source.isidentifier():
            return f"{self.default_source}() at run time"
        return f"computed at run time: {self.default_source}"

    @property
    def levels(self) -> list[bool | None]:
        """The factor levels: the default first, then the other value(s)."""
        if self.default is None:
            return [None, True, False]
        return [self.default, not self.default]


@dataclass(frozen=True)
class LaunchFlag:
    option: str  # --disable-radix-cache
    default: (
        bool | None
    )  # None: unset (a BooleanOptionalAction's "let the stack decide") or not a literal
    style: Style
    where: str  # file:line inside the package, e.g. arg_groups/fields/exec_.py:61
    help: str = ""
    deprecated: bool = False

    @property
    def name(self) -> str:
        """The factor name: the option without dashes, e.g. disable_radix_cache."""
        return self.option.lstrip("-").replace("-", "_")

    @property
    def default_text(self) -> str:
        return "unset" if self.default is None else ("true" if self.default else "false")

    @property
    def levels(self) -> list[list[str]]:
        """Factor levels: the flag left out (the stack's default) first, then each way to set it."""
        if self.style != "boolean_optional":
            return [[], [self.option]]
        negative = "--no-" + self.option[2:]
        if self.default is None:
            return [[], [self.option], [negative]]
        return [[], [negative] if self.default else [self.option]]


def literal_default(node: ast.expr | None) -> tuple[bool | None, str]:
    """(value, as written) of a flag's declared default: a bool, None, or a boolean word
    (``"1"``, ``"false"``); anything else is computed at run time (None, its source)."""
    if node is None:
        return None, "None"
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, type(None))):
        return node.value, repr(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        value = node.value.strip().lower()
        if value in TRUE_WORDS + FALSE_WORDS:
            return value in TRUE_WORDS, repr(node.value)
    return None, ast.unparse(node)


def comment_above(lines: list[str], lineno: int, rule_ends: bool) -> str:
    """The comment block right above line ``lineno``, without section rules (``# ====``); with
    ``rule_ends`` a rule ends the block, else it is skipped (rules of ``= title =`` count too)."""
    comment: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        text = lines[i].strip().lstrip("#").strip()
        if rule_ends and text and set(text) == {"="}:
            break
        if text and (rule_ends or not text.startswith("=")):
            comment.insert(0, text)
        i -= 1
    return " ".join(comment)
