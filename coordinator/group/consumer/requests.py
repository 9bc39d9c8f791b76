"""ConsumerGroupHeartbeat as the core takes it (the handler shims the versions; ``error()`` is what
Kafka's API layer refuses), and its error response."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from groupcoord.protocol.errors import ErrorCode

from .group import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH

_E = ErrorCode


_JAVA_WHITESPACE = "".join(map(chr, range(33)))       # what Java's String.trim() strips


def _blank(value: str | None) -> bool:
    """``Utils.throwIfEmptyString``'s test: not null, and empty once trimmed as Java trims."""
    return value is not None and not value.strip(_JAVA_WHITESPACE)


@dataclass(slots=True)
class ConsumerGroupHeartbeatRequest:
    """One ConsumerGroupHeartbeat, whatever its version: what the core takes.
    ``topic_partitions``: [(topic id, [partitions])] or None (unchanged). ``describable(topic)``:
    whether the request's principal may DESCRIBE the topic, None without an authorizer (the
    regexes a heartbeat resolves drop the others)."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: list | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1
    describable: Callable[[str], bool] | None = field(default=None, compare=False, repr=False)

    def error(self, assignors: Iterable[str]) -> tuple[int, str] | None:
        """``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``: (code,
        message) of what Kafka refuses before the coordinator sees the request, or None."""
        epoch = self.member_epoch
        if (self.version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and _blank(self.member_id):
            return _E.INVALID_REQUEST, "MemberId can't be empty."
        if _blank(self.group_id):
            return _E.INVALID_REQUEST, "GroupId can't be empty."
        if _blank(self.instance_id):
            return _E.INVALID_REQUEST, "InstanceId can't be empty."
        if _blank(self.rack_id):
            return _E.INVALID_REQUEST, "RackId can't be empty."
        if epoch == JOIN_EPOCH:
            if self.rebalance_timeout_ms == -1:
                return _E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
            if self.topic_partitions is None or self.topic_partitions:
                return _E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining."
            if self.subscribed_topic_names is None and self.subscribed_topic_regex is None:
                return (_E.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be "
                        "non-null when (re-)joining.")
        elif epoch == STATIC_LEAVE_EPOCH:
            if self.instance_id is None:
                return _E.INVALID_REQUEST, "InstanceId can't be null."
        elif epoch < STATIC_LEAVE_EPOCH:
            return _E.INVALID_REQUEST, "MemberEpoch is invalid."
        names = list(assignors)
        if self.server_assignor is not None and self.server_assignor not in names:
            return (_E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {self.server_assignor} is not supported. "
                    f"Supported assignors: {', '.join(names)}.")
        return None


def heartbeat_error(code: int, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
