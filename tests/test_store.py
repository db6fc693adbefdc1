"""The sqlite store: every outcome durable as it lands, identity checks, nothing lost."""

from __future__ import annotations

import sqlite3

import pytest

from heisenbisect.errors import StoreMismatchError
from heisenbisect.records import Config, Outcome, TrialStatus
from heisenbisect.store import Store, move_aside, store_files

ARM = Config((("overlap", "0"),))


def outcome(i: int, failures: int = 0) -> Outcome:
    return Outcome(f"t{i}", ARM.key, i, TrialStatus.OK, failures, 60, {"tokens_per_s": 1.5}, 0.2, "/x.log", "")


def test_outcomes_come_back_in_arrival_order_from_another_connection(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.bind({"a": 1}, "spec")
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
    store.bind({"target": "a", "factors": [1]}, "spec")
    store.record(outcome(1), ARM)
    store.close()
    with pytest.raises(StoreMismatchError, match="changed: target"):
        Store(path).bind({"target": "b", "factors": [1]}, "spec")
    kept = move_aside(tmp_path, store_files(path))
    assert kept is not None and Store(kept / path.name).count() == 1
    assert Store(path).count() == 0
