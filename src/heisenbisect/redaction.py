"""Secrets out of everything heisenbisect prints or writes: one rule, used everywhere.

A spec's ``target.env``, its command, a server's arguments and launch template, and the
environment heisenbisect runs in may hold an API key or a Hugging Face token; reports, the
paste made for a public issue, results.json, the store's identity, trial logs and the live
output would otherwise carry it. Three things are replaced by ``<redacted:NAME>``:

- the value of every *known* secret: an environment entry or a command-line flag whose name
  looks secret (`looks_secret`: a ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``CREDENTIAL``
  or ``AUTHORIZATION`` part) or is listed in ``spec.secrets``, wherever it occurs (values of
  at least `MIN_KNOWN` characters; a shorter one only beside its name);
- a value shaped like a known token (``hf_...``, ``sk-...``, ``ghp_...``, a JWT, a bearer
  token), wherever it occurs;
- a value written beside a secret-looking name (``NAME=v``, ``"name": "v"``, ``--name v``; in
  free text a bare ``KEY`` part needs a qualifier such as ``API_KEY``).

Names are matched by parts (``OPENAI_API_KEY`` has ``KEY``; ``max_tokens`` has no ``TOKEN``
part), so the counts and metrics of a report are never taken for secrets. The store keeps a
secret's hash (`Redactor.value` with ``hashed=True``), so an identity still tells two keys
apart without holding either. Pure: no I/O; `RedactingStream` wraps a stream it is given.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

SECRET_PARTS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTHORIZATION",
    }
)
# in free text a bare KEY part is too common (sort_key, config_key): it needs one of these beside it
KEY_QUALIFIERS = frozenset(
    {"API", "ACCESS", "PRIVATE", "SECRET", "AUTH", "CLIENT", "SIGNING", "SSH"}
)
MIN_KNOWN = 8  # a shorter known value ("1", "EMPTY") replaced everywhere would eat the report

# value shapes of well-known tokens: (label, pattern)
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bearer", re.compile(r"(?<=\bBearer )[A-Za-z0-9._~+/=-]{8,}")),
    ("hf-token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("openai-key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    ("aws-key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
)
# NAME=v, NAME: v, "name": "v", 'name': 'v', --name=v, --name v (a secret-looking NAME)
NEAR = re.compile(
    r"(?P<name>(?<![\w.-])-{0,2}[A-Za-z_][\w.-]*)"
    r"(?P<sep>[\"']?[ \t]*[:=][ \t]*[\"']?|(?<=[\w])[ \t]+(?=[^\s-]))"
    r"(?P<value>(?:(?:Bearer|Basic|Token)[ \t]+)?[^\s\"',;&|<>()\[\]{}]+)"
)
MASK = re.compile(r"<redacted:[^>\s]*>")
# a value masked already: by this module, or as ``***`` by the stress client (`openai.redact`)
MASKED = re.compile(r"(?:(?:Bearer|Basic|Token)[ \t]+)?(?:<redacted:[^>\s]*>|\*+)")


def name_parts(name: str) -> list[str]:
    """``name``'s parts, upper case: split at ``_ - . space`` and at camelCase humps."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.lstrip("-"))
    return [part.upper() for part in re.split(r"[_.\-\s]+", spaced) if part]


