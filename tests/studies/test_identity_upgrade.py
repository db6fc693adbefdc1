"""Upgrading keeps your stores: a study's identity covers what changes the experiment, not the
model's shape. A key added to the model at its default leaves every stored study resuming with
every trial reused, and a store written by the release before identities were versioned
(tests/fixtures/stores_8ccb500/, made by that release) resumes under this one, rebound to the
current rule. Real stores, real studies through the real driver, tiny real target scripts."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from pydantic import create_model

import heisenbisect
from commits_repo import make_flaky_repo
from heisenbisect.cli import main
from heisenbisect.hypotheses import Spec, parse_spec
from heisenbisect.hypotheses.targets import CommandSection
from heisenbisect.store import IDENTITY_VERSION_KEY
from heisenbisect.studies import options
from heisenbisect.studies.identity import RULE, canonical

FIXTURES = Path(__file__).parent.parent / "fixtures" / "stores_8ccb500"
SCREENING_STORE = Path("out/upgrade-screening/study.sqlite")
COMMITS_STORE = Path("out/upgrade-commits/commits.sqlite")


def meta(store: Path, key: str) -> str | None:
    with sqlite3.connect(store) as db:
        row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def trials(store: Path) -> list[tuple[str, int]]:
    """(trial id, seq) of every stored trial, in arrival order."""
    with sqlite3.connect(store) as db:
        return db.execute("SELECT trial_id, seq FROM outcomes ORDER BY seq").fetchall()


def copied(name: str, tmp_path: Path) -> Path:
    """The fixture study ``name`` copied into ``tmp_path``: its spec's path."""
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    return folder / "spec.yaml"


def with_commit_repo(spec: Path) -> Path:
    """The fixture bisection's repository, rebuilt beside its spec (fixed dates: the same shas)."""
    make_flaky_repo(spec.parent)
    return spec


def grown(spec: Spec) -> Spec:
    """``spec`` loaded by a heisenbisect whose command target gained a key, at its default."""
    later = create_model("CommandSection", __base__=CommandSection, retries=(int, 0))
    return spec.model_copy(update={"target": later.model_validate(spec.target.model_dump())})


@pytest.mark.parametrize("study, store, start", [
    ("screening", SCREENING_STORE, heisenbisect.run),
    ("commits", COMMITS_STORE, heisenbisect.commits),
])
def test_a_key_added_at_its_default_leaves_every_stored_trial_reused(
        study, store, start, tmp_path, monkeypatch):
    spec = copied(study, tmp_path)
    (spec.parent / store).unlink()  # this release writes the store
    if study == "commits":
        with_commit_repo(spec)
    start(spec)
    before = trials(spec.parent / store)
    load = options.load_spec
    monkeypatch.setattr(options, "load_spec", lambda path: grown(load(path)))
    later = grown(load(spec))
    assert "retries" in later.target.model_dump(mode="json")  # the raw dump (rule 1) changed
    assert canonical(later.target) == canonical(load(spec).target)  # the identity did not
    start(spec)
    assert before and trials(spec.parent / store) == before


@pytest.mark.parametrize("study, store, start", [
    ("screening", SCREENING_STORE, heisenbisect.run),
    ("commits", COMMITS_STORE, heisenbisect.commits),
])
def test_a_store_of_the_release_before_versions_resumes_with_every_trial_reused(
        study, store, start, tmp_path):
    spec = copied(study, tmp_path)
    if study == "commits":
        with_commit_repo(spec)
    path = spec.parent / store
    before, fingerprint = trials(path), meta(path, "fingerprint")
    assert meta(path, IDENTITY_VERSION_KEY) is None  # as the release before this issue wrote it
    result = start(spec)
    assert result.exit_code == 0
    # every stored trial is reused as it was; a bisection now also checks its ends and verifies
    # its culprit (issue 35), phases the release before never ran: their runs come after
    after = trials(path)
    assert after[: len(before)] == before
    assert study == "commits" or after == before
    assert meta(path, IDENTITY_VERSION_KEY) == str(RULE.version)
    assert meta(path, "fingerprint") != fingerprint
    assert start(spec).exit_code == 0 and trials(path) == after  # and again: nothing reruns


