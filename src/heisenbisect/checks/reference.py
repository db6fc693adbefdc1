"""``diverged``: an answer under load that differs from the server's own answer to the same request
asked alone (concurrency 1, temperature 0, one seed). Off unless the spec turns it on
(``checks.reference.enabled``, or ``bisect stress --reference``): it costs a second pass.

The stress client runs the passes (`targets.openai.reference_pass`); this check only records
and compares. In ``record`` mode it keeps each reply by its request (in a
`reference_book.Book`); in ``compare`` mode it puts each reply beside the recorded one. With
logprobs, the first differing token is a near-tie (the reference's top-1 and top-2 closer than
``margin``) or evidence; a near-tie is class ``near_tie``, which is not a corruption: greedy
decoding flips there on any change of numerics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from heisenbisect.checks.base import Check, CheckSettings, Finding, Reply, State
from heisenbisect.checks.reference_answer import answer_of, compare, describe, key_of
from heisenbisect.checks.reference_book import Book

NAME = "reference"
DIVERGED = "diverged"
NEAR_TIE = "near_tie"
RECORD, COMPARE = "record", "compare"


class ReferenceSettings(CheckSettings):
    """``checks.reference``: off by default (a second, sequential pass costs time)."""

    enabled: bool = False
    logprobs: bool = Field(
        default=True, description="ask for top-2 logprobs, so that near-ties can be set aside"
    )
    margin: float = Field(
        default=0.5,
        ge=0.0,
        description="a divergence where the reference's top-1 and top-2 logprobs are closer "
        "than this (nats) is a near-tie, not evidence",
    )
    seed: int = Field(default=0, description="the `seed` every request of both passes carries")


class ReferenceCheck(Check):
    name = NAME
    classes = {DIVERGED: True, NEAR_TIE: False}
    settings_model = ReferenceSettings

    def request_fields(self, settings: CheckSettings) -> Mapping[str, Any]:
        assert isinstance(settings, ReferenceSettings)
        fields: dict[str, Any] = {"temperature": 0.0, "seed": settings.seed}
        if settings.logprobs:
            fields.update(logprobs=True, top_logprobs=2)
        return fields

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        scratch = state.trial
        if scratch.get("mode") not in (RECORD, COMPARE):
            return None  # not run by the reference passes: nothing to compare with
        book: Book = scratch["book"]
        key = key_of(request)
        if scratch["mode"] == RECORD:
            counter = "asked" if book.record(key, reply) else "cached"
            scratch[counter] = scratch.get(counter, 0) + 1
            return None
        reference = book.answer(key)
        if reference is None:
            scratch["unreferenced"] = scratch.get("unreferenced", 0) + 1
            return None
        scratch["compared"] = scratch.get("compared", 0) + 1
        now = answer_of(reply.response, reply.message)
        if reference.content == now.content and reference.calls == now.calls:
            return None
        settings = state.settings
        assert isinstance(settings, ReferenceSettings)
        divergence = compare(reference, now)
        scratch.setdefault("divergences", {})[key] = divergence
        return Finding(
            NEAR_TIE if divergence.near_tie(settings.margin) else DIVERGED,
            reply.said(describe(divergence, reference, now, settings.margin)),
            excerpt=now.text(),
        )


CHECK = ReferenceCheck()