def looks_secret(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether a variable or flag named ``name`` holds a secret: a secret part, or listed."""
    parts = name_parts(name)
    listed = {"_".join(name_parts(n)) for n in extra}
    return bool(SECRET_PARTS.intersection(parts)) or "_".join(parts) in listed


def looks_secret_in_text(name: str, extra: Iterable[str] = ()) -> bool:
    """`looks_secret` for a name met in free text: a bare ``KEY`` part needs a qualifier
    (``API_KEY``, ``ACCESS_KEY``), so a report's ``sort_key: x`` is left alone."""
    parts = set(name_parts(name))
    if parts & (SECRET_PARTS - {"KEY"}) or (parts & {"KEY"} and parts & KEY_QUALIFIERS):
        return True
    return looks_secret(name, extra) and not parts & SECRET_PARTS


def mask(name: str, value: str | None = None) -> str:
    """The text that stands for a secret; with ``value``, its hash (for identities)."""
    label = name.lstrip("-") or "secret"
    if value is None:
        return f"<redacted:{label}>"
    return f"<redacted:{label}:sha256={hashlib.sha256(value.encode()).hexdigest()[:16]}>"


@dataclass(frozen=True)
class Redactor:
    """Replaces secrets in text, bytes and JSON-like values; picklable (it travels to Ray)."""

    known: tuple[tuple[str, str], ...] = ()  # (name, value), longest value first
    names: tuple[str, ...] = ()  # more names that hold secrets (``spec.secrets``)
    _forms: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        forms: dict[str, str] = {}
        for name, value in self.known:
            if len(value) < MIN_KNOWN:
                continue
            for form in (
                value,
                json.dumps(value)[1:-1],
                json.dumps(value, ensure_ascii=False)[1:-1],
            ):
                forms.setdefault(form, name)
        ordered = tuple(sorted(forms.items(), key=lambda item: -len(item[0])))
        object.__setattr__(self, "_forms", ordered)

    def with_known(self, pairs: Iterable[tuple[str, str]], names: Iterable[str] = ()) -> Redactor:
        """This redactor and ``pairs`` (name, value) more (empty values left out)."""
        by_value = {v: n for n, v in self.known}
        for name, value in pairs:
            if value:
                by_value.setdefault(value, name)
        return Redactor(
            tuple(sorted(((n, v) for v, n in by_value.items()), key=lambda item: -len(item[1]))),
            tuple(dict.fromkeys((*self.names, *names))),
        )

    def merge(self, other: Redactor) -> Redactor:
        return self.with_known(other.known, other.names)

    def count(self, text: str) -> tuple[str, int]:
        """``text`` redacted, and how many secrets were replaced."""
        n = 0
        for form, name in self._forms:
            if form in text:
                n += text.count(form)
                text = text.replace(form, mask(name))
        for label, pattern in SHAPES:
            text, found = pattern.subn(mask(label), text)
            n += found

        def near(match: re.Match[str]) -> str:
            nonlocal n
            name, value = match["name"], match["value"]
            if not looks_secret_in_text(name, self.names) or MASKED.fullmatch(value):
                return match[0]
            if match["sep"].strip(" \t") == "" and not name.startswith("-"):
                return match[0]  # "NAME word" in prose: only a flag takes its value after a space
            n += 1
            return match["name"] + match["sep"] + mask(name)

        text = NEAR.sub(near, text)
        return text, n

    def text(self, text: str) -> str:
        return self.count(text)[0]

    def bytes(self, data: bytes) -> bytes:
        """Bytes as text (undecodable bytes kept as they were)."""
        return self.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def value(self, value: Any, hashed: bool = False) -> Any:
        """``value`` with secrets replaced at any depth: the values of secret-looking keys, the
        argument after (or joined to) a secret-looking flag in a list, every string's text."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self._entry(k, v, hashed) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self._argv(list(value), hashed))
        return value

    def _entry(self, key: Any, value: Any, hashed: bool) -> Any:
        if isinstance(key, str) and isinstance(value, str) and value:
            if looks_secret(key, self.names) and not MASK.fullmatch(value):
                return mask(key, value if hashed else None)
        return self.value(value, hashed)

    def _argv(self, items: list[Any], hashed: bool) -> list[Any]:
        out: list[Any] = []
        secret_flag: str | None = None
        for item in items:
            if secret_flag is not None and isinstance(item, str) and not MASK.fullmatch(item):
                out.append(mask(secret_flag, item if hashed else None))
                secret_flag = None
                continue
            secret_flag = None
            if isinstance(item, str) and item.startswith("-"):
                flag, eq, rest = item.partition("=")
                if looks_secret(flag, self.names):
                    if not eq:
                        secret_flag = flag
                    elif rest and not MASK.fullmatch(rest):
                        item = f"{flag}={mask(flag, rest if hashed else None)}"
            out.append(self.value(item, hashed))
        return out


def env_secrets(env: Mapping[str, str | None], names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(name, value) of the entries of ``env`` whose names look secret."""
    names = tuple(names)
    return [(k, v) for k, v in env.items() if v and looks_secret(k, names)]


def argv_secrets(argv: Iterable[str], names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(flag, value) of the secret-looking flags of a command line (``--f v`` and ``--f=v``) and
    of its ``NAME=value`` words (``env NAME=value cmd``)."""
    names = tuple(names)
    found: list[tuple[str, str]] = []
    items = list(argv)
    for i, item in enumerate(items):
        flag, eq, rest = item.partition("=")
        if not item.startswith("-"):
            if eq and rest and re.fullmatch(r"[A-Za-z_]\w*", flag) and looks_secret(flag, names):
                found.append((flag, rest))  # `env NAME=value cmd`
            continue
        if not looks_secret(flag, names):
            continue
        value = rest if eq else (items[i + 1] if i + 1 < len(items) else "")
        if value:
            found.append((flag.lstrip("-"), value))
    return found


def tree_secrets(value: Any, names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(name, value) of every secret in a JSON-shaped tree (a dumped spec section), at any
    depth: a mapping's entries as an environment, a list as a command line, a string with
    spaces as a shell command line."""
    names = tuple(names)
    if isinstance(value, dict):
        found = env_secrets({k: v for k, v in value.items() if isinstance(v, str)}, names)
        for item in value.values():
            found.extend(tree_secrets(item, names))
        return found
    if isinstance(value, list):
        return argv_secrets([v for v in value if isinstance(v, str)], names)
    if isinstance(value, str) and " " in value:
        try:
            words = shlex.split(value)
        except ValueError:
            words = value.split()
        return argv_secrets(words, names)
    return []


class RedactingStream:
    """A text stream that redacts each write with the redactor ``current()`` returns then (the
    CLI wraps stdout and stderr once; a spec loaded later adds its secrets)."""

    def __init__(self, stream: TextIO, current: Any):
        self._stream = stream
        self._current = current

    def write(self, text: str) -> int:
        self._stream.write(self._current().text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_REMEMBERED: list[Redactor] = [Redactor()]  # the process's secrets so far (`remember`)


def remember(redactor: Redactor) -> None:
    """Add ``redactor``'s secrets to what `remembered` (hence the CLI's output) redacts."""
    _REMEMBERED[0] = _REMEMBERED[0].merge(redactor)


def remembered() -> Redactor:
    return _REMEMBERED[0]
