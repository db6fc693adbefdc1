"""Load a hypotheses YAML file into a `Spec`, reporting every problem with file:line:col."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from heisenbisect.errors import SpecError
from heisenbisect.hypotheses.model import Spec, study_name_from
from heisenbisect.hypotheses.secrets import spec_redactor
from heisenbisect.redaction import remember

MAX_FILE_BYTES = 1024 * 1024  # a hypotheses file is a page of YAML, not a data set
MAX_NODES = (
    100_000  # YAML nodes after expanding aliases: a "billion laughs" file is refused at once
)


# libyaml's loader where it is built (500 factors parse in ms), else the pure-Python one
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PlainLoader(_BaseLoader):  # type: ignore[valid-type,misc]  # chosen at import
    """YAML as plain data: dates stay strings (``2024-13-45`` is text, not a crash)."""


PlainLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_spec(path: str | Path) -> Spec:
    """Parse and validate ``path``; raise `SpecError` listing all problems at once."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError([f"{path}: cannot read the hypotheses file: {exc.strerror}"]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(
            [f"{path}: not a hypotheses file: larger than {MAX_FILE_BYTES // 1024} KiB"]
        )
    if b"\0" in raw:
        raise SpecError([f"{path}: not a hypotheses file: binary data (NUL bytes)"])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(
            [f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})"]
        ) from None
    spec = parse_spec(text, str(path))
    # what the process prints from now on masks this spec's secrets (`redaction.remembered`)
    remember(spec_redactor(spec))
    return spec


def parse_spec(text: str, filename: str) -> Spec:
    try:
        return _parse(text, filename)
    except RecursionError:
        raise SpecError([f"{filename}: invalid YAML: nested too deeply"]) from None


