"""Reach a Ray cluster: join the one already connected, connect to an address, or start a local one.

Only a cluster this module started is shut down again; someone else's cluster is left running.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from types import ModuleType

from heisenbisect import signals
from heisenbisect.errors import HeisenbisectError


class RayUnavailableError(HeisenbisectError):
    """The Ray runner cannot reach Ray.

    Common causes: ray is not installed (``pip install 'heisenbisect[ray]'``); the address
    (``execution.address``, ``--address`` or ``RAY_ADDRESS``) names no running cluster; the
    cluster runs another Ray or Python version than this driver.
    """


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            "the Ray runner needs ray: pip install 'heisenbisect[ray]'"
        ) from None
    return ray


@dataclass
class RayCluster:
    """A connection to Ray; ``owned`` when this process started the cluster and must stop it."""

    owned: bool
    address: str

    def resources(self) -> dict[str, float]:
        return dict(import_ray().cluster_resources())

    def close(self) -> None:
        ray = import_ray()
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


def connect(
    address: str | None = None,
    *,
    working_dir: str | None = None,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
) -> RayCluster:
    """Join Ray: the session already initialised in this process, else ``address`` or
    ``RAY_ADDRESS``, else a new local cluster (``num_cpus``/``num_gpus`` default to the machine's).

    ``working_dir`` is uploaded once for this driver's job and unpacked on every worker, which
    starts its tasks there (Ray accepts a local folder only at the job level, in ``ray.init``).
    """
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _check_shape(address)  # before importing Ray: its import may print warnings
    ray = import_ray()
    runtime_env = {"working_dir": working_dir} if working_dir else None
    if ray.is_initialized():  # an embedding program or a test session connected first
        if runtime_env:
            raise RayUnavailableError(
                "execution.working_dir: Ray was already initialised in this process, so the folder "
                "cannot be shipped; pass runtime_env={'working_dir': ...} to that ray.init instead"
            )
        return RayCluster(owned=False, address=_current_address(ray))
    if address:
        _check_reachable(address)
        try:
            ray.init(
                address=address,
                runtime_env=runtime_env,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise RayUnavailableError(
                f"cannot connect to the Ray cluster at {address!r}: {exc}"
            ) from None
        signals.reinstall()  # ray.init took SIGTERM (sys.exit, a native stack dump): stop as Ctrl-C does
        return RayCluster(owned=False, address=address)
    ray.init(
        num_cpus=num_cpus,
        num_gpus=num_gpus,
        runtime_env=runtime_env,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
    )
    signals.reinstall()
    return RayCluster(owned=True, address=_current_address(ray))


_NAMED_ADDRESSES = ("auto", "local")  # Ray finds (or starts) the cluster itself


def _check_shape(address: str) -> None:
    """Refuse at once an address Ray would retry for half a minute: ``auto``, ``local`` or
    ``[ray://]HOST:PORT`` with a port of 1 to 65535."""
    if address in _NAMED_ADDRESSES:
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or any(c.isspace() for c in host) or not port.isdigit():
        shape = "HOST:PORT, ray://HOST:PORT, auto or local"
    elif not 0 < int(port) <= 65535:
        shape = "a port of 1 to 65535"
    else:
        return
    raise RayUnavailableError(
        f"the Ray address {address!r} (execution.address, --address or RAY_ADDRESS) is not "
        f"one: expected {shape}"
    )


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail in seconds, not after Ray's minutes of retries, when nothing listens at ``address``."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and the like: Ray finds the cluster itself
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailableError(
            f"cannot connect to the Ray cluster at {address!r}: {exc}"
        ) from None


def _current_address(ray: ModuleType) -> str:
    return ray.get_runtime_context().gcs_address
