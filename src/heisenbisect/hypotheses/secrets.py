"""The secrets a spec holds: what `redaction.Redactor` must replace in everything of its study.

Found in the target's section (its ``env``, its command, a server's ``server_args``, ``launch``
and ``env``: a secret-looking name or flag, or one listed in ``spec.secrets``) and in the
environment heisenbisect runs in, which every trial inherits (a target that prints its
environment prints those too).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

from pydantic import BaseModel

from heisenbisect.hypotheses.model import Spec
from heisenbisect.redaction import Redactor, env_secrets, tree_secrets


def spec_redactor(spec: Spec, environ: Mapping[str, str] | None = None) -> Redactor:
    """The redactor of ``spec``'s study; with ``environ``, its secrets too."""
    target = cast(BaseModel, spec.target)  # each kind of section is a model
    redactor = dump_redactor(target.model_dump(mode="json"), spec.secrets)
    if environ is not None:
        redactor = redactor.with_known(env_secrets(environ, spec.secrets))
    return redactor


def dump_redactor(dump: dict, names: Iterable[str] = ()) -> Redactor:
    """The redactor of a dumped target section (as identities store it)."""
    names = tuple(names)
    return Redactor().with_known(tree_secrets(dump, names), names)


def hashed_secrets(dump: dict, names: Iterable[str] = ()) -> dict:
    """A dumped target section as an identity keeps it: each secret as its hash, never its value."""
    return dump_redactor(dump, names).value(dump, hashed=True)
