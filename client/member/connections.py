"""The member's connections and requests in flight (what Kafka's NetworkClient keeps, without I/O).

Connections are named by role: the bootstrap connection (metadata, FindCoordinator), the
coordinator's, and one per partition leader ``(BROKER, node_id)``. A connection is usable once
the driver reported it up with the broker's ApiVersions; each request then goes out at the
highest version both sides speak (:func:`pick_version`).
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode

from .actions import Action, Connect, Disconnect, FatalConsumerError, SendRequest

log = logging.getLogger("groupcoord.client")

# plain ints (an IntEnum is slower as a dict key and in comparisons, on the member's every request)
FETCH, LIST_OFFSETS, METADATA = int(ApiKey.FETCH), int(ApiKey.LIST_OFFSETS), int(ApiKey.METADATA)
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = (int(ApiKey.OFFSET_COMMIT), int(ApiKey.OFFSET_FETCH),
                                                 int(ApiKey.FIND_COORDINATOR))
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = (int(ApiKey.JOIN_GROUP), int(ApiKey.HEARTBEAT),
                                                  int(ApiKey.LEAVE_GROUP), int(ApiKey.SYNC_GROUP))
API_VERSIONS = int(ApiKey.API_VERSIONS)
CONSUMER_GROUP_HEARTBEAT = int(ApiKey.CONSUMER_GROUP_HEARTBEAT)
SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE = (int(ApiKey.SHARE_GROUP_HEARTBEAT), int(ApiKey.SHARE_FETCH),
                                                         int(ApiKey.SHARE_ACKNOWLEDGE))

#: The versions this client speaks, per API key (inclusive ranges).
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 3),
    METADATA: (1, 12),
    FIND_COORDINATOR: (0, 4),
    JOIN_GROUP: (0, 9),
    SYNC_GROUP: (0, 5),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
    OFFSET_COMMIT: (2, 9),
    OFFSET_FETCH: (1, 9),
    LIST_OFFSETS: (1, 7),
    FETCH: (4, 12),
    CONSUMER_GROUP_HEARTBEAT: (1, 1),      # v1: the member id is the client's (KIP-1082), as Kafka 4's
    SHARE_GROUP_HEARTBEAT: (1, 1),         # share groups (KIP-932): v1 from Kafka 4.1
    SHARE_FETCH: (1, 2),                   # v2 (4.2): the acquire mode, RENEW
    SHARE_ACKNOWLEDGE: (1, 2),
}

BOOTSTRAP, COORDINATOR, BROKER = "bootstrap", "coordinator", "broker"


def pick_version(api_key: int, broker: Mapping[int, tuple[int, int]] | None,
                 caps: Mapping[int, int] | None = None) -> int | None:
    """Highest version of api_key both sides speak (at most caps[api_key]); None if there is none."""
    ours = CLIENT_VERSIONS[api_key]
    if caps and api_key in caps:
        ours = (ours[0], min(ours[1], caps[api_key]))
    if broker is None:
        return None
    theirs = broker.get(api_key)
    if theirs is None:
        return None
    lo, hi = max(ours[0], theirs[0]), min(ours[1], theirs[1])
    return hi if lo <= hi else None


@dataclass
class Conn:
    conn_id: int
    key: Any                        # BOOTSTRAP, COORDINATOR or (BROKER, node_id)
    node_id: int | None
    host: str | None
    port: int | None
    versions: dict | None = None    # None while connecting
    picked: dict = field(default_factory=dict)   # api key -> version chosen (pick_version)


#: A request awaiting its response: the SendRequest that sent it.
Request = SendRequest


class Connections:
    """Connections by role, requests in flight, reconnect back-offs, and the member's outbox.

    ``actions`` is the outbox every part of the member appends its actions to (the member hands
    it out and puts a new list in its place: parts look it up each time); ``ids`` numbers connections, requests, callbacks and commit handles alike.
    ``on_coordinator_lost(now)`` is called when the coordinator's connection goes away.
    """

    def __init__(self, config, max_versions: Mapping[int, int] | None = None):
        self.ids = itertools.count(1)
        self.actions: list[Action] = []
        self.conns: dict[int, Conn] = {}
        self.by_key: dict[Any, int] = {}
        self.reconnect_at: dict[Any, int] = {}
        self.reconnect_failures: dict[Any, int] = {}
        self.inflight: dict[int, Request] = {}
        self.request_timeout_ms: int = config["request.timeout.ms"]
        self.reconnect_backoff_ms: int = config["reconnect.backoff.ms"]
        self.reconnect_backoff_max_ms: int = config["reconnect.backoff.max.ms"]
        self.max_versions = dict(max_versions or {})
        self.on_coordinator_lost: Callable[[int], None] = lambda now: None

    def connect(self, key, now: int, node: tuple[int, str, int] | None = None) -> Conn | None:
        """The ready connection for key, or None (a Connect goes out if there is none)."""
        cid = self.by_key.get(key)
        if cid is not None:
            conn = self.conns[cid]
            return conn if conn.versions is not None else None
        if now < self.reconnect_at.get(key, 0):
            return None
        self.reconnect_at.pop(key, None)
        cid = next(self.ids)
        node_id, host, port = node if node is not None else (None, None, None)
        conn = Conn(cid, key, node_id, host, port)
        self.conns[cid] = conn
        self.by_key[key] = cid
        role = key if isinstance(key, str) else BROKER
        self.actions.append(Connect(cid, role, node_id, host, port))
        return None

    def on_connected(self, conn_id: int, api_versions) -> None:
        conn = self.conns.get(conn_id)
        if conn is None:
            return
        if isinstance(api_versions, Mapping):
            versions = {int(k): (int(v[0]), int(v[1])) for k, v in api_versions.items()}
        else:
            versions = {e["api_key"]: (e["min_version"], e["max_version"]) for e in api_versions}
        conn.versions = versions
        conn.picked.clear()
        self.reconnect_failures.pop(conn.key, None)

    def drop(self, conn: Conn, now: int, *, backoff: bool, disconnect: bool = False) -> None:
        """Forget conn; its requests are answered None (after the coordinator is marked unknown
        if it was the coordinator's)."""
        self.conns.pop(conn.conn_id, None)
        if self.by_key.get(conn.key) == conn.conn_id:
            del self.by_key[conn.key]
        if disconnect:
            self.actions.append(Disconnect(conn.conn_id))
        if backoff:
            failures = self.reconnect_failures.get(conn.key, 0)
            self.reconnect_failures[conn.key] = failures + 1
            delay = min(self.reconnect_backoff_ms * (2 ** failures), self.reconnect_backoff_max_ms)
            self.reconnect_at[conn.key] = now + delay
        failed = [r for r in self.inflight.values() if r.conn_id == conn.conn_id]
        for r in failed:
            del self.inflight[r.request_id]
        if conn.key == COORDINATOR:
            self.on_coordinator_lost(now)
        for r in failed:
            r.handler(None, r, now)

    def drop_key(self, key, now: int) -> None:
        """Disconnect the connection for key, if there is one (no reconnect back-off)."""
        cid = self.by_key.get(key)
        if cid is not None:
            self.drop(self.conns[cid], now, backoff=False, disconnect=True)

    def send(self, key, api_key: int, build: Callable[[int], dict] | dict, handler: Callable, now: int, *,
             node: tuple[int, str, int] | None = None, timeout_ms: int | None = None,
             ctx: Any = None, conn: Conn | None = None) -> int | None:
        """Send a request on the connection for key once it is ready; None if it is not yet.
        ``build``: the body, or a function of the version that gives it; ``conn``: the ready
        connection for key when the caller has it at hand."""
        if conn is None:
            conn = self.connect(key, now, node)
            if conn is None:
                return None
        picked = conn.picked
        version = picked.get(api_key, -1)
        if version == -1:
            version = picked[api_key] = pick_version(api_key, conn.versions, self.max_versions)
        if version is None:
            broker = conn.versions.get(api_key)
            raise FatalConsumerError(ErrorCode.UNSUPPORTED_VERSION,
                                     f"the broker speaks API {api_key} versions {broker}, this client "
                                     f"{CLIENT_VERSIONS[api_key]}")
        body = build if type(build) is dict else build(version)
        rid = next(self.ids)
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        req = self.inflight[rid] = SendRequest(rid, conn.conn_id, api_key, version, body, timeout, handler,
                                               now + timeout, ctx)
        self.actions.append(req)
        return rid

    def expire(self, now: int) -> bool:
        """Time out requests past their deadline; True if there were any."""
        for r in self.inflight.values():
            if r.deadline <= now:
                break
        else:
            return False               # nothing expired (the common case): no list built
        expired = [r for r in self.inflight.values() if r.deadline <= now]
        for r in expired:
            if r.request_id not in self.inflight:
                continue
            conn = self.conns.get(r.conn_id)
            log.info("request %s (api %s) timed out; disconnecting", r.request_id, r.api_key)
            if conn is not None:
                self.drop(conn, now, backoff=False, disconnect=True)
            else:
                del self.inflight[r.request_id]
                r.handler(None, r, now)
        return True

    def close(self) -> None:
        """Disconnect everything; no response is expected any more."""
        for conn in list(self.conns.values()):
            self.actions.append(Disconnect(conn.conn_id))
        self.conns.clear()
        self.by_key.clear()
        self.inflight.clear()

    def reconnect_deadline(self, now: int, best: int) -> int:
        for d in self.reconnect_at.values():
            if now < d < best:
                best = d
        return best
