"""The classic protocol's requests as the core takes them (the handlers shim the versions and
check them with ``error()`` as Kafka's API layer does), and its error responses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from groupcoord.protocol.errors import ErrorCode

_NONE = 0
_E = ErrorCode


def join_error(member_id: str, error: int) -> dict:
    """A JoinGroup error response (ProtocolName None: the handler maps it by version)."""
    return {"throttle_time_ms": 0, "error_code": int(error), "generation_id": -1, "protocol_type": None,
            "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": member_id,
            "members": []}


def sync_error(error: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(error), "protocol_type": None, "protocol_name": None,
            "assignment": b""}


def _protocols(protocols) -> list:
    """Normalize JoinGroup protocols to a list of (name, bytes)."""
    out = []
    for p in protocols:
        if isinstance(p, dict):
            name, data = p["name"], p["metadata"]
        else:
            name, data = p
        if data is None:
            data = b""
        elif not isinstance(data, bytes):
            data = bytes(data)
        out.append((name, data))
    return out


@dataclass(slots=True)
class SyncGroupRequest:
    """One SyncGroup, whatever its version (the handler shims the versions): what the core takes.
    ``assignments``: the leader's [(member_id, bytes)] or [{"member_id", "assignment"}]."""
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list | tuple = ()

    def error(self) -> int | None:
        """What Kafka's API layer refuses before the coordinator sees it: an empty group id."""
        return _E.INVALID_GROUP_ID if not self.group_id else None


@dataclass(slots=True)
class HeartbeatRequest:
    """One Heartbeat, whatever its version (the handler shims the versions): what the core takes
    (the handler refuses an empty group id)."""
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


def _leaving(members) -> list:
    """Normalize LeaveGroup members to a list of (member_id, group_instance_id, reason)."""
    out = []
    for m in members:
        if isinstance(m, dict):
            out.append((m.get("member_id", ""), m.get("group_instance_id"), m.get("reason")))
        else:
            m = tuple(m)
            out.append((m[0], m[1] if len(m) > 1 else None, m[2] if len(m) > 2 else None))
    return out


@dataclass(slots=True)
class LeaveGroupRequest:
    """One LeaveGroup, whatever its version (the handler shims the versions: v0-2's one MemberId is
    a batch of one): what the core takes. ``members``: [(member_id, group_instance_id, reason)];
    [{"member_id", "group_instance_id", "reason"}] and shorter tuples are normalized to that."""
    group_id: str
    members: list

    def __post_init__(self) -> None:
        self.members = _leaving(self.members)

    def error(self) -> int | None:
        """What Kafka's API layer refuses before the coordinator sees it: an empty group id."""
        return _E.INVALID_GROUP_ID if not self.group_id else None


@dataclass(slots=True)
class JoinGroupRequest:
    """One JoinGroup, whatever its version (the handler shims the versions): what the core takes.

    ``rebalance_timeout_ms`` None means "same as the session timeout" (JoinGroup v0).
    ``require_known_member_id``: request version >= 4 (KIP-394).
    ``supports_skip_assignment``: request version >= 9 (KIP-814).
    ``protocols``: [(name, metadata)] or [{"name", "metadata"}] in preference order.
    ``respond``: where the answer goes (set by :meth:`GroupCoordinator.join_group`)."""
    group_id: str
    session_timeout_ms: int
    protocol_type: str
    protocols: list
    member_id: str = ""
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int | None = None
    reason: str | None = None
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True
    respond: Callable[[dict], None] | None = None

    def __post_init__(self) -> None:
        if self.rebalance_timeout_ms is None:
            self.rebalance_timeout_ms = self.session_timeout_ms
        self.protocols = _protocols(self.protocols)

    def error(self, min_session_timeout_ms: int, max_session_timeout_ms: int) -> int | None:
        """What Kafka's API layer refuses before the coordinator sees the request: an empty group
        id (INVALID_GROUP_ID), a session timeout out of the group.{min,max}.session.timeout.ms
        bounds (INVALID_SESSION_TIMEOUT). None: valid."""
        if not self.group_id:
            return _E.INVALID_GROUP_ID
        if not min_session_timeout_ms <= self.session_timeout_ms <= max_session_timeout_ms:
            return _E.INVALID_SESSION_TIMEOUT
        return None


