"""The `Runner` contract (`heisenbisect.testing.runner_contract`), run once per backend (local
threads, a real local Ray, Ray with one actor per config) on real processes."""

from __future__ import annotations

import pytest

from heisenbisect.runners.local import LocalRunner
from heisenbisect.testing.runner_contract import CHECKS


@pytest.fixture(
    params=["local", pytest.param("ray", marks=pytest.mark.ray), pytest.param("ray-hosts", marks=pytest.mark.ray)]
)
def make_runner(request):
    """A runner factory of the parametrized backend; ``ray-hosts`` runs each config's trials
    in one actor (for targets that keep a server up)."""
    if request.param == "local":
        return lambda target, logs, capacity: LocalRunner(target, logs, parallel=capacity)
    request.getfixturevalue("ray_session")
    from heisenbisect.runners.ray_runner import RayRunner

    hosts = request.param == "ray-hosts"
    return lambda target, logs, capacity: RayRunner(
        target, logs, max_in_flight=capacity, cpus_per_trial=0.5, per_config_hosts=hosts
    )


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_runner_contract(make_runner, check, tmp_path):
    check(make_runner, tmp_path)