def test_a_stored_store_of_a_changed_factor_is_refused_naming_only_that(tmp_path, capsys):
    spec = copied("screening", tmp_path)
    spec.write_text(spec.read_text().replace('levels: ["0", "1"]', 'levels: ["0", "2"]'))
    assert main(["run", str(spec), "--plain"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("rerun with --fresh to move them aside and start over"), err
    assert "trials of a different spec (changed: factors)" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("version, problem", [
    ("two", "unreadable identity version 'two' in the study store; rerun with --fresh"),
    ("0", "unreadable identity version '0'"),
    ("99", f"bound by a newer heisenbisect (identity version 99; this one reads up to {RULE.version})"),
])
def test_an_identity_version_it_cannot_read_is_one_line_naming_the_file(
        version, problem, tmp_path, capsys):
    spec = copied("screening", tmp_path)
    store = spec.parent / SCREENING_STORE
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (IDENTITY_VERSION_KEY, version))
    assert main(["run", str(spec), "--plain"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{store}: " in err and problem in err, err


# the target of an SGLang study as the release before this issue stored it (its raw dump)
SGLANG_SPEC = """\
study: s
target:
  timeout: 900
  sglang:
    model: Qwen/Qwen3-0.6B
    server_args: [--tp, '1']
    workload: {sessions: 8, stream: both}
"""
SGLANG_STORED = {
    "command": None, "cwd": None, "env": {}, "timeout": 900.0, "crashes_count": False,
    "result": "json", "files": [],
    "sglang": {
        "model": "Qwen/Qwen3-0.6B", "server_args": ["--tp", "1"], "env": {}, "python": "python",
        "launcher": None, "startup_timeout": 1800.0, "trials_per_launch": 1,
        "workload": {"sessions": 8, "rounds": 4, "concurrency": None, "max_tokens": 512,
                     "temperature": 0.0, "request_timeout": 300.0, "tools": None,
                     "system_prompt": None, "stream": "both"},
    },
}


def test_a_stored_target_is_upgraded_through_the_current_model():
    """Re-derived by validating the stored dict with the model as it is now, not by comparing raw
    dicts: however this release reads ``target.sglang`` (its own kind, or an alias of a server
    preset), the stored target compares as what the same spec means now."""
    now = parse_spec(SGLANG_SPEC, "s.yaml").target
    assert RULE.upgrade({"target": SGLANG_STORED}, 1) == {"target": canonical(now)}


def test_a_store_bound_with_a_secret_in_its_identity_resumes_holding_only_its_hash(tmp_path):
    """A version-2 identity kept the target's env as written, an API key included; re-derived
    under version 3 it is the key's hash, so the study resumes, and the store rewrites it."""
    from heisenbisect.store import Store
    from heisenbisect.studies.identity import spec_identity

    key = "sk-" + "Stored0123456789abcdefghijklmnop"
    spec = parse_spec(f"study: s\ntarget:\n  command: [x]\n  env: {{OPENAI_API_KEY: {key}}}\n", "s.yaml")
    old = {"target": canonical(spec.target), "factors": []}  # what version 2 stored
    assert key in str(old)
    with Store(tmp_path / "study.sqlite") as store:
        store.bind(old, "spec", rule=_Rule2())
        store.set_meta("marker", "x")
    new = spec_identity(spec)
    assert key not in str(new) and "sha256=" in str(new)
    assert RULE.upgrade(old, 2) == new
    assert RULE.upgrade(old, 2)["target"]["env"]["OPENAI_API_KEY"].startswith("<redacted:")


class _Rule2:
    version = 2

    @staticmethod
    def upgrade(stored: dict, version: int) -> dict:
        return stored
