"""docs/spec.md documents every key of the hypotheses file as the model defines it.

The model (`hypotheses/model.py`) is walked field by field, down every nested mapping and list of
mappings; each key must have its row in docs/spec.md, with the model's default, every choice of a
Literal, every bound (ge/gt/le/lt, lengths, patterns) and the YAML type words of its annotation.
A key added to the model, or a default changed, without the page fails here.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from pathlib import Path

import annotated_types
import pytest
from pydantic import BaseModel

from heisenbisect.hypotheses.model import Spec

DOC = Path(__file__).resolve().parents[2] / "docs" / "spec.md"
# required in the model, filled in by the loader when the YAML leaves it out
LOADER_DEFAULTS = {"study": "the file's name"}
TYPE_WORDS = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "mapping", list: "list",
              type(None): "null"}


@functools.cache
def documented_rows() -> dict[str, list[str]]:
    """``{key: [type, default, meaning]}`` from every table row whose first cell is a `key`."""
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 4 and re.fullmatch(r"`[A-Za-z_][\w.\[\]]*`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def arms(annotation) -> list:
    """The members of a union (``X | None``, ``Union[...]``, a tagged union), else the annotation
    itself; ``Annotated[X, ...]`` is X."""
    if typing.get_origin(annotation) is typing.Annotated:
        return arms(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for arm in typing.get_args(annotation) for a in arms(arm)]
    return [annotation]


def is_model(annotation) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def model_keys(model: type[BaseModel] = Spec, prefix: str = "") -> dict[str, list]:
    """``{dotted key: [FieldInfo, ...]}`` for every field reachable from ``model``, as YAML spells
    it. A key several models of a union declare (the kinds of a tagged target) is one key."""
    keys: dict[str, list] = {}
    for name, info in model.model_fields.items():
        path = f"{prefix}{info.alias or name}"
        keys.setdefault(path, []).append(info)
        for arm in arms(info.annotation):
            if typing.get_origin(arm) is list:
                arm = next((i for i in arms(typing.get_args(arm)[0]) if is_model(i)), None)
                below = path + "[]."
            else:
                below = path + "."
            if is_model(arm):
                for key, infos in model_keys(arm, below).items():
                    keys.setdefault(key, []).extend(infos)
    return keys


def rendered(value: object) -> str:
    """A default as the page writes it: YAML's words, numbers without a trailing .0."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, BaseModel):  # a nested mapping left out: every key at its default
        return "{}"
    if value == "":
        return '""'
    return str(value)  # [] and {} print as YAML writes them


def default_of(info) -> object:
    if info.default_factory is not None:
        return info.default_factory()
    return info.default


def type_words(annotation) -> set[str]:
    """The words the type cell must hold: one per member of the annotation (a lone Literal: "one of")."""
    members = [a for a in arms(annotation) if a is not type(None)]
    words = {"null"} if len(members) < len(arms(annotation)) else set()
    for arm in members:
        origin = typing.get_origin(arm) or arm
        if origin is typing.Literal:
            words |= {"one of"} if len(members) == 1 else set()  # beside others, its choices are checked
        elif is_model(arm):
            words.add("mapping")
        elif origin in TYPE_WORDS:
            words.add(TYPE_WORDS[origin])
    return words


def bounds(info) -> list[str]:
    """Every constraint of the field as the page words it."""
    said = []
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge):
            said.append(f">= {meta.ge:g}")
        elif isinstance(meta, annotated_types.Gt):
            said.append(f"> {meta.gt:g}")
        elif isinstance(meta, annotated_types.Le):
            said.append(f"<= {meta.le:g}")
        elif isinstance(meta, annotated_types.Lt):
            said.append(f"< {meta.lt:g}")
        elif isinstance(meta, annotated_types.MinLen):
            said.append(f"at least {meta.min_length}")
        elif isinstance(meta, annotated_types.MaxLen):
            said.append(f"at most {meta.max_length}")
        elif getattr(meta, "pattern", None):
            said.append(f"`{meta.pattern}`")
    return said


KEYS = model_keys()


def test_the_walk_reaches_every_section_of_the_model():
    """A guard on the walk itself: nested mappings and lists of mappings are reached."""
    assert {"target.timeout", "target.sglang.workload.stream", "factors[].levels", "statistics.strategy",
            "execution.trials_per_gpu", "commits.build_timeout", "amplify.knobs[].choices", "output"} <= set(KEYS)


@pytest.mark.parametrize("path", sorted(KEYS))
def test_every_key_is_documented_with_its_type_default_choices_and_bounds(path):
    infos = KEYS[path]
    rows = documented_rows()
    assert path in rows, f"docs/spec.md has no row for `{path}`"
    type_cell, default_cell, meaning = rows[path]
    row = " | ".join(rows[path])

    missing_words = {w for info in infos for w in type_words(info.annotation) if w not in type_cell}
    assert not missing_words, f"`{path}`: the type cell {type_cell!r} does not say {sorted(missing_words)}"

    # a key some kind of a union may leave out is optional: its default is what leaving it out means
    defaults = {rendered(default_of(info)) for info in infos if not info.is_required()}
    if not defaults:
        expected = LOADER_DEFAULTS.get(path, "required")
        assert default_cell == expected, f"`{path}` is required in the model; the page says {default_cell!r}"
    else:
        assert len(defaults) == 1, f"`{path}` has several defaults in the model: {sorted(defaults)}"
        want = f"`{defaults.pop()}`"
        assert default_cell.startswith(want), f"`{path}` defaults to {want} in the model; the page says {default_cell!r}"

    for info in infos:
        for arm in arms(info.annotation):
            if typing.get_origin(arm) is typing.Literal:
                for choice in typing.get_args(arm):
                    assert f"`{choice}`" in row, f"`{path}`: the choice `{choice}` is not on its row"
        for bound in bounds(info):
            if bound.startswith("`"):
                found = bound in row
            else:  # "> 0" is not said by "> 0.5"
                found = re.search(re.escape(bound) + r"(?!\.?\d)", row, re.IGNORECASE) is not None
            assert found, f"`{path}`: the constraint {bound!r} is not on its row"


def test_no_documented_key_is_unknown_to_the_model():
    """A row for a key the model does not have would send a user to an error."""
    assert sorted(set(documented_rows()) - set(KEYS)) == []
