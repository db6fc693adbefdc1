"""vLLM's boolean environment flags, read from ``vllm/envs.py`` by parsing it.

``envs.py`` declares every variable twice: typed, with its default, in an ``if TYPE_CHECKING:``
block (``VLLM_USE_FASTOKENS: bool = False``), and as the function that reads it in the
``environment_variables`` dict, with the explanation in comments above the key. A flag is a
variable typed ``bool`` (or ``bool | None``: unset by default) that the dict reads; its
default is what the reading function returns with the variable unset, where that function is a
plain expression over ``os.getenv(NAME, "literal")`` (worked out from the syntax tree, never run),
else the literal in the typed block; the two disagree now and then (``VLLM_SKIP_P2P_CHECK``
is typed ``False`` but read as ``os.getenv(..., "1") == "1"``), and the reading code wins.
vLLM reads them as ``"1"``/``"0"``, which is what heisenbisect passes for true/false.
"""

from __future__ import annotations

import ast

from heisenbisect.stacks.flags import EnvFlag, comment_above, literal_default
from heisenbisect.stacks.sources import PackageFiles, SourceError, SourceFile

ENVS = "vllm/envs.py"
REGISTRY = "environment_variables"


def vllm_env_flags(files: PackageFiles) -> tuple[list[EnvFlag], str]:
    """(flags, where envs.py was read) for the vLLM in ``files``."""
    source = files.require(ENVS)
    return parse_envs(source), source.where


def parse_envs(source: SourceFile) -> list[EnvFlag]:
    """Every boolean flag of ``envs.py``, in the order the registry reads them."""
    tree = ast.parse(source.text, filename=source.where)
    typed = _typed_declarations(tree)
    lines = source.text.splitlines()
    flags = []
    for key, reader in _registry(tree):
        name = str(key.value)  # `_registry` keeps string keys only
        declared = typed.get(name)
        if declared is None:
            continue
        annotation, default_node = declared
        if not _is_bool(annotation):
            continue
        default, text = literal_default(default_node)
        comment = comment_above(lines, key.lineno, rule_ends=False)
        read = unset_value(reader, name)
        if isinstance(read, bool) and read != default:
            note = f"(typed default {text}, but read as {read} when unset)"
            default, text, comment = read, repr(read), f"{comment} {note}".strip()
        flags.append(EnvFlag(name, default, text, key.lineno, comment))
    return flags


_UNKNOWN = object()


def unset_value(reader: ast.expr, name: str) -> object:
    """What a reader such as ``lambda: os.getenv(NAME, "0") == "1"`` returns with NAME unset.

    Works on the syntax tree: ``os.getenv``/``os.environ.get`` with a literal default,
    ``bool``/``int``/``str``, ``.strip()``/``.lower()``/``.upper()``, comparisons, ``and``/
    ``or``/``not``. Anything else (a helper function, another variable) gives ``_UNKNOWN``.
    """
    node = reader.body if isinstance(reader, ast.Lambda) else reader

    def value(n: ast.expr) -> object:
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Call):
            func = ast.unparse(n.func)
            if func in ("os.getenv", "os.environ.get") and n.args and _const(n.args[0]) == name:
                return value(n.args[1]) if len(n.args) > 1 else None
            if func in ("bool", "int", "str") and len(n.args) == 1:
                inner = value(n.args[0])
                try:
                    return (
                        _UNKNOWN
                        if inner is _UNKNOWN
                        else {"bool": bool, "int": int, "str": str}[func](inner)
                    )
                except (TypeError, ValueError):
                    return _UNKNOWN
            if (
                isinstance(n.func, ast.Attribute)
                and n.func.attr in ("strip", "lower", "upper")
                and not n.args
            ):
                inner = value(n.func.value)
                return getattr(inner, n.func.attr)() if isinstance(inner, str) else _UNKNOWN
            return _UNKNOWN
        if isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            items = [value(e) for e in n.elts]
            return _UNKNOWN if _UNKNOWN in items else items
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            inner = value(n.operand)
            return _UNKNOWN if inner is _UNKNOWN else not inner
        if isinstance(n, ast.BoolOp):
            items = [value(v) for v in n.values]
            if _UNKNOWN in items:
                return _UNKNOWN
            return all(items) if isinstance(n.op, ast.And) else any(items)
        if isinstance(n, ast.Compare) and len(n.ops) == 1:
            left, right = value(n.left), value(n.comparators[0])
            if _UNKNOWN in (left, right):
                return _UNKNOWN
            op = n.ops[0]
            if isinstance(op, (ast.Eq, ast.NotEq)):
                return (left == right) == isinstance(op, ast.Eq)
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, list):
                return (left in right) == isinstance(op, ast.In)
        return _UNKNOWN

    return value(node)


def _const(node: ast.expr) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _typed_declarations(tree: ast.Module) -> dict[str, tuple[ast.expr, ast.expr | None]]:
    """name -> (annotation, default) of the ``if TYPE_CHECKING:`` block."""
    out: dict[str, tuple[ast.expr, ast.expr | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    out[stmt.target.id] = (stmt.annotation, stmt.value)
    return out


def _registry(tree: ast.Module) -> list[tuple[ast.Constant, ast.expr]]:
    """(key, reader) pairs of the ``environment_variables`` dict."""
    for node in tree.body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (
                node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            )
        )
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(target, ast.Name) and target.id == REGISTRY and isinstance(value, ast.Dict):
            return [
                (k, v)
                for k, v in zip(value.keys, value.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            ]
    raise SourceError(
        f"envs.py has no `{REGISTRY} = {{...}}` dict: not a vLLM envs.py this parser knows"
    )


def _is_bool(annotation: ast.expr) -> bool:
    text = ast.unparse(annotation).replace(" ", "")
    return text in ("bool", "bool|None", "None|bool", "Optional[bool]")
