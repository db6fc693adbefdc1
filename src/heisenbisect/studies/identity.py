"""A study's stored identity covers what changes the experiment, never the model's shape.

Every part that comes from the spec's model (the target, the factors, amplify's knobs, commit
priors) is dumped with its defaults left out (`canonical`), so a key a later release adds at its
default leaves every stored study's identity, hence its fingerprint, as it was. The rule has a
version, recorded in the store's meta (`store.IDENTITY_VERSION_KEY`); a store bound under an
earlier rule is re-derived under this one (`RULE.upgrade`) through the *current* model's
validation, so a key since renamed or turned into an alias compares as what it now means.

To change the rule, bump `VERSION` and add the step from the previous version to `_STEPS`. A
changed default is such a change: a stored part that left the key out meant the old default, so
the step writes that default in (otherwise the store would resume trials of another experiment).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

from heisenbisect.hypotheses.model import CommitPrior, Factor, Knob, Spec
from heisenbisect.hypotheses.secrets import hashed_secrets
from heisenbisect.hypotheses.targets import Target
from heisenbisect.layout import target_folder
from heisenbisect.targets.preflight import PYTHON, python_script

VERSION = 3
"""1: raw model dumps, every key at its default included (stores written before this rule);
2: model parts dumped with their defaults left out; 3: the target's secrets as their hashes."""

UNSTORED = {"description"}  # a factor's or knob's prose: editing it changes no experiment
_TARGET = TypeAdapter(Target)


def canonical(model: BaseModel, exclude: set[str] | None = None) -> dict:
    """``model`` as identities store it: JSON values, keys at their defaults left out."""
    return model.model_dump(mode="json", exclude_defaults=True, exclude=exclude)


def target_identity(spec: Spec) -> dict:
    """The target as identities store it: canonical, each secret (`redaction`) as its hash."""
    return hashed_secrets(canonical(spec.target), spec.secrets)


def spec_identity(spec: Spec, spec_dir: Path | None = None) -> dict:
    """What makes stored trials comparable: the target, its own files, the factors' levels, each
    without the keys left at their defaults, the target's secrets as their hashes
    (`studies.identity`).

    With ``spec_dir``, a hash of the target's files (the script of a ``python SCRIPT``
    command inside the spec's folder, and ``target.files``): an edited target is a
    different experiment, refused like a changed factor.
    """
    identity = {
        "target": target_identity(spec),
        "factors": [canonical(f, UNSTORED) for f in spec.factors],
    }
    if spec_dir is not None:
        identity["target_files"] = target_files_hash(spec, spec_dir)
    return identity


def target_files_hash(spec: Spec, spec_dir: Path) -> dict[str, str]:
    """``{path relative to the spec's folder: sha256}`` of the target's own files."""
    root = spec_dir.resolve()
    cwd = target_folder(spec, spec_dir)
    argv = spec.target.argv
    files: set[Path] = set()
    if argv and PYTHON.match(Path(argv[0]).name) and (script := python_script(argv[1:])):
        files.add((cwd / script).resolve())
    for pattern in spec.target.files:
        files.update(p.resolve() for p in root.glob(pattern) if p.is_file())
    hashes = {}
    for path in sorted(files):
        if path.is_file() and path.is_relative_to(root):
            hashes[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return hashes


def _from_1(stored: dict) -> dict:
    """A version-1 identity under version 2: each model part validated by the current model (a
    ValidationError, a ValueError, when it no longer validates), then dumped canonically."""
    parts = dict(stored)
    if "target" in parts:
        parts["target"] = canonical(_TARGET.validate_python(parts["target"]))
    if "factors" in parts:
        parts["factors"] = [canonical(Factor.model_validate(f), UNSTORED) for f in parts["factors"]]
    if "knobs" in parts:
        parts["knobs"] = [canonical(Knob.model_validate(k), UNSTORED) for k in parts["knobs"]]
    if "priors" in parts:
        parts["priors"] = [canonical(CommitPrior.model_validate(p)) for p in parts["priors"]]
    return parts


def _from_2(stored: dict) -> dict:
    """A version-2 identity under version 3: the target's secrets (by their names and shapes;
    ``spec.secrets`` did not exist then) replaced by their hashes."""
    parts = dict(stored)
    if isinstance(parts.get("target"), dict):
        parts["target"] = hashed_secrets(parts["target"])
    return parts


# version -> the step that re-derives an identity of that version under the next one
_STEPS: dict[int, Callable[[dict], dict]] = {1: _from_1, 2: _from_2}


class IdentityRule:
    """The rule `store.Store.bind` records and upgrades by (`store.IdentityRule`)."""

    version = VERSION

    @staticmethod
    def upgrade(stored: dict, version: int) -> dict:
        """``stored``, an identity bound under ``version``, re-derived under this rule; a
        ValueError when one of its parts no longer validates."""
        for step in range(version, VERSION):
            stored = _STEPS[step](stored)
        return stored


RULE = IdentityRule()
