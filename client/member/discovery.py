"""Finding the group's coordinator (AbstractCoordinator's lookup): FindCoordinator on the
bootstrap connection, rediscovery when the coordinator is lost, moves, or stops answering."""
from __future__ import annotations

import logging

from groupcoord.protocol.errors import ErrorCode

from .actions import FatalConsumerError
from .connections import BOOTSTRAP, COORDINATOR, FIND_COORDINATOR, Conn, Request

log = logging.getLogger("groupcoord.client")

_E = ErrorCode
_error = ErrorCode.lookup


class Discovery:
    """``coordinator``: (node id, host, port) once known, else None."""

    def __init__(self, member):
        self.member = member
        self.net = member.net
        self.group_id: str | None = member.group_id
        self.coordinator: tuple[int, str, int] | None = None
        self.in_flight = False
        self.retry_at = 0
        self.retry_backoff_ms: int = member.config["retry.backoff.ms"]
        member.net.on_coordinator_lost = self.connection_lost

    def conn(self, now: int) -> Conn | None:
        """The ready connection to the coordinator, or None (a Connect goes out if there is none)."""
        if self.coordinator is None:
            return None
        net = self.net
        cid = net.by_key.get(COORDINATOR)
        if cid is not None:
            conn = net.conns[cid]
            return conn if conn.versions is not None else None
        return net.connect(COORDINATOR, now, self.coordinator)

    def ready(self, now: int) -> bool:
        return self.conn(now) is not None

    def needed(self) -> bool:
        """Whether a connection to the coordinator is wanted (_step's guard)."""
        return self.coordinator is None or COORDINATOR not in self.net.by_key

    def step(self, now: int) -> None:
        if self.coordinator is not None:
            self.net.connect(COORDINATOR, now, self.coordinator)
            return
        if not self.member.needs_coordinator() or self.in_flight or now < self.retry_at:
            return
        group = self.group_id

        def build(v: int) -> dict:
            if v >= 4:
                return {"key_type": 0, "coordinator_keys": [group]}
            return {"key": group, "key_type": 0}
        if self.net.send(BOOTSTRAP, FIND_COORDINATOR, build, self.on_find_coordinator, now) is not None:
            self.in_flight = True

    def on_find_coordinator(self, resp: dict | None, req: Request, now: int) -> None:
        self.in_flight = False
        if resp is None:
            self.retry_at = now + self.retry_backoff_ms
            return
        if req.version >= 4:
            entry = next((c for c in resp["coordinators"] if c["key"] == self.group_id), None)
            if entry is None:
                self.retry_at = now + self.retry_backoff_ms
                return
        else:
            entry = resp
        code = _error(entry["error_code"])
        if code == _E.NONE:
            if self.coordinator is None:
                self.coordinator = (entry["node_id"], entry["host"], entry["port"])
                log.info("%s: discovered coordinator %s", self.member.who(), self.coordinator)
                self.net.connect(COORDINATOR, now, self.coordinator)
            return
        if code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {self.group_id}")
        if isinstance(code, ErrorCode) and code.retriable:
            self.retry_at = now + self.retry_backoff_ms
            return
        raise FatalConsumerError(code, f"FindCoordinator failed: {entry.get('error_message') or code}")

    def unknown(self, now: int, reason: str, *, disconnect: bool = True) -> None:
        """AbstractCoordinator.markCoordinatorUnknown: drop the connection, rediscover."""
        if self.coordinator is None:
            return
        log.info("%s: coordinator %s unknown: %s", self.member.who(), self.coordinator, reason)
        self.coordinator = None
        self.retry_at = 0
        if disconnect:
            self.net.drop_key(COORDINATOR, now)

    def connection_lost(self, now: int) -> None:
        self.unknown(now, "coordinator connection lost", disconnect=False)

    def deadline(self, now: int, best: int) -> int:
        d = self.retry_at
        return d if now < d < best else best
