"""The one redaction rule (`heisenbisect.redaction`): what it masks, what it must leave alone (a
report's counts and metrics), in text, bytes, JSON and argument lists; idempotent."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heisenbisect.hypotheses.loader import parse_spec
from heisenbisect.hypotheses.secrets import hashed_secrets, spec_redactor
from heisenbisect.redaction import MASK, Redactor, argv_secrets, env_secrets, looks_secret

HF = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1"
SK = "sk-" + "proj-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0"
GH = "ghp_" + "0123456789abcdefghijABCDEFGHIJ0123"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("OPENAI_API_KEY", True), ("--api-key", True), ("apiKey", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("db_password", True), ("GOOGLE_CREDENTIALS", True),
    ("Authorization", True), ("max_tokens", False), ("--max-new-tokens", False),
    ("tokenizer", False), ("tokens_per_s", False), ("SGLANG_OPT_USE_TOPK_V2", False),
    ("secrets", False), ("keys", False),
])
def test_names_are_secret_by_their_parts(name: str, secret: bool):
    assert looks_secret(name) is secret


def test_a_listed_name_is_secret_whatever_it_looks_like():
    assert looks_secret("MY_PASS", ["my-pass"]) and not looks_secret("MY_PASS")


@pytest.mark.parametrize("text, gone", [
    (f"HF_TOKEN={HF}", HF),
    (f"export OPENAI_API_KEY='{SK}'", SK),
    (f"got token {GH} from the keyring", GH),
    (f"Authorization: Bearer {JWT}", JWT),
    ("python serve.py --api-key s3cr3t-but-short", "s3cr3t-but-short"),
    ("python serve.py --api-key=EMPTY", "EMPTY"),
    ('{"api_key": "abc123def456"}', "abc123def456"),
    ("environ({'DB_PASSWORD': 'hunter22', 'HOME': '/root'})", "hunter22"),
])
def test_shapes_and_values_beside_secret_names_are_masked(text: str, gone: str):
    out, count = Redactor().count(text)
    assert gone not in out and count >= 1 and MASK.search(out)


@pytest.mark.parametrize("text", [
    "| `fixed` | `1` | **eliminates** | 80 | 0 |",
    '{"metrics": {"tokens_per_s": 1234.5}, "max_tokens": 30, "key": "X03=0"}',
    "python -m sglang.launch_server --max-running-requests 8 --tokenizer-path /m/tok",
    "the HF_TOKEN variable is read by huggingface_hub",
    "sort_key: config key",
])
def test_a_report_line_without_secrets_is_left_as_it_is(text: str):
    assert Redactor().count(text) == (text, 0)


def test_known_values_are_masked_anywhere_short_ones_only_beside_their_names():
    redactor = Redactor().with_known([("DB_PASS", "correct-horse-battery"), ("PIN", "1234")])
    out = redactor.text("connected with correct-horse-battery; pin 1234 of 12345")
    assert out == "connected with <redacted:DB_PASS>; pin 1234 of 12345"
    assert redactor.text('"correct-horse-battery\\u00e9"') != '"correct-horse-battery\\u00e9"'


def test_json_stays_json_and_bytes_stay_bytes():
    redactor = Redactor().with_known([("HF_TOKEN", HF)])
    data = {"env": {"HF_TOKEN": HF}, "log": f"token {HF}\n", "n": 3}
    assert HF not in json.loads(redactor.text(json.dumps(data)))["log"]
    assert redactor.bytes(f"x {HF} \xff".encode("latin-1")) == b"x <redacted:HF_TOKEN> \xff"


def test_argument_lists_mask_the_value_after_a_secret_flag_and_the_joined_form():
    argv = ["serve", "--api-key", "EMPTY", "--hf-token=abc", "--port", "8000"]
    assert Redactor().value(argv) == [
        "serve", "--api-key", "<redacted:api-key>", "--hf-token=<redacted:hf-token>", "--port", "8000",
    ]
    assert argv_secrets(argv) == [("api-key", "EMPTY"), ("hf-token", "abc")]
    assert env_secrets({"HF_TOKEN": HF, "PATH": "/bin", "API_KEY": ""}) == [("HF_TOKEN", HF)]


def test_identities_keep_a_hash_that_tells_two_keys_apart():
    one = hashed_secrets({"env": {"HF_TOKEN": HF}, "command": ["x", "--api-key", "k1"]})
    two = hashed_secrets({"env": {"HF_TOKEN": HF + "x"}, "command": ["x", "--api-key", "k1"]})
    assert HF not in json.dumps(one) and "k1" not in json.dumps(one)
    assert one != two and one == hashed_secrets({"env": {"HF_TOKEN": HF}, "command": ["x", "--api-key", "k1"]})


def test_a_spec_names_its_secrets_in_every_section_and_in_its_list():
    spec = parse_spec(
        f"study: s\nsecrets: [SITE_PASS]\ntarget:\n  command: [python, t.py, --api-key, {SK}]\n"
        f"  env: {{HF_TOKEN: {HF}, SITE_PASS: plain-words-here}}\n",
        "s.yaml",
    )
    redactor = spec_redactor(spec, {"GITHUB_TOKEN": GH, "PATH": "/usr/bin"})
    text = redactor.text(f"{SK} {HF} plain-words-here {GH} /usr/bin")
    assert text == (
        "<redacted:api-key> <redacted:HF_TOKEN> <redacted:SITE_PASS> <redacted:GITHUB_TOKEN> /usr/bin"
    )


@given(st.text(max_size=200), st.sampled_from([HF, SK, GH, JWT]), st.text(max_size=50))
def test_redacting_twice_changes_nothing_more_and_no_token_survives(before: str, token: str, after: str):
    once = Redactor().text(before + " " + token + " " + after)
    assert token not in once and Redactor().text(once) == once


def test_a_bare_key_part_is_a_secret_in_an_environment_but_needs_a_qualifier_in_text():
    assert Redactor().text("WANDB_KEY=0123456789abcdef sort_key=size") == (
        "WANDB_KEY=0123456789abcdef sort_key=size"
    )
    redactor = Redactor().with_known(env_secrets({"WANDB_KEY": "0123456789abcdef"}))
    assert redactor.text("WANDB_KEY=0123456789abcdef sort_key=size") == (
        "WANDB_KEY=<redacted:WANDB_KEY> sort_key=size"
    )


def test_a_value_masked_already_is_left_as_it_is():
    for text in ("(Authorization: Bearer ***)", "--api-key ***", "api_key='<redacted:api-key>'"):
        assert Redactor().count(text) == (text, 0)
