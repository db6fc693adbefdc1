"""An answer as the ``reference`` check compares it (`checks.reference`) and the book keeps it
(`checks.reference_book`): its text and calls, with logprobs its tokens and their top-2 gaps;
where two answers first differ, and the finding's sentence for it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heisenbisect.checks.base import text_of

# what the passes may send differently for the same question: each pass streams its own way
NOT_THE_QUESTION = frozenset({"stream", "stream_options"})


@dataclass(frozen=True)
class Answer:
    """One reply as compared: its text and calls, and (with logprobs) its tokens and the gap
    between the top-1 and top-2 logprob at each token (None where the server gave no top-2)."""

    content: str
    calls: tuple[tuple[str, str], ...]
    tokens: tuple[str, ...] | None = None
    gaps: tuple[float | None, ...] | None = None

    def text(self) -> str:
        return "\n".join([self.content, *(f"{name}({args})" for name, args in self.calls)])


@dataclass(frozen=True)
class Divergence:
    """How a reply under load differs from the reference: at which token (or character, without
    logprobs), whether the tokens were the same (then only the parsing differs), and the
    reference's top-2 gap there."""

    position: int | None
    same_tokens: bool
    gap: float | None
    logprobs: bool

    def near_tie(self, margin: float) -> bool:
        return self.gap is not None and self.gap < margin


def request_key(request: Mapping[str, Any]) -> str:
    """The question a request asks, as one string: the request without how it is delivered."""
    asked = {k: v for k, v in request.items() if k not in NOT_THE_QUESTION}
    return json.dumps(asked, sort_keys=True, ensure_ascii=False)


def key_of(request: Mapping[str, Any]) -> bytes:
    """`request_key` as the book and the divergences keep it: 16 bytes, not the conversation."""
    return hashlib.blake2b(request_key(request).encode(), digest_size=16).digest()


def answer_of(response: Any, message: Mapping[str, Any] | None = None) -> Answer:
    """The answer in a completion (or ``{"chunks": [...], "assembled": message}``)."""
    if message is None:
        message = _message(response)
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append((str(function.get("name")), _canonical(function.get("arguments"))))
    items = _logprob_content(response)
    tokens = tuple(str(item.get("token")) for item in items) if items else None
    gaps = tuple(_gap(item) for item in items) if items else None
    return Answer(text_of(message.get("content")), tuple(calls), tokens, gaps)


def compare(reference: Answer, now: Answer) -> Divergence:
    """Where ``now`` first differs from ``reference`` (whose answers differ)."""
    if reference.tokens is not None and now.tokens is not None:
        position = _first_difference(reference.tokens, now.tokens)
        if position is None:
            return Divergence(None, True, None, True)
        gaps = reference.gaps or ()
        gap = gaps[position] if position < len(gaps) else None
        return Divergence(position, False, gap, gap is not None)
    text, other = reference.text(), now.text()
    return Divergence(len(os.path.commonprefix([text, other])), False, None, False)


def describe(divergence: Divergence, reference: Answer, now: Answer, margin: float) -> str:
    """The finding's sentence: where the answers part and whether it is evidence."""
    if divergence.same_tokens:
        return (
            "the same tokens as the answer alone, parsed differently: "
            f"{now.text()!r:.80} instead of {reference.text()!r:.80}"
        )
    where = divergence.position
    if not divergence.logprobs:
        text, other = reference.text(), now.text()
        return (
            f"differs from the answer alone at character {where}: {other[where or 0 :]!r:.40} "
            f"instead of {text[where or 0 :]!r:.40} (no top-2 logprobs: a near-tie cannot be "
            "told apart)"
        )
    assert where is not None and reference.tokens is not None and now.tokens is not None
    alone = reference.tokens[where] if where < len(reference.tokens) else "(end)"
    loaded = now.tokens[where] if where < len(now.tokens) else "(end)"
    verdict = (
        f"a near-tie (gap {divergence.gap:.3f} < margin {margin:g}), not evidence"
        if divergence.near_tie(margin)
        else f"top-2 gap {divergence.gap:.3f} >= margin {margin:g}"
    )
    return f"differs from the answer alone at token {where}: {loaded!r} for {alone!r}; {verdict}"


def _message(response: Any) -> Mapping[str, Any]:
    if isinstance(response, dict):
        if isinstance(response.get("assembled"), dict):
            return response["assembled"]
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            if isinstance(message, dict):
                return message
    return {}


def _canonical(arguments: Any) -> str:
    """Arguments as compared: JSON with sorted keys where they parse, the raw text otherwise."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False)


def _logprob_content(response: Any) -> list[dict[str, Any]]:
    """Each generated token's logprob entry, across a completion or every streamed chunk."""
    if not isinstance(response, dict):
        return []
    pieces = response.get("chunks") if "chunks" in response else [response]
    items: list[dict[str, Any]] = []
    for piece in pieces if isinstance(pieces, list) else []:
        choices = piece.get("choices") if isinstance(piece, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            continue
        logprobs = choices[0].get("logprobs")
        content = logprobs.get("content") if isinstance(logprobs, dict) else None
        items.extend(item for item in content or [] if isinstance(item, dict))
    return items


def _gap(item: Mapping[str, Any]) -> float | None:
    """Top-1 minus top-2 logprob of one token entry; None without two alternatives."""
    tops = item.get("top_logprobs")
    values = sorted(
        (
            float(t["logprob"])
            for t in tops or []
            if isinstance(t, dict) and isinstance(t.get("logprob"), (int, float))
        ),
        reverse=True,
    )
    return values[0] - values[1] if len(values) >= 2 else None


def _first_difference(a: tuple[str, ...], b: tuple[str, ...]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))
