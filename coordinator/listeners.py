"""What a node tells clients to connect to: Kafka's ``advertised.listeners``.

Metadata (brokers) and FindCoordinator answer a node's advertised host and port, which may differ
from the address it listens on (``--host``/``--port``): in a container it listens on 0.0.0.0:9092
and clients elsewhere reach it as ``kafka:9092`` or ``localhost:19092``.

``advertised.listeners`` takes one ``LISTENER://host:port`` (e.g. ``PLAINTEXT://kafka:9092``; the
listener name is not checked: groupcoord's nodes have one listener each). With N nodes, node i
advertises ``host:port+i``, as the nodes listen on ``--port`` + i. An empty host
(``PLAINTEXT://:9092``) is the host's canonical name, as in Kafka; 0.0.0.0 is refused, as Kafka
refuses it. Without ``advertised.listeners`` a node advertises the address it listens on, except
that a node listening on every interface (0.0.0.0 or ::) advertises the host's canonical name
(Kafka's default for a listener without a host) and a warning says so.
"""
from __future__ import annotations

import functools
import re
import socket
from dataclasses import dataclass

from .config import ConfigError

#: addresses that mean "every interface": never what a client should connect to
WILDCARDS = frozenset({"", "0.0.0.0", "::"})

_ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?:\[(?P<ipv6>[^\]]*)\]|(?P<host>[^:\[\]]*)):(?P<port>\d+)$")


@dataclass(frozen=True)
class Advertised:
    host: str          # "": the canonical host name
    port: int          # of node 0; node i advertises port + i


def parse_advertised(value: str) -> Advertised | None:
    """The value of ``advertised.listeners``; None when it is empty. ConfigError when it is not
    one ``LISTENER://host:port``."""
    entries = [e.strip() for e in (value or "").split(",") if e.strip()]
    if not entries:
        return None
    if len(entries) > 1:
        raise ConfigError(f"advertised.listeners: give one LISTENER://host:port (each node has one listener; "
                          f"node i advertises port+i), got {len(entries)}: {value!r}")
    m = _ENTRY.match(entries[0])
    if m is None:
        raise ConfigError(f"advertised.listeners: expected LISTENER://host:port, e.g. PLAINTEXT://localhost:9092, "
                          f"got {entries[0]!r}")
    host = m["ipv6"] if m["ipv6"] is not None else m["host"]
    if host in ("0.0.0.0", "::"):
        raise ConfigError(f"advertised.listeners cannot use the nonroutable meta-address {host}: "
                          "give the host name or address clients connect to")
    port = int(m["port"])
    if not 0 < port <= 65535:
        raise ConfigError(f"advertised.listeners: port must be 1-65535, got {port}")
    return Advertised(host, port)


@functools.cache
def canonical_host_name() -> str:
    """This host's fully qualified name (Java's InetAddress.getLocalHost().getCanonicalHostName()).
    Looked up once per process: the reverse lookup blocks, and a node coming back up later (a
    fault) must not stall the event loop on it."""
    return socket.getfqdn()


def advertised_address(advertised: Advertised | None, node_index: int, listen_host: str,
                       bound_port: int) -> tuple[str, int]:
    """(host, port) that node ``node_index`` tells clients, listening on listen_host:bound_port."""
    if advertised is not None:
        return advertised.host or canonical_host_name(), advertised.port + node_index
    if listen_host in WILDCARDS:
        return canonical_host_name(), bound_port
    return listen_host, bound_port
