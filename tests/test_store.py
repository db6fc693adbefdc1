"""The sqlite store: every outcome durable as it lands, identity checks, nothing lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from heisenbisect.errors import StoreMismatchError
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.store import IDENTITY_VERSION_KEY, Store, fingerprint, move_aside, store_files
from heisenbisect.studies.identity import RULE

ARM = Config((("overlap", "0"),))


def outcome(i: int, failures: int = 0) -> Outcome:
    return Outcome(f"t{i}", ARM.key, i, TrialStatus.OK, failures, 60, {"tokens_per_s": 1.5}, 0.2, "/x.log", "")


def test_outcomes_come_back_in_arrival_order_from_another_connection(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.bind({"a": 1}, "spec", rule=RULE)
    for i in (3, 1, 2):
        store.record(outcome(i, failures=i), ARM)
    other = Store(tmp_path / "s.sqlite")  # committed without close: another reader sees it all
    assert [(c, o.index, o.failures, o.metrics) for c, o in other.outcomes()] == [
        (ARM, 3, 3, {"tokens_per_s": 1.5}), (ARM, 1, 1, {"tokens_per_s": 1.5}), (ARM, 2, 2, {"tokens_per_s": 1.5})
    ]
    assert other.used_indices(ARM.key) == {1, 2, 3}


def test_a_trial_id_is_never_stored_twice(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.record(outcome(1), ARM)
    with pytest.raises(sqlite3.IntegrityError):
        store.record(outcome(1), ARM)


def test_a_changed_identity_is_refused_and_fresh_moves_the_old_store_aside(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.bind({"target": "a", "factors": [1]}, "spec", rule=RULE)
    store.record(outcome(1), ARM)
    store.close()
    with pytest.raises(StoreMismatchError, match="changed: target"):
        Store(path).bind({"target": "b", "factors": [1]}, "spec", rule=RULE)
    kept = move_aside(tmp_path, store_files(path))
    assert kept is not None and Store(kept / path.name).count() == 1
    assert Store(path).count() == 0


def bound_by_rule_1(path: Path, identity: dict) -> None:
    """A store with one trial, bound as heisenbisect bound stores before identities had versions."""
    with Store(path) as store:
        store.bind(identity, "spec", rule=RULE)
        store.record(outcome(1), ARM)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key=?", (IDENTITY_VERSION_KEY,))
        db.execute("UPDATE meta SET value=? WHERE key='fingerprint'", (fingerprint(identity),))


FACTOR_V1 = {"name": "overlap", "kind": "env", "var": None, "levels": ["0", "1"]}  # a raw dump


def test_a_store_of_rule_1_is_rebound_when_its_identity_upgrades_to_this_one(tmp_path):
    path = tmp_path / "s.sqlite"
    bound_by_rule_1(path, {"factors": [FACTOR_V1]})
    with Store(path) as store:
        now = {"factors": [{"name": "overlap", "levels": ["0", "1"]}]}
        assert store.bind(now, "spec", rule=RULE) == []
        assert store.meta(IDENTITY_VERSION_KEY) == str(RULE.version) and store.count() == 1


def test_a_store_of_rule_1_is_compared_under_this_rule_and_left_as_it_was_by_a_reader(tmp_path):
    path = tmp_path / "s.sqlite"
    bound_by_rule_1(path, {"factors": [FACTOR_V1], "target_files": {"a.py": "1"}})
    with Store(path) as store:
        with pytest.raises(StoreMismatchError, match=r"different spec \(changed: factors\)"):
            other = [{"name": "overlap", "levels": ["0", "2"]}]
            store.bind({"factors": other, "target_files": {"a.py": "1"}}, "spec", rule=RULE)
        same = [{"name": "overlap", "levels": ["0", "1"]}]
        now = {"factors": same, "target_files": {"a.py": "2"}}
        assert store.bind(now, "spec", ("target_files",), rule=RULE) == ["target_files"]
        assert store.meta(IDENTITY_VERSION_KEY) is None  # a reader that runs nothing writes nothing


def test_a_new_store_file_never_appears_without_its_tables(tmp_path, monkeypatch):
    """Whoever opens the store the moment it exists (`bisect report`, a script watching a run)
    finds its tables: the file is built aside and renamed into place, so the store's own path is
    only ever opened once it holds them."""
    path = tmp_path / "study" / "study.sqlite"
    real_connect = sqlite3.connect
    found_at_path: list[set[str]] = []

    def connect(target, *args, **kwargs):
        if Path(target) == path:  # what a reader opening the path at this moment would find
            with real_connect(f"file:{path}?mode=ro", uri=True) as db:
                found_at_path.append({r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")})
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with Store(path):
        pass
    monkeypatch.undo()
    assert found_at_path and all({"outcomes", "meta"} <= tables for tables in found_at_path)
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".new")]
