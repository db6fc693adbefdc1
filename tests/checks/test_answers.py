"""`wrong_answer`: the built-in questions and the spec's, right answers in the ways a model writes
them, wrong ones found; the questions' regexes and the settings' refusals."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from heisenbisect.checks.answers import CHECK, AnswersSettings, builtin_question, expected
from heisenbisect.checks.base import Reply, State

ON = AnswersSettings(enabled=True)


def answer(question: str, content: str, settings: AnswersSettings = ON, state: State | None = None):
    request = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": question}]}
    message = {"role": "assistant", "content": content}
    return CHECK.inspect(request, Reply(message, {}), state or State(settings))


ADD = "What is 12 + 30? Answer with the number alone."
COPY = "Repeat exactly: kiwi-amber-3071-qzx"


@pytest.mark.parametrize("question, content", [
    (ADD, "42"), (ADD, "42."), (ADD, "12 + 30 = 42"), (ADD, "**42**"),
    (COPY, "kiwi-amber-3071-qzx"), (COPY, "`kiwi-amber-3071-qzx`"), (COPY, "Sure: kiwi-amber-3071-qzx"),
])
def test_right_answers_pass(question, content):
    assert answer(question, content) is None


@pytest.mark.parametrize("question, content", [
    (ADD, "43"), (ADD, "420"), (ADD, "4.2"), (ADD, ""), (ADD, "forty-two"),
    (COPY, "kiwi-amber-3017-qzx"), (COPY, "xzq-1703-rebma-iwik"), (COPY, "kiwi-amber"),
])
def test_wrong_answers_are_found_with_question_and_answer_in_the_evidence(question, content):
    finding = answer(question, content)
    assert finding is not None and finding.kind == "wrong_answer"
    assert finding.evidence["question"] == question and finding.evidence["answer"] == content


def test_every_builtin_question_has_its_expected_answer():
    rng = random.Random(3)
    for _ in range(200):
        question = builtin_question(rng)
        assert expected(question, ON) is not None, question


def test_a_request_with_tools_or_an_unknown_question_is_not_this_checks():
    assert answer("What is the capital of France?", "Lyon") is None
    with_tools = {"messages": [{"role": "user", "content": ADD}], "tools": [{}]}
    assert CHECK.inspect(with_tools, Reply({"content": "7"}, {}), State(ON)) is None


def test_the_specs_questions_and_the_accuracy_tally():
    settings = AnswersSettings(enabled=True, builtin=False,
                               prompts=[{"prompt": "Capital of France?", "expect": r"(?i)\bparis\b"}])
    state = State(settings)
    assert answer("Capital of France?", "It is Paris.", settings, state) is None
    assert answer("Capital of France?", "Lyon", settings, state).kind == "wrong_answer"
    assert answer(ADD, "43", settings, state) is not None  # a built-in question is still known
    assert CHECK.metrics(state.trial) == {"answers_asked": 3.0, "answers_right": 1.0}
    messages = CHECK.question(settings, random.Random(0))
    assert messages[-1] == {"role": "user", "content": "Capital of France?"}


def test_settings_refuse_a_bad_regex_and_nothing_to_ask():
    with pytest.raises(ValidationError, match="not a regular expression"):
        AnswersSettings(prompts=[{"prompt": "q", "expect": "(unclosed"}])
    with pytest.raises(ValidationError, match="no questions to ask"):
        AnswersSettings(enabled=True, builtin=False)
