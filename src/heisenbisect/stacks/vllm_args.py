"""vLLM's launch arguments (``vllm serve --enforce-eager``), read from its own definitions with `ast`.

vLLM builds ``vllm serve``'s parser from dataclasses: ``vllm/engine/arg_utils.py`` adds each
engine option as ``group.add_argument("--enforce-eager", **model_kwargs["enforce_eager"])``,
where ``model_kwargs = get_kwargs(ModelConfig)`` derives the argparse keywords from the config
class's field (``vllm/config/*.py``): a field typed ``bool`` (or ``bool | None``) becomes
``--x/--no-x`` (``argparse.BooleanOptionalAction``), defaulting to the field's default. The
frontend's options are every field of ``BaseFrontendArgs``/``FrontendArgs``
(``vllm/entrypoints/common/cli_args.py``; ``vllm/entrypoints/openai/cli_args.py`` before), the
same way. A few options are spelled out with ``action=`` as SGLang's are.
"""

from __future__ import annotations

import ast

from heisenbisect.stacks.flags import LaunchFlag
from heisenbisect.stacks.python_flags import parse_launch_flags
from heisenbisect.stacks.sources import PackageFiles, SourceFile

ARG_UTILS = "vllm/engine/arg_utils.py"
FRONTEND_FILES = ("vllm/entrypoints/common/cli_args.py", "vllm/entrypoints/openai/cli_args.py")
FRONTEND_CLASSES = ("BaseFrontendArgs", "FrontendArgs")
CONFIG_FOLDER = "vllm/config/"
Field = tuple[ast.expr, ast.expr | None, int, str]  # annotation, default, line, its docstring


def vllm_launch_flags(files: PackageFiles) -> list[LaunchFlag]:
    """Every boolean option of ``vllm serve`` in ``files``, each once: engine options, then the frontend's."""
    source = files.require(ARG_UTILS)
    configs = _config_fields(files)
    flags: dict[str, LaunchFlag] = {}
    engine = sorted(
        [*parse_launch_flags(source), *_kwargs_flags(source, configs)], key=lambda f: _line(f.where)
    )
    for flag in [*engine, *_frontend_flags(files)]:
        flags.setdefault(flag.option, flag)
    return list(flags.values())


def vllm_options(files: PackageFiles) -> frozenset[str]:
    """Every option ``vllm serve`` takes (booleans' ``--no-x`` too), for checking a spec's flags."""
    source = files.require(ARG_UTILS)
    options = set(_add_argument_options(source))
    for path in FRONTEND_FILES:
        if (frontend := files.get(path)) is not None:
            options.update(_add_argument_options(frontend))
            fields = _class_fields(ast.parse(frontend.text), FRONTEND_CLASSES)
            options.update("--" + name.replace("_", "-") for name in fields)
    for flag in vllm_launch_flags(files):
        options.update(o for level in flag.levels for o in level)
    return frozenset(options)


def _kwargs_flags(source: SourceFile, configs: dict[str, dict[str, Field]]) -> list[LaunchFlag]:
    """``add_argument("--x", **cls_kwargs["field"])`` where the config field is a boolean."""
    tree = ast.parse(source.text, filename=source.where)
    kwargs_class = {}  # model_kwargs -> ModelConfig
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and _name(node.value.func) == "get_kwargs"
            and node.value.args
        ):
            kwargs_class[node.targets[0].id] = _name(node.value.args[0])
    engine = _class_fields(tree, ("EngineArgs", "AsyncEngineArgs"))
    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            continue
        options = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        long = [o for o in options if o.startswith("--")]
        starred = [k.value for k in node.keywords if k.arg is None]
        if not long or not starred:
            continue
        subscript, overrides = _kwargs_of(starred[0])
        if subscript is None:
            continue
        holder, key = _name(subscript.value), _constant(subscript.slice)
        if not isinstance(key, str):
            continue
        field = configs.get(kwargs_class.get(holder, ""), {}).get(key) or engine.get(key)
        if field is None or not _is_bool(field[0]):
            continue
        default_node = overrides.get("default", field[1])
        default = _constant(default_node) if default_node is not None else None
        found.append(
            LaunchFlag(
                long[0],
                default if isinstance(default, bool) else None,
                "boolean_optional",
                f"{ARG_UTILS}:{node.lineno}",
                field[3],
            )
        )
    return found


def _kwargs_of(node: ast.expr) -> tuple[ast.Subscript | None, dict[str, ast.expr]]:
    """``X["f"]``, or ``{**X["f"], "default": None}`` (the subscript and the keys it overrides)."""
    if isinstance(node, ast.Subscript):
        return node, {}
    if isinstance(node, ast.Dict):
        base = next(
            (
                v
                for k, v in zip(node.keys, node.values)
                if k is None and isinstance(v, ast.Subscript)
            ),
            None,
        )
        overrides = {
            k.value: v
            for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        }
        return base, overrides
    return None, {}


def _frontend_flags(files: PackageFiles) -> list[LaunchFlag]:
    for path in FRONTEND_FILES:
        if (source := files.get(path)) is None:
            continue
        fields = _class_fields(ast.parse(source.text, filename=source.where), FRONTEND_CLASSES)
        flags = []
        for name, (annotation, default_node, line, help_text) in fields.items():
            if _is_bool(annotation):
                default = _constant(default_node) if default_node is not None else None
                flags.append(
                    LaunchFlag(
                        "--" + name.replace("_", "-"),
                        default if isinstance(default, bool) else None,
                        "boolean_optional",
                        f"{path}:{line}",
                        help_text,
                    )
                )
        return flags
    return []


def _config_fields(files: PackageFiles) -> dict[str, dict[str, Field]]:
    """``{ConfigClass: {field: (annotation, default, line)}}`` over ``vllm/config/*.py``."""
    out: dict[str, dict[str, Field]] = {}
    for source in files.under(CONFIG_FOLDER):
        tree = ast.parse(source.text, filename=source.where)
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            out[cls.name] = _class_fields(tree, (cls.name,))
    return out


def _class_fields(tree: ast.Module, names: tuple[str, ...]) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in names):
        for stmt, after in zip(cls.body, [*cls.body[1:], None]):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                doc = _constant(after.value) if isinstance(after, ast.Expr) else None
                help_text = " ".join(doc.split()) if isinstance(doc, str) else ""
                fields.setdefault(
                    stmt.target.id, (stmt.annotation, stmt.value, stmt.lineno, help_text)
                )
    return fields


def _line(where: str) -> int:
    return int(where.rsplit(":", 1)[1])


def _add_argument_options(source: SourceFile) -> list[str]:
    tree = ast.parse(source.text, filename=source.where)
    return [
        a.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "add_argument"
        for a in node.args
        if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")
    ]


def _is_bool(annotation: ast.expr) -> bool:
    """``bool``, ``bool | None``, ``Optional[bool]``: what vLLM turns into ``--x/--no-x``."""
    return ast.unparse(annotation).replace(" ", "") in (
        "bool",
        "bool|None",
        "None|bool",
        "Optional[bool]",
    )


def _constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""
