"""Whether a received argument value says what the prompt asked, read generously.

A model may write the asked value another way: ``"paris"`` or ``"Paris, France"`` for Paris,
``"(12+30)*4"`` or ``"168"`` for ``(12 + 30) * 4``, ``3`` or ``"3"`` for three. Each of those
is the same value; only a value none of these readings reconciles counts as wrong. This is the
check's false-alarm guard: another session's value (``Tokyo`` for ``Paris``, ``src/main.py``
for ``README.md``) fails every reading.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any

MAX_EXPRESSION_CHARS = 200
_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def same_value(asked: Any, received: Any) -> bool:
    """Whether ``received`` (a JSON value) gives the value ``asked`` (text or a JSON value)."""
    if isinstance(received, bool) or isinstance(asked, bool):
        return str(received).lower() == str(asked).lower()
    asked_text, received_text = _normal(asked), _normal(received)
    if asked_text == received_text or asked_text.replace(" ", "") == received_text.replace(" ", ""):
        return True
    asked_number, received_number = arithmetic(asked_text), arithmetic(received_text)
    if asked_number is not None and received_number is not None:
        return math.isclose(asked_number, received_number, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(received, str) and asked_text and asked_number is None:
        # "Paris, France" for Paris: the asked words, whole, inside a longer value
        return re.search(rf"(?<!\w){re.escape(asked_text)}(?!\w)", received_text) is not None
    return False


def arithmetic(text: str) -> float | None:
    """The value of a plain arithmetic expression (numbers, + - * /, parentheses), else None."""
    if not text or len(text) > MAX_EXPRESSION_CHARS:
        return None
    try:
        tree = ast.parse(text.replace("×", "*").replace("÷", "/"), mode="eval")
        return _evaluate(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None


def _evaluate(node: ast.AST) -> float:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_evaluate(node.operand)))
    raise ValueError("not plain arithmetic")


def _normal(value: Any) -> str:
    """A value as comparable text: case folded, spaces collapsed, quotes around it dropped."""
    text = value if isinstance(value, str) else str(value)
    return " ".join(text.casefold().split()).strip("'\"` ")
