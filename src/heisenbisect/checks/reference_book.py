"""The reference book: each answer given alone, by request, kept for as long as its launch.

It gets one entry per request asked, so an entry keeps only what the load pass compares and what
a later pass replays: the request as a 16-byte digest (a request carries the whole conversation
and the tool specs), the assistant message as JSON and its completion tokens (replayed; compared
as text and calls), and, with logprobs, the tokens as one string and each token's top-1/top-2
gap in an array of doubles. The completion's per-token dicts of top logprobs (most of its size)
are not kept, so a replayed completion carries none: the checks (the `logprobs` check, when on)
read them when the answer was recorded, and the spec's checks are the same for a whole launch.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from heisenbisect.checks.base import Reply
from heisenbisect.checks.reference_answer import Answer, answer_of, key_of


@dataclass(frozen=True, slots=True)
class _Entry:
    """One recorded answer: the message as JSON (a fifth of its size as dicts), the completion's
    ``usage.completion_tokens``; ``ends`` is None without logprobs, ``no_gap`` the tokens whose
    gap was None (the server gave no top-2 there)."""

    message: str
    completion_tokens: Any
    tokens: str = ""
    ends: array[int] | None = None
    gaps: array[float] | None = None
    no_gap: tuple[int, ...] = ()

    def answer(self) -> Answer:
        plain = answer_of(None, json.loads(self.message))
        if self.ends is None or self.gaps is None:
            return plain
        starts = (0, *self.ends[:-1])
        tokens = tuple(self.tokens[a:b] for a, b in zip(starts, self.ends))
        gaps = tuple(None if i in self.no_gap else g for i, g in enumerate(self.gaps))
        return replace(plain, tokens=tokens, gaps=gaps)

    def completion(self) -> dict[str, Any]:
        """The answer as a completion, as much of one as a replayed round reads."""
        usage = (
            None
            if self.completion_tokens is None
            else {"completion_tokens": self.completion_tokens}
        )
        return {"choices": [{"index": 0, "message": json.loads(self.message)}], "usage": usage}


def _entry(reply: Reply) -> _Entry:
    response = reply.response
    usage = response.get("usage") if isinstance(response, dict) else None
    used = usage.get("completion_tokens") if isinstance(usage, dict) else None
    message = json.dumps(reply.message, ensure_ascii=False)
    answer = answer_of(response, reply.message)
    if answer.tokens is None or answer.gaps is None:
        return _Entry(message, used)
    ends, at = array("I"), 0
    for token in answer.tokens:
        at += len(token)
        ends.append(at)
    no_gap = tuple(i for i, g in enumerate(answer.gaps) if g is None)
    gaps = array("d", (0.0 if g is None else g for g in answer.gaps))
    return _Entry(message, used, "".join(answer.tokens), ends, gaps, no_gap)


class Book:
    """The answers given alone on one launch, by request; ``logprobs``: whether any carries a
    top-2 gap (a server may ignore the ask)."""

    __slots__ = ("_entries", "logprobs")

    def __init__(self) -> None:
        self._entries: dict[bytes, _Entry] = {}
        self.logprobs = False

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, key: bytes, reply: Reply) -> bool:
        """Keep ``reply`` as the answer to ``key``'s request; False when one is kept already."""
        if key in self._entries:
            return False
        entry = _entry(reply)
        self._entries[key] = entry
        self.logprobs = self.logprobs or (
            entry.gaps is not None and len(entry.no_gap) < len(entry.gaps)
        )
        return True

    def answer(self, key: bytes) -> Answer | None:
        """The recorded answer to ``key``'s request, as compared; None when it was not asked."""
        entry = self._entries.get(key)
        return None if entry is None else entry.answer()

    def replay(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The recorded answer to ``request`` as a completion, for a pass not to ask it again."""
        entry = self._entries.get(key_of(request))
        return None if entry is None else entry.completion()
