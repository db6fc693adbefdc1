"""``wrong_answer``: a question with one right answer, answered wrongly.

A kernel that is not batch-invariant, or a cache handing over another request's state, changes
answers only under load; a question any instruction model answers (add two numbers, repeat a
given string) shows it as a wrong answer. With the check on, each session first asks one such
question on its own (no tools, the session's own conversation), under the load of the others;
the built-in set (``builtin``) and the spec's ``{prompt, expect}`` pairs (``expect``: a regex the
answer must contain) are drawn from by the session's seed.

Off by default: the extra request changes the workload, and a model too small to add is wrong
on every arm. The report shows each arm's accuracy (``answers_right`` / ``answers_asked``)
beside its run-failure rate: a baseline below 100% without load says the model, not the server,
gets it wrong. Only the number or string itself is looked for, as a whole, so ``12 + 30 = 42``
answers 42.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from heisenbisect.checks.base import (
    Check,
    CheckSettings,
    Finding,
    Reply,
    SpecSection,
    State,
    text_of,
)

ADDITION = "What is {a} + {b}? Answer with the number alone."
COPY = "Repeat exactly: {text}"
_ADDITION = re.compile(r"What is (-?\d+) \+ (-?\d+)\? Answer with the number alone\.")
_COPY = re.compile(r"Repeat exactly: (\S+)")
WORDS = ("amber", "lantern", "kiwi", "harbor", "cobalt", "meadow", "quartz", "violet", "summit")
SYSTEM_PROMPT = "Answer the question exactly and briefly, without tools."


class KnownAnswer(SpecSection):
    """A question of the spec's and the regex its right answer contains."""

    prompt: str = Field(min_length=1)
    expect: str = Field(min_length=1)

    @field_validator("expect")
    @classmethod
    def _regex(cls, expect: str) -> str:
        try:
            re.compile(expect)
        except re.error as exc:
            raise ValueError(f"not a regular expression ({exc}): {expect!r}") from None
        return expect


class AnswersSettings(CheckSettings):
    """``checks.answers``: off by default; the built-in questions, the spec's, or both."""

    enabled: bool = False
    builtin: bool = True
    prompts: list[KnownAnswer] = Field(default_factory=list)

    @model_validator(mode="after")
    def _some_question(self) -> AnswersSettings:
        if self.enabled and not self.builtin and not self.prompts:
            raise ValueError("no questions to ask: set builtin: true or give prompts")
        return self


class AnswersCheck(Check):
    name = "answers"
    classes = {"wrong_answer": True}
    settings_model = AnswersSettings

    def question(self, settings: CheckSettings, rng: random.Random) -> list[dict[str, str]]:
        """The messages of the question a session asks before its tool rounds."""
        pool = [p.prompt for p in getattr(settings, "prompts", ())]
        if getattr(settings, "builtin", True):
            pool.append(builtin_question(rng))
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": rng.choice(pool)},
        ]

    def inspect(self, request: Mapping[str, Any], reply: Reply, state: State) -> Finding | None:
        if request.get("tools"):
            return None
        messages = request.get("messages") or []
        question = text_of(messages[-1].get("content")) if messages else ""
        expect = expected(question, state.settings)
        if expect is None:
            return None
        answer = text_of(reply.message.get("content"))
        right = re.search(expect, answer) is not None
        state.trial["asked"] = state.trial.get("asked", 0) + 1
        state.trial["right"] = state.trial.get("right", 0) + int(right)
        if right:
            return None
        return Finding(
            "wrong_answer",
            reply.said(f"{question!r:.80} answered {answer!r:.80}, expected /{expect}/"),
            evidence={"question": question, "expect": expect, "answer": answer},
        )

    def metrics(self, trial: Mapping[str, Any]) -> Mapping[str, float]:
        asked = trial.get("asked", 0)
        return {"answers_asked": float(asked), "answers_right": float(trial.get("right", 0))}


def builtin_question(rng: random.Random) -> str:
    """An addition of two small numbers, or a made-up token to repeat, by ``rng``."""
    if rng.random() < 0.5:
        return ADDITION.format(a=rng.randint(10, 99), b=rng.randint(10, 99))
    word = "-".join([*rng.sample(WORDS, 2), str(rng.randint(100, 9999))])
    tail = "".join(rng.choice(string.ascii_lowercase) for _ in range(3))
    return COPY.format(text=f"{word}-{tail}")


def expected(question: str, settings: CheckSettings) -> str | None:
    """The regex a right answer to ``question`` contains; None for a question not known here."""
    for given in getattr(settings, "prompts", ()):
        if given.prompt == question:
            return given.expect
    added = _ADDITION.fullmatch(question)
    if added:
        total = int(added.group(1)) + int(added.group(2))
        return rf"(?<![\d.]){total}(?![\d.]*\d)"
    copied = _COPY.fullmatch(question)
    if copied:
        return re.escape(copied.group(1))
    return None


CHECK = AnswersCheck()
