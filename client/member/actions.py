"""What the member hands its driver (actions), what it raises, and the values it hands out."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable

from groupcoord.protocol.errors import ErrorCode, KafkaError

from ..assignors.base import TopicPartition as TP

_E = ErrorCode


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"


STABLE, COMPLETING = MemberState.STABLE, MemberState.COMPLETING_REBALANCE
NEVER = 1 << 62                 # deadlines: nothing scheduled (an int: compares faster than inf)


# ================================================================================ errors
class FatalConsumerError(KafkaError):
    """The member cannot go on (FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, ...)."""


class CommitFailedError(KafkaError):
    """The commit cannot succeed: the member's generation is no longer the group's."""

    def __init__(self, message: str | None = None, code: ErrorCode = _E.ILLEGAL_GENERATION):
        super().__init__(code, message or (
            "Commit cannot be completed since the group has already rebalanced and assigned the "
            "partitions to another member."))


class RebalanceInProgressError(KafkaError):
    def __init__(self, message: str | None = None):
        super().__init__(_E.REBALANCE_IN_PROGRESS, message or (
            "Offset commit cannot be completed since the consumer group is executing a rebalance; "
            "poll to complete it, then commit again."))


class RetriableCommitFailedError(KafkaError):
    """An asynchronous commit failed with a retriable error (it is not retried)."""


class NoOffsetForPartitionError(Exception):
    def __init__(self, partitions: Iterable[TP]):
        self.partitions = sorted(partitions)
        super().__init__(f"no committed offset and auto.offset.reset=none for {self.partitions}")


class IllegalStateError(Exception):
    pass


class UnsupportedOperationError(Exception):
    """What the member cannot do in its configuration (Kafka's UnsupportedOperationException)."""


# ================================================================================ values
@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


@dataclass(frozen=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


# ================================================================================ actions
class Action:
    __slots__ = ()


@dataclass
class Connect(Action):
    conn_id: int
    role: str                       # BOOTSTRAP, COORDINATOR or BROKER
    node_id: int | None             # None for bootstrap: any bootstrap server will do
    host: str | None
    port: int | None


@dataclass
class Disconnect(Action):
    conn_id: int


@dataclass(slots=True)
class SendRequest(Action):
    """A request to send; the same object waits in the member's requests in flight for its response
    (one object a request: ``handler(body or None, request, now)`` returns True when the response
    settled all it touched, see Member.on_response; ``deadline`` is when it times out)."""
    request_id: int
    conn_id: int
    api_key: int
    api_version: int
    body: dict
    timeout_ms: int
    handler: Any = field(default=None, repr=False, compare=False)
    deadline: int = field(default=0, repr=False, compare=False)
    ctx: Any = field(default=None, repr=False, compare=False)

    @property
    def version(self) -> int:
        return self.api_version


@dataclass
class RebalanceCallback(Action):
    token: int
    partitions: frozenset
    kind = ""


@dataclass
class PartitionsRevoked(RebalanceCallback):
    kind = "revoked"


@dataclass
class PartitionsAssigned(RebalanceCallback):
    kind = "assigned"


@dataclass
class PartitionsLost(RebalanceCallback):
    kind = "lost"


@dataclass
class CommitCompleted(Action):
    handle: int
    kind: str                       # sync, async, auto, rebalance, close
    offsets: dict
    error: Exception | None


@dataclass
class OffsetsFetched(Action):
    handle: int
    offsets: dict                   # TP -> OffsetAndMetadata | None
    error: Exception | None


@dataclass
class ErrorRaised(Action):
    error: Exception
    fatal: bool


@dataclass
class Closed(Action):
    pass