def _parse(text: str, filename: str) -> Spec:
    try:
        root = yaml.compose(text, Loader=PlainLoader)
    except yaml.MarkedYAMLError as exc:
        raise SpecError([_yaml_problem(exc, filename)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([f"{filename}: invalid YAML: {exc}"]) from None
    if root is None or not isinstance(root, yaml.MappingNode):
        raise SpecError(
            [f"{filename}:1:1: the file must be a YAML mapping with 'target' and 'factors'"]
        )
    if _expanded_size(root, {}) > MAX_NODES:
        raise SpecError(
            [f"{filename}: invalid YAML: aliases expand to more than {MAX_NODES} values"]
        )
    problems = _complex_keys(root, filename) or _duplicate_keys(root, filename, ())
    if problems:
        raise SpecError(problems)
    problems = _duplicate_factor_names(root, filename)
    try:
        data = PlainLoader(text).get_single_data()
    except yaml.MarkedYAMLError as exc:  # a tag that is not plain data (!!python/object, ...)
        raise SpecError([_yaml_problem(exc, filename)]) from None
    if "study" not in data:
        data["study"] = _default_study_name(Path(filename))
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        problems += [
            _format_error(err, root, filename)
            for err in _one_per_union([_untagged(dict(err)) for err in exc.errors()])
            if not (
                problems and err["loc"] == ("factors",)
            )  # duplicates: reported above, precisely
        ]
    if problems:
        raise SpecError(sorted(problems, key=_line_order))
    return spec


def _yaml_problem(exc: yaml.MarkedYAMLError, filename: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = _at(mark, filename) if mark else filename
    return f"{where}: invalid YAML: {exc.problem or exc.context}"


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values ``node`` holds once every alias is expanded (linear: shared nodes memoised)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_NODES + 1  # a recursive alias counts as too big
    if isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(item, sizes) for item in node.value)
    else:
        size = 1
    sizes[id(node)] = size = min(size, MAX_NODES + 1)
    return size


def _complex_keys(node: yaml.Node, filename: str) -> list[str]:
    """Keys that are lists or mappings (``? [a, b]``): not plain data for a spec."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                return [
                    f"{position(key_node, filename)}: invalid YAML: a key must be a plain value, not a list or mapping"
                ]
            problems = _complex_keys(value_node, filename)
            if problems:
                return problems
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            problems = _complex_keys(item, filename)
            if problems:
                return problems
    return []


def _line_order(problem: str) -> tuple[int, int]:
    parts = problem.split(":")
    try:
        return int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return (0, 0)


def _duplicate_factor_names(root: yaml.MappingNode, filename: str) -> list[str]:
    """A factor name used twice, reported at the second use (pydantic sees only the list)."""
    node, _, found = _locate(root, ("factors",))
    if not found or not isinstance(node, yaml.SequenceNode):
        return []
    problems, seen = [], set()
    for i, item in enumerate(node.value):
        name_node, _, has_name = _locate(item, ("name",))
        if not has_name or not isinstance(name_node, yaml.ScalarNode):
            continue
        if name_node.value in seen:
            problems.append(
                f"{position(name_node, filename)}: factors[{i}].name: factor name is used twice, "
                f"got {name_node.value!r}"
            )
        seen.add(name_node.value)
    return problems


def _default_study_name(path: Path) -> str:
    stem = path.stem
    if stem in {"hypotheses", "spec", "study"} and path.resolve().parent.name:
        stem = path.resolve().parent.name
    return study_name_from(stem)


def _duplicate_keys(node: yaml.Node, filename: str, path: tuple[Any, ...]) -> list[str]:
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                problems.append(
                    f"{position(key_node, filename)}: {_dotted(path + (key,))}: key given twice"
                )
            seen.add(key)
            problems += _duplicate_keys(value_node, filename, path + (key,))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _duplicate_keys(item, filename, path + (i,))
    return problems


def _untagged(err: dict) -> dict:
    """Without the kind pydantic names after ``target`` (``target.command.timeout``): not a YAML key."""
    loc = err["loc"]
    return {**err, "loc": loc[:1] + loc[2:]} if loc[:1] == ("target",) and len(loc) > 1 else err


def _one_per_union(errors: list[dict]) -> list[dict]:
    """One error per field, however many types the field accepts.

    Pydantic reports a value that fits none of a union's types once per type (``command: true``:
    "not a list" and "not a string"). When some type went deeper (a list whose item is wrong),
    that is what the user meant and only its errors are kept; otherwise the type mismatches
    become one error naming every type accepted (``expected``).
    """
    groups: dict[tuple, list[dict]] = {}
    kept: list[dict | tuple] = []
    for err in errors:
        tag = next((i for i, part in enumerate(err["loc"]) if _is_type_tag(part)), None)
        if tag is None:
            kept.append(err)
            continue
        field = err["loc"][:tag]
        if field not in groups:
            groups[field] = []
            kept.append(field)
        groups[field].append({**err, "branch": err["loc"][tag], "depth": len(err["loc"]) - tag})
    out: list[dict] = []
    for item in kept:
        if isinstance(item, dict):
            out.append(item)
            continue
        branches = groups[item]
        deepest = max(b["depth"] for b in branches)
        if deepest > 1 or len(branches) == 1:
            out += [b for b in branches if b["depth"] == deepest]
        else:
            out.append({**branches[0], "loc": item, "expected": [b["branch"] for b in branches]})
    return out


def _is_type_tag(part: object) -> bool:
    return isinstance(part, str) and ("[" in part or part in _TYPE_TAGS)


# pydantic's error types for a value of the wrong type, and the type each one wanted
_TYPE_ERRORS = {
    "string_type": "str",
    "list_type": "list",
    "int_type": "int",
    "int_parsing": "int",
    "float_type": "float",
    "float_parsing": "float",
    "bool_type": "bool",
    "bool_parsing": "bool",
    "dict_type": "dict",
}
_TYPE_WORDS = {
    "str": "a string",
    "list": "a list",
    "list[str]": "a list of strings",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "none": "null",
    "dict": "a mapping",
}
# what YAML makes of an unquoted word, for the hint when a string was wanted
_YAML_TYPE_OF = {
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "null",
}


def _type_problem(err: dict, node: yaml.Node | None) -> str | None:
    """``expected a list of strings or a string, got true (YAML reads ... quote it)``, or None
    when ``err`` is not about the value's type."""
    wanted = err.get("expected") or (
        [_TYPE_ERRORS[err["type"]]] if err["type"] in _TYPE_ERRORS else None
    )
    if not wanted:
        return None
    words = [_type_word(w, alone=len(set(wanted)) == 1) for w in dict.fromkeys(wanted)]
    expected = (
        words[0]
        if len(words) == 1
        else ", ".join(words[:-1]) + ("," if len(words) > 2 else "") + " or " + words[-1]
    )
    if not isinstance(node, yaml.ScalarNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
        return f"expected {expected}, got {kind}"
    message = f"expected {expected}, got {node.value!r}"
    yaml_kind = _YAML_TYPE_OF.get(node.tag)
    if yaml_kind and not node.style and any(w in ("str", "list[str]") for w in wanted):
        message += (
            f" (unquoted, YAML reads it as {yaml_kind}; write {_quoted(node.value)} for the text)"
        )
    return message


def _type_word(tag: str, alone: bool) -> str:
    """``str`` -> "a string"; ``literal['both']`` -> "'both'"; ``bool`` -> "true or false" (in a
    list: "true, false")."""
    if tag.startswith("literal[") and tag.endswith("]"):
        return tag[len("literal[") : -1]
    if tag == "bool" and not alone:
        return "true, false"
    return _TYPE_WORDS.get(tag, tag)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'" if '"' in text else f'"{text}"'


def _format_error(err: dict, root: yaml.Node, filename: str) -> str:
    loc = _clean_loc(err["loc"])
    node, key_node, found = _locate(root, loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        bad_key = loc[-1]
        where = position(key_node or node, filename)
        message = f"unknown key {bad_key!r}"
        suggestion = _suggest(str(bad_key), _allowed_keys(loc[:-1]))
        if suggestion:
            message += f"; did you mean {suggestion!r}?"
        return f"{where}: {_dotted(loc)}: {message}"
    if kind == "missing":
        return f"{position(node, filename)}: {_dotted(loc)}: required field is missing"
    if typed := _type_problem(err, node if found else None):
        return f"{position(node, filename)}: {_dotted(loc)}: {typed}"
    message = err["msg"].removeprefix("Value error, ")
    got = ""
    if found and isinstance(node, yaml.ScalarNode):
        got = f", got {node.value!r}"
    elif found and isinstance(node, yaml.SequenceNode) and not node.value:
        got = ", got []"
    return f"{position(node, filename)}: {_dotted(loc)}: {message}{got}"


def _clean_loc(loc: tuple) -> tuple:
    """Drop pydantic's union-branch tags (e.g. 'list[str]', 'str') that are not YAML keys."""
    return tuple(
        part for part in loc if not (isinstance(part, str) and ("[" in part or part in _TYPE_TAGS))
    )


_TYPE_TAGS = {"str", "int", "float", "bool", "none", "list", "dict"}


def _locate(root: yaml.Node, loc: tuple) -> tuple[yaml.Node, yaml.Node | None, bool]:
    """The deepest node along ``loc``, the key node naming it, and whether all of loc was found."""
    node, key_node = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == part:
                    node, key_node = v, k
                    break
            else:
                return node, key_node, False
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node, key_node = node.value[part], None
        else:
            return node, key_node, False
    return node, key_node, True


def _allowed_keys(loc: tuple) -> list[str]:
    """The keys the mapping at ``loc`` may hold (under ``target``, every kind's)."""
    models: list[type[BaseModel]] = [Spec]
    for part in loc:
        if isinstance(part, int):
            continue
        fields = [m.model_fields[part] for m in models if part in m.model_fields]
        models = [model for field in fields for model in _models_in(field.annotation)]
    return list(dict.fromkeys(key for model in models for key in model.model_fields))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in getattr(annotation, "__args__", ()) for model in _models_in(arg)]


def _suggest(word: str, options: list[str]) -> str | None:
    matches = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return matches[0] if matches else None


def position(node: yaml.Node | None, filename: str | Path) -> str:
    """``file:line:col`` of ``node``, the form every spec message starts with; the file alone without one."""
    return str(filename) if node is None else _at(node.start_mark, filename)


def _at(mark: yaml.Mark, filename: str | Path) -> str:
    return f"{filename}:{mark.line + 1}:{mark.column + 1}"


def spec_position(spec_path: str | Path, dotted: str) -> str:
    """`position` of a field's value in a spec file (``commits.bad``), or of the nearest section
    around it that is there; the file alone when the file cannot be read."""
    try:
        root = yaml.compose(Path(spec_path).read_text(), Loader=PlainLoader)
    except (OSError, yaml.YAMLError):
        return str(spec_path)
    return position(None if root is None else _locate(root, tuple(dotted.split(".")))[0], spec_path)


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"
