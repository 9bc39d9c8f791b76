"""ShareGroupHeartbeat as the core takes it (``error()`` is what Kafka's group coordinator service
refuses before the core sees it), and its error response."""
from __future__ import annotations

from dataclasses import dataclass

from groupcoord.protocol.errors import ErrorCode

from .group import JOIN_EPOCH, LEAVE_EPOCH

_E = ErrorCode

_JAVA_WHITESPACE = "".join(map(chr, range(33)))       # what Java's String.trim() strips


def _blank(value: str | None) -> bool:
    """``Utils.throwIfEmptyString``'s test: not null, and empty once trimmed as Java trims."""
    return value is not None and not value.strip(_JAVA_WHITESPACE)


@dataclass(slots=True)
class ShareGroupHeartbeatRequest:
    """One ShareGroupHeartbeat: what the core takes. ``rack_id`` and ``subscribed_topic_names`` None:
    unchanged since the member's last heartbeat."""
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list | None = None
    client_id: str = ""
    client_host: str = ""

    def error(self) -> tuple[int, str] | None:
        """``GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid``: (code, message) of
        what Kafka refuses before the coordinator sees the request, or None."""
        if _blank(self.member_id):
            return _E.INVALID_REQUEST, "MemberId can't be empty."
        if _blank(self.group_id):
            return _E.INVALID_REQUEST, "GroupId can't be empty."
        if _blank(self.rack_id):
            return _E.INVALID_REQUEST, "RackId can't be empty."
        if self.member_epoch == JOIN_EPOCH:
            if not self.subscribed_topic_names:
                return _E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
        elif self.member_epoch < LEAVE_EPOCH:
            return _E.INVALID_REQUEST, "MemberEpoch is invalid."
        return None


def heartbeat_error(code: int, message: str | None = None) -> dict:
    """A ShareGroupHeartbeat response with an error (Kafka's ``getErrorResponse`` gives no message;
    the coordinator's errors have one)."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
