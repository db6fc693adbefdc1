"""Shared fixtures. The Ray cluster is started once per session, and only if a test asks for it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_session():
    """A real local Ray with 2 CPUs and 2 logical GPUs (no GPU needed); its GCS address."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
