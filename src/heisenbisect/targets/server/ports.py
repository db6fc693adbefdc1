"""Free ports for one server, so that several servers on one host never collide.

SGLang binds more than its HTTP port: the NCCL port (``--nccl-port``), the TCP store of
torch.distributed (``SGLANG_TCP_STORE_PORT``, fixed at 29600 by default), ephemeral ZMQ
and shared-memory broadcaster sockets searched upwards from ``SGLANG_PORT``, and under
DP attention ``--port + 233`` and the six ports after it. Left at their defaults, two
servers on one host fight over them. Each server here gets its own of every one.

Ports come from a range below Linux's ephemeral range (32768+), so the kernel does not
hand them to outgoing connections meanwhile; a port counts as free when it binds on all
interfaces and no server of this process holds it. Picking at random keeps two
heisenbisect processes on one host (Ray workers) from racing for the same ports.
"""

from __future__ import annotations

import random
import socket
import threading
from dataclasses import dataclass

PORT_LOW, PORT_HIGH = 20000, 32000
ZMQ_TCP_PORT_DELTA = 233  # sglang.srt.server_args: DP attention derives ports from --port
DERIVED_PORTS = 8
SGLANG_PORT_SPAN = 64  # room for the ephemeral sockets SGLang opens upwards from SGLANG_PORT
ATTEMPTS = 500

_held: set[int] = set()
_lock = threading.Lock()


class NoFreePortsError(RuntimeError):
    """No free block of ports was found in the range."""


@dataclass(frozen=True)
class ServerPorts:
    http: int
    nccl: int
    tcp_store: int
    port_base: int
    held: frozenset[int]


def allocate_ports(rng: random.Random | None = None) -> ServerPorts:
    """Reserve a fresh set of ports for one server; give them back with `release_ports`."""
    rng = rng or random.SystemRandom()
    with _lock:
        http = _claim(rng, [0, *range(ZMQ_TCP_PORT_DELTA, ZMQ_TCP_PORT_DELTA + DERIVED_PORTS)])
        nccl = _claim(rng, [0])
        tcp_store = _claim(rng, [0])
        port_base = _claim(rng, list(range(SGLANG_PORT_SPAN)))
        held = frozenset(
            _held_by(http, [0, *range(ZMQ_TCP_PORT_DELTA, ZMQ_TCP_PORT_DELTA + DERIVED_PORTS)])
            + [nccl, tcp_store]
            + _held_by(port_base, list(range(SGLANG_PORT_SPAN)))
        )
    return ServerPorts(http, nccl, tcp_store, port_base, held)


def release_ports(ports: ServerPorts) -> None:
    with _lock:
        _held.difference_update(ports.held)


def _held_by(start: int, offsets: list[int]) -> list[int]:
    return [start + o for o in offsets]


def _claim(rng: random.Random, offsets: list[int]) -> int:
    top = PORT_HIGH - max(offsets)
    for _ in range(ATTEMPTS):
        start = rng.randrange(PORT_LOW, top)
        ports = _held_by(start, offsets)
        if all(p not in _held and port_is_free(p) for p in ports):
            _held.update(ports)
            return start
    raise NoFreePortsError(f"no free ports in {PORT_LOW}..{PORT_HIGH} after {ATTEMPTS} tries")


def port_is_free(port: int) -> bool:
    """True when ``port`` binds on all interfaces (IPv4) right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True
