"""Boolean launch flags declared in Python source, read with `ast` (never imported).

Two shapes, as serving stacks declare them:
- ``parser.add_argument("--x", action="store_true", ...)`` calls (``store_false`` and
  ``argparse.BooleanOptionalAction``, or a subclass of it, too);
- dataclass fields ``x: A[bool, "help"] = False`` (or ``Annotated[Optional[bool], Arg(...)]``)
  that a helper turns into ``--x`` (``store_true``, or ``--x/--no-x`` with
  ``action=argparse.BooleanOptionalAction``); ``Arg(no_cli=True)`` fields have no flag.
"""

from __future__ import annotations

import ast

from heisenbisect.stacks.flags import LaunchFlag, Style
from heisenbisect.stacks.sources import SourceFile


def parse_launch_flags(source: SourceFile, short_prefix: str = "") -> list[LaunchFlag]:
    """The boolean flags one file declares: its add_argument calls and its annotated fields; each
    flag's ``where`` names the file without ``short_prefix``."""
    tree = ast.parse(source.text, filename=source.where)
    short = source.path.removeprefix(short_prefix)
    defaults = _class_defaults(tree)
    found: list[tuple[int, LaunchFlag]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            flag = _from_add_argument(node, short, defaults)
            if flag:
                found.append((node.lineno, flag))
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    flag = _from_field(stmt, short)
                    if flag:
                        found.append((stmt.lineno, flag))
    return [flag for _, flag in sorted(found, key=lambda pair: pair[0])]


def _from_add_argument(
    call: ast.Call, short: str, defaults: dict[str, object]
) -> LaunchFlag | None:
    options = [
        a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
    ]
    long = [o for o in options if o.startswith("--")]
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    action = keywords.get("action")
    if not long or action is None:
        return None
    style, deprecated = _style(action)
    if style is None:
        return None
    implied = {"store_true": False, "store_false": True, "boolean_optional": None}[style]
    default = _literal_bool(keywords["default"], defaults) if "default" in keywords else implied
    help_text = _help(keywords.get("help"))
    return LaunchFlag(
        long[0],
        default,
        style,
        f"{short}:{call.lineno}",
        help_text,
        deprecated or _says_deprecated(help_text),
    )


def _style(action: ast.expr) -> tuple[Style | None, bool]:
    if isinstance(action, ast.Constant):
        styles: dict[object, Style] = {"store_true": "store_true", "store_false": "store_false"}
        return styles.get(action.value), False
    name = (
        action.attr
        if isinstance(action, ast.Attribute)
        else action.id
        if isinstance(action, ast.Name)
        else ""
    )
    if name.endswith("BooleanOptionalAction"):
        return "boolean_optional", name != "BooleanOptionalAction"
    if name.endswith("StoreTrueAction"):
        return "store_true", "Deprecated" in name
    return None, False


def _annotated_parts(annotation: ast.expr) -> list[ast.expr] | None:
    """The type and metadata of an ``A[type, ...]`` / ``Annotated[type, ...]`` annotation; None for any other."""
    if not (
        isinstance(annotation, ast.Subscript) and _name(annotation.value) in ("A", "Annotated")
    ):
        return None
    return annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]


def _from_field(stmt: ast.AnnAssign, short: str) -> LaunchFlag | None:
    """A field annotated ``A[bool, ...]`` / ``Annotated[Optional[bool], Arg(...)]``."""
    parts = _annotated_parts(stmt.annotation)
    if parts is None or len(parts) < 2 or not _is_bool_type(parts[0]):
        return None
    if not isinstance(stmt.target, ast.Name):  # ``self.x: bool``: not a field of the class
        return None
    style: Style = "store_true"
    help_text, option = "", "--" + stmt.target.id.replace("_", "-")
    for meta in parts[1:]:
        if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
            help_text = meta.value
        elif isinstance(meta, ast.Call) and _name(meta.func) == "Arg":
            keywords = {k.arg: k.value for k in meta.keywords if k.arg}
            if _literal(keywords.get("no_cli")) is True:
                return None
            if "action" in keywords:
                action_style, _ = _style(keywords["action"])
                if action_style is None:
                    return None  # a custom action: not a plain boolean
                style = action_style
            cli_name = _literal(keywords.get("cli_name"))
            option = cli_name if isinstance(cli_name, str) else option
            help_text = _help(keywords.get("help")) or help_text
    default = _literal_bool(stmt.value, {}) if stmt.value is not None else None
    if style == "store_true" and default is None and stmt.value is None:
        default = False
    return LaunchFlag(
        option, default, style, f"{short}:{stmt.lineno}", help_text, _says_deprecated(help_text)
    )


def _says_deprecated(help_text: str) -> bool:
    """ "Deprecated. Use ..." or "(Deprecated: use ...)", as SGLang words it."""
    return "deprecated" in help_text[:16].lower()


def _is_bool_type(node: ast.expr) -> bool:
    """``bool``, ``Optional[bool]``, ``bool | None``."""
    if _name(node) == "bool":
        return True
    if isinstance(node, ast.Subscript) and _name(node.value) == "Optional":
        return _name(node.slice) == "bool"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = {_name(node.left), _literal(node.right) is None and "None" or _name(node.right)}
        return sides == {"bool", "None"}
    return False


def _class_defaults(tree: ast.Module) -> dict[str, object]:
    """Literal defaults of class fields (``ServerArgs.enable_x``, as old add_argument calls name them)."""
    out: dict[str, object] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.value is not None
            ):
                out[f"{cls.name}.{stmt.target.id}"] = _literal(stmt.value)
    return out


def _literal_bool(node: ast.expr, defaults: dict[str, object]) -> bool | None:
    value = _literal(node)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        value = defaults.get(f"{node.value.id}.{node.attr}")
    return value if isinstance(value, bool) else None


def _literal(node: ast.expr | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _help(node: ast.expr | None) -> str:
    if node is None:
        return ""
    value = _literal(node)
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, placeholders as {...}
        return " ".join(
            "".join(
                str(v.value) if isinstance(v, ast.Constant) else "{...}" for v in node.values
            ).split()
        )
    return ""


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    return ""


def field_option(stmt: ast.stmt) -> str | None:
    """The option an ``A[type, ...]`` field becomes, or None (not such a field, or ``no_cli``)."""
    if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
        return None
    parts = _annotated_parts(stmt.annotation)
    if parts is None:
        return None
    option = "--" + stmt.target.id.replace("_", "-")
    for meta in parts[1:]:
        if isinstance(meta, ast.Call) and _name(meta.func) == "Arg":
            keywords = {k.arg: k.value for k in meta.keywords if k.arg}
            if _literal(keywords.get("no_cli")) is True:
                return None
            cli_name = _literal(keywords.get("cli_name"))
            option = cli_name if isinstance(cli_name, str) else option
    return option
