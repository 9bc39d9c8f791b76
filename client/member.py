"""Kafka's ConsumerCoordinator as a pure object (sans-I/O): requests out, responses and time in.

A :class:`Member` is one consumer of a classic consumer group. It knows nothing of sockets,
threads or event loops; every entry point takes ``now`` (milliseconds of whatever clock the
driver uses) and the member answers with *actions*:

=======================  =============================================================
:class:`Connect`          open connection ``conn_id`` (bootstrap, coordinator or a broker),
                          negotiate ApiVersions, then call :meth:`Member.on_connected` (or
                          :meth:`Member.on_connection_lost` if that failed)
:class:`SendRequest`      send ``(api_key, api_version, body)`` on ``conn_id``; hand the decoded
                          response to :meth:`Member.on_response` with ``request_id``
:class:`Disconnect`       close ``conn_id``; nothing more is expected from it
:class:`PartitionsRevoked` / :class:`PartitionsAssigned` / :class:`PartitionsLost`
                          run the rebalance listener, then :meth:`Member.callback_done` with
                          the action's ``token`` (the rebalance waits for it)
:class:`CommitCompleted`  an offset commit finished (``error`` None on success)
:class:`OffsetsFetched`   a :meth:`Member.fetch_committed` finished
:class:`ErrorRaised`      an error for the application; ``fatal`` ones end the member
:class:`Closed`           :meth:`Member.close` is complete
=======================  =============================================================

Driving it (h11 style)::

    member = Member(config, assignors, topics=["orders"], now=clock())
    while True:
        for action in member.poll(clock()):           # timers fire inside poll
            ...execute it...
        wait until member.next_deadline() or an I/O event; feed the event in:
        member.on_response(request_id, body, clock()) / on_connected / on_connection_lost
        member.callback_done(token, clock())           # after running a rebalance callback
        member.application_poll(clock())               # each time the application polls

Call :meth:`Member.poll` after every input (a driver may skip it after a response for which
:meth:`Member.on_response` returned False, taking the actions with :meth:`Member.take_actions`:
the virtual-time simulator does). The application side: :meth:`Member.commit`
(sync/async), :meth:`Member.fetch_committed`, :meth:`Member.seek` / :meth:`Member.position`,
:meth:`Member.take_records` (with ``fetch=True``), :meth:`Member.subscribe`,
:meth:`Member.close`; state: ``assignment``, ``generation_id``, ``member_id``, ``is_leader``,
``state``, :attr:`Member.stable`, ``fatal_error``.

Rebalance callbacks are actions, so they run between two polls; the member keeps the partitions
being revoked assigned (positions readable, commits possible) until the driver reports the
callback done, and only then goes on with the rebalance (JoinGroup after an eager revocation,
the assignment after a cooperative one), as Kafka invokes its listener before changing the
assignment.

What it implements, after Kafka's ``AbstractCoordinator`` and ``ConsumerCoordinator``
(Kafka 3.x, the classic protocol):

- FindCoordinator on the bootstrap connection, rediscovery on NOT_COORDINATOR,
  COORDINATOR_NOT_AVAILABLE, a lost coordinator connection, or a request timeout;
- JoinGroup (KIP-394 MEMBER_ID_REQUIRED retry, static membership with group.instance.id) with
  one ConsumerProtocolSubscription v3 per configured assignor (topics, assignor user data,
  owned partitions, generation, rack); the leader decodes every member's subscription, gets
  partition counts from Metadata, runs the assignor the coordinator selected and sends the
  encoded assignments in SyncGroup; followers send none; KIP-814 SkipAssignment;
- the JoinGroup/SyncGroup/Heartbeat/OffsetCommit error reactions of the Java client
  (``joinGroupIfNeeded``: UNKNOWN_MEMBER_ID resets the member id, ILLEGAL_GENERATION the
  generation, REBALANCE_IN_PROGRESS and MEMBER_ID_REQUIRED rejoin at once, coordinator errors
  rediscover and back off, COORDINATOR_LOAD_IN_PROGRESS backs off, anything else is fatal);
- heartbeats every heartbeat.interval.ms; a member without a successful heartbeat for
  session.timeout.ms considers itself out of the group (PartitionsLost, rejoin); if the
  application does not poll within max.poll.interval.ms the member leaves the group (LeaveGroup
  for dynamic members) and rejoins at the next application poll, as Kafka does;
- the rebalance protocol Kafka chooses: the highest protocol all assignors support (COOPERATIVE
  only if every assignor supports it). EAGER revokes everything before joining; COOPERATIVE
  (KIP-429) revokes, after SyncGroup, only what the new assignment no longer holds, assigns only
  what is new, and rejoins at once when something was revoked;
- offsets: commits (sync with retries until default.api.timeout.ms, async without), auto-commit
  every auto.commit.interval.ms, a commit before revocation (of everything before an eager
  rebalance, of the revoked partitions in a cooperative one), OffsetFetch of newly assigned
  partitions and ListOffsets (auto.offset.reset) for those without a committed offset;
- LeaveGroup on close for dynamic members (static members stay until their session ends);
- optionally (``fetch=True``) a simple fetcher: Fetch to the partition leaders, records decoded
  from the record batches and handed out by :meth:`Member.take_records`.

API versions: each connection's ApiVersions ranges (given to :meth:`Member.on_connected`) are
intersected with :data:`CLIENT_VERSIONS`, and the highest common version is used.
"""
from __future__ import annotations

import enum
import itertools
import logging
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from groupcoord.protocol import records as records_codec
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.consumer import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    flatten_partitions,
    group_partitions,
)
from groupcoord.protocol.errors import DecodeError, ErrorCode, KafkaError

from .assignors.base import (
    Assignment,
    ClusterMetadata,
    ConsumerGroupMetadata,
    ConsumerPartitionAssignor,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
    TopicPartition,
)
from .consumer_config import ConfigError, ConsumerConfig

log = logging.getLogger("groupcoord.client")

TP = TopicPartition

# ---------------------------------------------------------------------------------- API keys
# plain ints (an IntEnum is slower as a dict key and in comparisons, on the member's every request)
FETCH, LIST_OFFSETS, METADATA = int(ApiKey.FETCH), int(ApiKey.LIST_OFFSETS), int(ApiKey.METADATA)
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = (int(ApiKey.OFFSET_COMMIT), int(ApiKey.OFFSET_FETCH),
                                                 int(ApiKey.FIND_COORDINATOR))
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = (int(ApiKey.JOIN_GROUP), int(ApiKey.HEARTBEAT),
                                                  int(ApiKey.LEAVE_GROUP), int(ApiKey.SYNC_GROUP))
API_VERSIONS = int(ApiKey.API_VERSIONS)

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
}

PROTOCOL_TYPE = "consumer"
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000          # AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE
EARLIEST, LATEST = -2, -1                   # ListOffsets timestamps

BOOTSTRAP, COORDINATOR, BROKER = "bootstrap", "coordinator", "broker"

_E = ErrorCode
_COORDINATOR_ERRORS = (_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR)


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    STABLE = "STABLE"


_STABLE, _COMPLETING = MemberState.STABLE, MemberState.COMPLETING_REBALANCE
_NEVER = 1 << 62                 # next_deadline: nothing scheduled (an int: compares faster than inf)


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


@dataclass
class SendRequest(Action):
    request_id: int
    conn_id: int
    api_key: int
    api_version: int
    body: dict
    timeout_ms: int


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


# ================================================================================ internals
@dataclass
class _Conn:
    conn_id: int
    key: Any                        # BOOTSTRAP, COORDINATOR or (BROKER, node_id)
    node_id: int | None
    host: str | None
    port: int | None
    versions: dict | None = None    # None while connecting
    picked: dict = field(default_factory=dict)   # api key -> version chosen (pick_version)


@dataclass(slots=True)
class _Request:
    """A request awaiting its response. ``handler(body or None, request, now)`` returns True when
    the response settled all it touched (see Member.on_response), a falsy value otherwise."""
    request_id: int
    conn_id: int
    api_key: int
    version: int
    handler: Callable
    deadline: int
    ctx: Any = None


@dataclass
class _Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


@dataclass
class _CommitOp:
    handle: int
    kind: str
    offsets: dict
    deadline: int
    retry: bool
    next_try: int = 0
    in_flight: bool = False
    done: bool = False
    error: Exception | None = None


@dataclass
class _FetchOffsetsOp:
    handle: int
    partitions: frozenset
    deadline: int
    internal: bool
    next_try: int = 0
    in_flight: bool = False


@dataclass
class _CompletedFetch:
    records: deque
    next_offset: int
    fetch_offset: int


def _tps(entries) -> frozenset:
    return frozenset(TP(t, p) for t, p in flatten_partitions(entries or []))


def _sorted(tps) -> list:
    return sorted(tps)


_error = ErrorCode.lookup      # the member for code, or code itself when Kafka has none


# Metadata answers are often one object handed to many members (a fleet's decode cache, the
# coordinator's per-epoch answer in the simulator): the tables built from a topic entry are then
# built once and shared (read-only). Keyed by the entry's id, which stays valid while the entry is held here.
_TOPIC_TABLES: dict[int, tuple] = {}
_TOPIC_TABLES_MAX = 8


def _topic_tables(t: dict) -> tuple[dict[int, int], dict[int, tuple], bool]:
    """(partition -> leader (-1: none), partition -> replicas, whether any has no leader) of a
    Metadata topic entry."""
    parts = t["partitions"]
    hit = _TOPIC_TABLES.get(id(t))
    if hit is not None and hit[0] is t and hit[1] is parts and hit[2] == len(parts):
        return hit[3]
    leaders = {}
    replicas = {}
    for p in parts:
        i = p["partition_index"]
        leaders[i] = p["leader_id"] if p["error_code"] == 0 else -1
        replicas[i] = tuple(p["replica_nodes"])
    tables = (leaders, replicas, any(leader < 0 for leader in leaders.values()))
    if len(_TOPIC_TABLES) >= _TOPIC_TABLES_MAX:
        try:
            _TOPIC_TABLES.pop(next(iter(_TOPIC_TABLES)))
        except (RuntimeError, StopIteration, KeyError):     # members on other threads
            pass
    _TOPIC_TABLES[id(t)] = (t, parts, len(parts), tables)
    return tables


def choose_rebalance_protocol(assignors: list[ConsumerPartitionAssignor]) -> RebalanceProtocol:
    """ConsumerCoordinator's choice: the highest protocol every assignor supports."""
    if not assignors:
        raise ConfigError("partition.assignment.strategy", "needs at least one assignor")
    common = set(assignors[0].supported_protocols)
    for a in assignors[1:]:
        common &= set(a.supported_protocols)
    if not common:
        raise ConfigError("partition.assignment.strategy",
                          f"assignors {[a.name for a in assignors]} have no rebalance protocol in common")
    return max(common, key=lambda p: p.value)


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


# ================================================================================ the member
class Member:
    """One consumer-group member; see the module docstring.

    ``config``     a :class:`ConsumerConfig` or a mapping of Kafka consumer configs.
    ``assignors``  assignor objects; default: from partition.assignment.strategy.
    ``topics``     the subscription (may also be given later with :meth:`subscribe`).
    ``fetch``      also fetch records for the assigned partitions (:meth:`take_records`).
    ``rng``        randomness (only used for the fetch order); seed it for reproducible runs.
    ``max_versions`` api key -> highest version to use, below what both sides advertise (for
                   brokers that advertise versions they do not parse correctly).
    """

    # Attributes in slots: CPython 3.11 specializes attribute and method access on them, while an
    # instance dict of more than 30 keys is not shared, and every method call on it (self._step,
    # m.poll) then takes the slow generic lookup. A new attribute goes here (the test of the
    # simulator's hot path checks that the instance dict, kept for tests' spies, stays empty).
    __slots__ = (
        "__dict__",
        "api_timeout_ms", "assignment", "assignors", "auto_commit", "auto_commit_interval_ms", "client_id",
        "closed", "committed_offsets", "config", "coordinator", "fatal_error", "fetch_enabled",
        "generation", "group_id", "group_instance_id", "heartbeat_interval_ms", "is_leader", "leader_id",
        "max_poll_interval_ms", "max_versions", "positions", "protocol", "rebalance_timeout_ms",
        "rebalances", "request_timeout_ms", "retry_backoff_ms", "session_timeout_ms", "settled_deadline",
        "state", "subscription",
        "_actions", "_assignment_snapshot", "_brokers", "_callbacks_pending", "_closing", "_commits",
        "_committed_in_flight", "_completed", "_completion", "_conn_by_key", "_conns", "_consumed_cache",
        "_fetches_in_flight", "_find_in_flight", "_find_retry_at", "_group_topics", "_hb_in_flight",
        "_hb_next", "_ids", "_inflight", "_join_retry_at", "_joined_subscription", "_last_app_poll",
        "_leader_task", "_left_on_poll_timeout", "_metadata_in_flight", "_metadata_next",
        "_metadata_requested", "_metadata_retry_at", "_metadata_topics", "_metadata_version",
        "_need_committed", "_need_reset", "_needs_prepare", "_next_auto_commit", "_now", "_offset_fetches",
        "_partition_replicas", "_pending_revocation", "_prepare", "_reconnect_at", "_reconnect_failures",
        "_rejoin_needed", "_rejoin_reason", "_reset_in_flight", "_reset_retry_at", "_rng",
        "_session_deadline", "_sorted_assignment", "_topics_meta",
    )

    def __init__(self, config: ConsumerConfig | Mapping[str, Any], assignors: list | None = None, *,
                 topics: Iterable[str] = (), now: int = 0, fetch: bool = False,
                 rng: random.Random | None = None, max_versions: Mapping[int, int] | None = None):
        self.config = config if isinstance(config, ConsumerConfig) else ConsumerConfig(config)
        cfg = self.config
        self.group_id: str | None = cfg["group.id"]
        self.group_instance_id: str | None = cfg["group.instance.id"]
        self.client_id: str = cfg["client.id"]
        self.assignors: list[ConsumerPartitionAssignor] = (
            list(assignors) if assignors is not None else cfg.assignors())
        for a in self.assignors:
            if not isinstance(a, ConsumerPartitionAssignor):
                raise ConfigError("partition.assignment.strategy", f"{a!r} is not a ConsumerPartitionAssignor")
        self.protocol: RebalanceProtocol = choose_rebalance_protocol(self.assignors)
        self.session_timeout_ms: int = cfg["session.timeout.ms"]
        self.heartbeat_interval_ms: int = cfg["heartbeat.interval.ms"]
        self.rebalance_timeout_ms: int = cfg["max.poll.interval.ms"]
        self.max_poll_interval_ms: int = cfg["max.poll.interval.ms"]
        self.auto_commit: bool = cfg["enable.auto.commit"] and self.group_id is not None
        self.auto_commit_interval_ms: int = cfg["auto.commit.interval.ms"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.request_timeout_ms: int = cfg["request.timeout.ms"]
        self.api_timeout_ms: int = cfg["default.api.timeout.ms"]
        self.fetch_enabled = fetch
        self.max_versions = dict(max_versions or {})
        self._rng = rng or random.Random()

        # connections and requests
        self._ids = itertools.count(1)
        self._conns: dict[int, _Conn] = {}
        self._conn_by_key: dict[Any, int] = {}
        self._reconnect_at: dict[Any, int] = {}
        self._reconnect_failures: dict[Any, int] = {}
        self._inflight: dict[int, _Request] = {}
        self._actions: list[Action] = []
        self._now = now

        # coordinator
        self.coordinator: tuple[int, str, int] | None = None
        self._find_in_flight = False
        self._find_retry_at = 0

        # group membership
        self.subscription: frozenset[str] = frozenset()
        self.state = MemberState.UNJOINED
        self.generation = _Generation()
        self.is_leader = False
        self.leader_id: str | None = None
        self._rejoin_needed = True
        self._rejoin_reason = "initial join"
        self._needs_prepare = True
        self._prepare: dict | None = None
        self._join_retry_at = 0
        self._leader_task: dict | None = None          # leader waiting for metadata to assign
        self._completion: dict | None = None           # work after a successful SyncGroup
        self._joined_subscription: frozenset[str] | None = None
        self._group_topics: frozenset[str] = frozenset()
        self._assignment_snapshot: dict[str, int] | None = None
        self._left_on_poll_timeout = False
        self._callbacks_pending: set[int] = set()
        self._pending_revocation: set[TP] = set()     # still assigned, being given up
        self.rebalances = 0                            # successful SyncGroups (for tests and stats)

        # liveness
        self._hb_in_flight = False
        self._hb_next = 0
        self.settled_deadline: int | None = None     # see on_response
        self._session_deadline: int | None = None
        self._last_app_poll = now

        # closing / fatal
        self._closing: dict | None = None
        self.closed = False
        self.fatal_error: Exception | None = None

        # assignment and offsets
        self.assignment: frozenset[TP] = frozenset()
        self.positions: dict[TP, int] = {}
        self._sorted_assignment: tuple = (None, [])      # (assignment, sorted) for all_consumed
        self._consumed_cache: dict[TP, OffsetAndMetadata] = {}
        self._need_committed: set[TP] = set()
        self._need_reset: set[TP] = set()
        self._committed_in_flight: set[TP] = set()
        self._reset_in_flight: set[TP] = set()
        self._reset_retry_at = 0
        self._commits: list[_CommitOp] = []
        self._offset_fetches: list[_FetchOffsetsOp] = []
        self._next_auto_commit = now + self.auto_commit_interval_ms
        self.committed_offsets: dict[TP, int] = {}     # last successfully committed, per partition

        # metadata
        self._topics_meta: dict[str, dict[int, int]] = {}   # topic -> partition -> leader (-1: none)
        self._partition_replicas: dict[str, dict[int, tuple]] = {}   # topic -> partition -> replicas
        self._brokers: dict[int, tuple[str, int, str | None]] = {}
        self._metadata_in_flight = False
        self._metadata_requested = True
        self._metadata_next = now                           # next periodic refresh
        self._metadata_retry_at = 0                         # backoff of requested refreshes
        self._metadata_version = 0                          # bumped per response
        self._metadata_topics: frozenset[str] = frozenset() # topics of the last response

        # fetcher
        self._fetches_in_flight: set[int] = set()           # node ids
        self._completed: dict[TP, _CompletedFetch] = {}

        if topics:
            self.subscribe(topics, now)

    # ============================================================================ inputs
    def subscribe(self, topics: Iterable[str], now: int) -> None:
        """Set the subscription; a change while in a group makes the member rejoin."""
        if self.group_id is None:
            raise ConfigError("group.id", "subscribe() needs group.id")
        new = frozenset(topics)
        if new == self.subscription:
            return
        self.subscription = new
        self._metadata_requested = True
        self._request_rejoin("subscription changed")

    def application_poll(self, now: int) -> bool:
        """The application polled: resets the max.poll.interval.ms timer (Kafka's pollTimer).
        True if that asks for a rejoin (the first poll after leaving on the poll timeout)."""
        self._last_app_poll = now
        if self._left_on_poll_timeout:
            self._left_on_poll_timeout = False
            self._request_rejoin("rejoining after the poll timeout")
            return True
        return False

    def on_connected(self, conn_id: int, api_versions, now: int) -> None:
        """Connection conn_id is up; api_versions: the broker's ApiVersions ``api_keys``
        (a list of {api_key, min_version, max_version}) or a mapping key -> (min, max)."""
        conn = self._conns.get(conn_id)
        if conn is None:
            return
        if isinstance(api_versions, Mapping):
            versions = {int(k): (int(v[0]), int(v[1])) for k, v in api_versions.items()}
        else:
            versions = {e["api_key"]: (e["min_version"], e["max_version"]) for e in api_versions}
        conn.versions = versions
        conn.picked.clear()
        self._reconnect_failures.pop(conn.key, None)

    def on_connection_lost(self, conn_id: int, now: int) -> None:
        """Connection conn_id failed to open or broke; its requests get no responses."""
        conn = self._conns.get(conn_id)
        if conn is None:
            return
        self._now = now
        try:
            self._drop_conn(conn, now, backoff=True)
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)

    def on_response(self, request_id: int, body: dict | None, now: int) -> bool:
        """The response to request_id. Returns False when it settled all it touched: a successful
        heartbeat before the next one is due, a successful commit that nothing of a rebalance or
        of close() waits for. Then poll() has nothing to do because of it (only its actions, a
        CommitCompleted, to hand out: :meth:`take_actions`) and a driver may skip the poll; such a
        response moved no deadline earlier but :attr:`settled_deadline` (the next heartbeat's),
        so a driver that knows the member's last next_deadline() need not ask again."""
        self.settled_deadline = None
        req = self._inflight.pop(request_id, None)
        if req is None:
            return True
        self._now = now
        try:
            handler = req.handler      # (a call through a local: 3.11 specializes it, not req.handler())
            return not handler(body, req, now)
        except (FatalConsumerError, IllegalStateError) as e:
            self._fail_fatally(e)
            return True

    def callback_done(self, token: int, now: int) -> None:
        """The rebalance listener ran the callback of the action with this token."""
        self._callbacks_pending.discard(token)

    # ---- application requests ---------------------------------------------------------
    def commit(self, offsets: Mapping[TP, int | OffsetAndMetadata] | None, now: int, *,
               sync: bool = True, timeout_ms: int | None = None) -> int:
        """Commit offsets (the next offsets to read), or every consumed position if None.

        Returns a handle; a :class:`CommitCompleted` with it follows. Sync commits retry
        retriable errors until the timeout (default.api.timeout.ms); async ones do not.
        """
        if offsets is None:
            offsets = self.all_consumed()
        normalized = {}
        for tp, v in offsets.items():
            tp = TP(*tp)
            normalized[tp] = v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(int(v))
        return self._start_commit(normalized, "sync" if sync else "async", now, retry=sync,
                                  timeout_ms=timeout_ms)

    def fetch_committed(self, partitions: Iterable[TP], now: int, *, timeout_ms: int | None = None) -> int:
        """OffsetFetch for partitions; an :class:`OffsetsFetched` with the returned handle follows."""
        handle = next(self._ids)
        deadline = now + (self.api_timeout_ms if timeout_ms is None else timeout_ms)
        self._offset_fetches.append(_FetchOffsetsOp(handle, frozenset(TP(*tp) for tp in partitions),
                                                    deadline, internal=False))
        return handle

    def close(self, now: int, timeout_ms: int | None = None) -> None:
        """Leave the group as Kafka's close does: auto-commit, revoke, LeaveGroup (dynamic only)."""
        if self._closing is not None or self.closed:
            return
        self._closing = {"deadline": now + (self.api_timeout_ms if timeout_ms is None else timeout_ms),
                         "stage": "commit"}

    def seek(self, tp: TP, offset: int) -> None:
        tp = TP(*tp)
        if tp not in self.assignment:
            raise IllegalStateError(f"{tp} is not assigned to this member")
        self.positions[tp] = offset
        self._need_committed.discard(tp)
        self._need_reset.discard(tp)
        self._completed.pop(tp, None)

    def position(self, tp: TP) -> int | None:
        return self.positions.get(TP(*tp))

    def all_consumed(self) -> dict[TP, OffsetAndMetadata]:
        """SubscriptionState.allConsumed: the position of every assigned partition that has one."""
        assignment = self.assignment
        if self._sorted_assignment[0] is not assignment:
            self._sorted_assignment = (assignment, _sorted(assignment))
        positions = self.positions
        cache = self._consumed_cache        # OffsetAndMetadata is immutable: reuse unchanged ones
        out = {}
        for tp in self._sorted_assignment[1]:
            if tp in positions:
                offset = positions[tp]
                om = cache.get(tp)
                if om is None or om.offset != offset:
                    om = cache[tp] = OffsetAndMetadata(offset)
                out[tp] = om
        return out

    def take_records(self, max_records: int | None = None) -> list[ConsumerRecord]:
        """Fetched records of assigned partitions, advancing their positions (fetch=True)."""
        limit = max_records or self.config["max.poll.records"]
        out: list[ConsumerRecord] = []
        for tp in list(self._completed):
            if len(out) >= limit:
                break
            cf = self._completed[tp]
            if tp in self._pending_revocation:
                continue
            if tp not in self.assignment or self.positions.get(tp) != cf.fetch_offset:
                del self._completed[tp]
                continue
            while cf.records and len(out) < limit:
                rec = cf.records.popleft()
                out.append(rec)
                self.positions[tp] = rec.offset + 1
            cf.fetch_offset = self.positions[tp]
            if not cf.records:
                self.positions[tp] = max(self.positions[tp], cf.next_offset)
                del self._completed[tp]
        return out

    # ---- introspection ------------------------------------------------------------------
    @property
    def member_id(self) -> str:
        return self.generation.member_id

    @property
    def generation_id(self) -> int:
        return self.generation.generation_id

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def stable(self) -> bool:
        """In a stable generation with nothing of a rebalance left to do: no rejoin requested, no
        assignment being applied, no listener callback outstanding."""
        return (self.state == MemberState.STABLE and not self._rejoin_needed and self._completion is None
                and self._prepare is None and not self._callbacks_pending and self.fatal_error is None
                and self._closing is None)

    def group_metadata(self) -> ConsumerGroupMetadata:
        return ConsumerGroupMetadata(self.group_id or "", self.generation.generation_id,
                                     self.generation.member_id, self.group_instance_id)

    def in_flight(self) -> list[tuple[int, int]]:
        """(request id, api key) of every request awaiting a response."""
        return [(r.request_id, r.api_key) for r in self._inflight.values()]

    # ============================================================================ the pump
    def poll(self, now: int) -> list[Action]:
        """Run everything due at ``now``; returns the actions to execute, in order."""
        self._now = now
        if self.closed:
            return self.take_actions()
        before = self._snapshot()
        for _ in range(8):
            if self.closed:
                break
            quiet = not self._expire_requests(now)
            if self.fatal_error is not None and self._closing is not None and not self.closed:
                self._finish_close(now)       # a failed member has nothing left to say to the group
            if self.fatal_error is None:
                try:
                    quiet = self._step(now) and quiet
                except (FatalConsumerError, IllegalStateError) as e:
                    self._fail_fatally(e)
                    quiet = False
            else:
                quiet = False
            if quiet and self.request_timeout_ms > 0 and self.auto_commit_interval_ms > 0:
                # the pass only sent a heartbeat or ran the commits (auto-commit, sends, done
                # ones dropped): they change nothing another step reads (nor what the snapshot
                # holds but the actions and the commits), so another pass would find nothing to do
                break
            after = self._snapshot()
            if after == before:
                break
            before = after
        out, self._actions = self._actions, []     # (take_actions(), without the call)
        return out

    def _snapshot(self) -> tuple:
        """What a step may change that lets another step go on at once."""
        return (len(self._actions), self.state, self._completion is None, self._prepare is None,
                self._rejoin_needed, self._needs_prepare, self.coordinator, len(self._commits),
                len(self._callbacks_pending), self.closed, self._closing and self._closing.get("stage"))

    def next_deadline(self) -> int | None:
        """When poll() next has something to do without any input (None: nothing scheduled)."""
        now = self._now
        best = _NEVER
        for r in self._inflight.values():
            d = r.deadline
            if now < d < best:
                best = d
        if self.fatal_error is None and not self.closed:
            state = self.state
            if state is _STABLE or state is _COMPLETING:
                d = self._session_deadline
                if d is not None and now < d < best:
                    best = d
                if not self._hb_in_flight:
                    d = self._hb_next
                    if now < d < best:
                        best = d
                if self._closing is None:
                    d = self._last_app_poll + self.max_poll_interval_ms
                    if now < d < best:
                        best = d
            if self.auto_commit and state is _STABLE:
                d = self._next_auto_commit
                if now < d < best:
                    best = d
            if self._find_retry_at > now or self._join_retry_at > now or self._reset_retry_at > now:
                # back-offs (in the past unless a retry waits: one look at each then)
                for d in (self._find_retry_at, self._join_retry_at, self._reset_retry_at):
                    if now < d < best:
                        best = d
            d = self._metadata_next
            if now < d < best:
                best = d
            if self._reconnect_at:
                for d in self._reconnect_at.values():
                    if now < d < best:
                        best = d
            for op in self._commits:
                if op.done:
                    continue                   # settled by a response since the last poll
                if not op.in_flight:
                    d = op.next_try
                    if now < d < best:
                        best = d
                d = op.deadline
                if now < d < best:
                    best = d
            for op in self._offset_fetches:
                if not op.in_flight:
                    d = op.next_try
                    if now < d < best:
                        best = d
                d = op.deadline
                if now < d < best:
                    best = d
            if self._prepare is not None:
                d = self._prepare["deadline"]
                if now < d < best:
                    best = d
            if self._completion is not None and "deadline" in self._completion:
                d = self._completion["deadline"]
                if now < d < best:
                    best = d
            if self._closing is not None:
                d = self._closing["deadline"]
                if now < d < best:
                    best = d
        return None if best is _NEVER else best

    def take_actions(self) -> list[Action]:
        """The actions inputs queued since the last poll (after on_response returned False)."""
        out, self._actions = self._actions, []
        return out

    def _step(self, now: int) -> bool:
        """One pass over the sub-steps. Each is entered only when it may have something to do
        (the guards below are necessary conditions of its own checks, read afresh as earlier
        sub-steps may change them). True if no sub-step ran but the heartbeat (when it sent
        one), the auto-commit and the commits: what they change, no other sub-step reads, and
        they have nothing left to do at ``now`` once they ran."""
        other = False
        state = self.state
        if state is _STABLE or state is _COMPLETING:
            d = self._session_deadline
            if d is not None and now >= d:
                other = True
                self._check_session(now)
        state = self.state
        if ((state is _STABLE or state is _COMPLETING) and self._closing is None
                and now - self._last_app_poll >= self.max_poll_interval_ms):
            other = True
            self._check_poll_timeout(now)
        if not self._metadata_in_flight and (
                (self._metadata_requested and now >= self._metadata_retry_at) or now >= self._metadata_next):
            other = True
            self._step_metadata(now)
        if self.coordinator is None or COORDINATOR not in self._conn_by_key:
            other = True
            self._step_coordinator(now)
        if self._closing is not None:
            other = True
            self._step_close(now)
        else:
            if (self._completion is not None or self.state is not _STABLE or self._rejoin_needed
                    or self._joined_subscription != self.subscription):
                other = True
                self._step_group(now)
            state = self.state
            if (state is _STABLE or state is _COMPLETING) and not self._hb_in_flight and now >= self._hb_next:
                if not self._step_heartbeat(now):
                    other = True
            if self.auto_commit and now >= self._next_auto_commit:
                self._step_auto_commit(now)
        if self._commits:
            self._step_commits(now)
        if self._need_committed or self._offset_fetches:
            other = True
            self._step_offset_fetches(now)
        if self._need_reset:
            other = True
            self._step_positions(now)
        if self.fetch_enabled and self._closing is None:
            other = True
            self._step_fetch(now)
        return not other

    # ============================================================================ connections
    def _conn(self, key, now: int, node: tuple[int, str, int] | None = None) -> _Conn | None:
        """The ready connection for key, or None (a Connect goes out if there is none)."""
        cid = self._conn_by_key.get(key)
        if cid is not None:
            conn = self._conns[cid]
            return conn if conn.versions is not None else None
        if now < self._reconnect_at.get(key, 0):
            return None
        self._reconnect_at.pop(key, None)
        cid = next(self._ids)
        node_id, host, port = node if node is not None else (None, None, None)
        conn = _Conn(cid, key, node_id, host, port)
        self._conns[cid] = conn
        self._conn_by_key[key] = cid
        role = key if isinstance(key, str) else BROKER
        self._actions.append(Connect(cid, role, node_id, host, port))
        return None

    def _drop_conn(self, conn: _Conn, now: int, *, backoff: bool, disconnect: bool = False) -> None:
        self._conns.pop(conn.conn_id, None)
        if self._conn_by_key.get(conn.key) == conn.conn_id:
            del self._conn_by_key[conn.key]
        if disconnect:
            self._actions.append(Disconnect(conn.conn_id))
        if backoff:
            failures = self._reconnect_failures.get(conn.key, 0)
            self._reconnect_failures[conn.key] = failures + 1
            delay = min(self.config["reconnect.backoff.ms"] * (2 ** failures),
                        self.config["reconnect.backoff.max.ms"])
            self._reconnect_at[conn.key] = now + delay
        failed = [r for r in self._inflight.values() if r.conn_id == conn.conn_id]
        for r in failed:
            del self._inflight[r.request_id]
        if conn.key == COORDINATOR and self.coordinator is not None:
            self._coordinator_unknown(now, "coordinator connection lost", disconnect=False)
        for r in failed:
            r.handler(None, r, now)

    def _send(self, key, api_key: int, build: Callable[[int], dict] | dict, handler: Callable, now: int, *,
              node: tuple[int, str, int] | None = None, timeout_ms: int | None = None,
              ctx: Any = None, conn: _Conn | None = None) -> int | None:
        """Send a request on the connection for key once it is ready; None if it is not yet.
        ``build``: the body, or a function of the version that gives it; ``conn``: the ready
        connection for key when the caller has it at hand."""
        if conn is None:
            conn = self._conn(key, now, node)
            if conn is None:
                return None
        picked = conn.picked
        version = picked.get(api_key, -1)
        if version == -1:
            version = picked[api_key] = pick_version(api_key, conn.versions, self.max_versions)
        if version is None:
            broker = conn.versions.get(api_key)
            raise FatalConsumerError(_E.UNSUPPORTED_VERSION,
                                     f"the broker speaks API {api_key} versions {broker}, this client "
                                     f"{CLIENT_VERSIONS[api_key]}")
        body = build if type(build) is dict else build(version)
        rid = next(self._ids)
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        self._inflight[rid] = _Request(rid, conn.conn_id, api_key, version, handler, now + timeout, ctx)
        self._actions.append(SendRequest(rid, conn.conn_id, api_key, version, body, timeout))
        return rid

    def _expire_requests(self, now: int) -> bool:
        """Time out requests past their deadline; True if there were any."""
        for r in self._inflight.values():
            if r.deadline <= now:
                break
        else:
            return False               # nothing expired (the common case): no list built
        expired = [r for r in self._inflight.values() if r.deadline <= now]
        for r in expired:
            if r.request_id not in self._inflight:
                continue
            conn = self._conns.get(r.conn_id)
            log.info("request %s (api %s) timed out; disconnecting", r.request_id, r.api_key)
            if conn is not None:
                self._drop_conn(conn, now, backoff=False, disconnect=True)
            else:
                del self._inflight[r.request_id]
                r.handler(None, r, now)
        return True

    # ============================================================================ metadata
    def _wanted_topics(self) -> set[str]:
        topics = set(self.subscription) | set(self._group_topics) | {tp.topic for tp in self.assignment}
        if self._leader_task is not None:
            topics |= self._leader_task["topics"]
        return topics

    def _step_metadata(self, now: int) -> None:
        if self._metadata_in_flight:
            return
        if not ((self._metadata_requested and now >= self._metadata_retry_at) or now >= self._metadata_next):
            return
        topics = self._wanted_topics()
        if not topics:
            return
        allow = self.config["allow.auto.create.topics"]
        names = sorted(topics)

        def build(v: int) -> dict:
            return {"topics": [{"name": n} for n in names], "allow_auto_topic_creation": allow,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False}
        if self._send(BOOTSTRAP, METADATA, build, self._on_metadata, now, ctx=frozenset(names)) is not None:
            self._metadata_in_flight = True
            self._metadata_requested = False

    def _on_metadata(self, resp: dict | None, req: _Request, now: int) -> None:
        self._metadata_in_flight = False
        if resp is None:
            self._metadata_requested = True
            self._metadata_retry_at = now + self.retry_backoff_ms
            return
        self._metadata_topics = req.ctx
        self._brokers = {b["node_id"]: (b["host"], b["port"], b.get("rack")) for b in resp["brokers"]}
        retry = False
        for t in resp["topics"]:
            name, code = t["name"], t["error_code"]
            if code == 0 or (code == _E.LEADER_NOT_AVAILABLE and t["partitions"]):
                leaders, replicas, unled = _topic_tables(t)
                self._topics_meta[name] = leaders
                self._partition_replicas[name] = replicas
                if unled:
                    retry = True
            else:
                self._topics_meta.pop(name, None)
                self._partition_replicas.pop(name, None)
                if code in (_E.LEADER_NOT_AVAILABLE,):
                    retry = True
        self._metadata_version += 1
        self._metadata_next = now + self.config["metadata.max.age.ms"]
        if retry:
            self._metadata_requested = True
            self._metadata_retry_at = now + self.retry_backoff_ms
        # the leader rejoins when the partition counts it assigned with have changed
        if (self.is_leader and self._assignment_snapshot is not None
                and self.state == MemberState.STABLE and self._closing is None):
            current = self._partition_counts(self._assignment_snapshot.keys())
            if current != self._assignment_snapshot:
                self._request_rejoin(f"cached metadata changed: {self._assignment_snapshot} -> {current}")

    def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        return {t: len(self._topics_meta[t]) for t in topics if t in self._topics_meta}

    def _leader_of(self, tp: TP) -> int | None:
        leader = self._topics_meta.get(tp.topic, {}).get(tp.partition)
        return leader if leader is not None and leader >= 0 else None

    # ============================================================================ coordinator
    def _needs_coordinator(self) -> bool:
        if self.group_id is None:
            return False
        if self._closing is not None:
            return self.state != MemberState.UNJOINED or any(not op.done for op in self._commits)
        return bool(self.subscription or self._commits or self._offset_fetches)

    def _coordinator_ready(self, now: int) -> bool:
        return self._coordinator_conn(now) is not None

    def _coordinator_conn(self, now: int) -> _Conn | None:
        """The ready connection to the coordinator, or None (a Connect goes out if there is none)."""
        if self.coordinator is None:
            return None
        cid = self._conn_by_key.get(COORDINATOR)
        if cid is not None:
            conn = self._conns[cid]
            return conn if conn.versions is not None else None
        return self._conn(COORDINATOR, now, self.coordinator)

    def _step_coordinator(self, now: int) -> None:
        if self.coordinator is not None:
            self._conn(COORDINATOR, now, self.coordinator)
            return
        if not self._needs_coordinator() or self._find_in_flight or now < self._find_retry_at:
            return
        group = self.group_id

        def build(v: int) -> dict:
            if v >= 4:
                return {"key_type": 0, "coordinator_keys": [group]}
            return {"key": group, "key_type": 0}
        if self._send(BOOTSTRAP, FIND_COORDINATOR, build, self._on_find_coordinator, now) is not None:
            self._find_in_flight = True

    def _on_find_coordinator(self, resp: dict | None, req: _Request, now: int) -> None:
        self._find_in_flight = False
        if resp is None:
            self._find_retry_at = now + self.retry_backoff_ms
            return
        if req.version >= 4:
            entry = next((c for c in resp["coordinators"] if c["key"] == self.group_id), None)
            if entry is None:
                self._find_retry_at = now + self.retry_backoff_ms
                return
        else:
            entry = resp
        code = _error(entry["error_code"])
        if code == _E.NONE:
            if self.coordinator is None:
                self.coordinator = (entry["node_id"], entry["host"], entry["port"])
                log.info("%s: discovered coordinator %s", self._who(), self.coordinator)
                self._conn(COORDINATOR, now, self.coordinator)
            return
        if code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {self.group_id}")
        if isinstance(code, ErrorCode) and code.retriable:
            self._find_retry_at = now + self.retry_backoff_ms
            return
        raise FatalConsumerError(code, f"FindCoordinator failed: {entry.get('error_message') or code}")

    def _coordinator_unknown(self, now: int, reason: str, *, disconnect: bool = True) -> None:
        """AbstractCoordinator.markCoordinatorUnknown: drop the connection, rediscover."""
        if self.coordinator is None:
            return
        log.info("%s: coordinator %s unknown: %s", self._who(), self.coordinator, reason)
        self.coordinator = None
        self._find_retry_at = 0
        cid = self._conn_by_key.get(COORDINATOR)
        if cid is not None and disconnect:
            self._drop_conn(self._conns[cid], now, backoff=False, disconnect=True)

    # ============================================================================ liveness
    def _check_session(self, now: int) -> None:
        if self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
            return
        if self._session_deadline is None or now < self._session_deadline:
            return
        log.warning("%s: no successful heartbeat for session.timeout.ms; considering the membership lost",
                    self._who())
        self._coordinator_unknown(now, "session timed out without a successful heartbeat")
        self._reset_generation("session timed out", reset_member_id=True)
        self._lose_partitions()

    def _check_poll_timeout(self, now: int) -> None:
        if self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE) or self._closing is not None:
            return
        if now - self._last_app_poll < self.max_poll_interval_ms:
            return
        log.warning("%s: the application did not poll within max.poll.interval.ms; leaving the group",
                    self._who())
        self._maybe_leave_group(now, "consumer poll timeout has expired")
        self._left_on_poll_timeout = True

    def _step_heartbeat(self, now: int) -> bool:
        """A heartbeat is due (_step's guard: in a generation, none in flight, its time come);
        True if it went out."""
        conn = self._coordinator_conn(now)
        if conn is None:
            return False
        gen = self.generation
        body = {"group_id": self.group_id, "generation_id": gen.generation_id, "member_id": gen.member_id,
                "group_instance_id": self.group_instance_id}
        if self._send(COORDINATOR, HEARTBEAT, body, self._on_heartbeat, now,
                      ctx=(gen.generation_id, gen.member_id), conn=conn) is not None:
            self._hb_in_flight = True
            self._hb_next = now + self.heartbeat_interval_ms
            return True
        return False

    def _on_heartbeat(self, resp: dict | None, req: _Request, now: int) -> bool | None:
        self._hb_in_flight = False
        if resp is None:
            self._hb_next = now + self.retry_backoff_ms
            return None
        code = resp["error_code"]
        if not code:
            self._session_deadline = now + self.session_timeout_ms
            if now < self._hb_next:           # settled, unless the next heartbeat is due already
                state = self.state
                if state is _STABLE or state is _COMPLETING:
                    self.settled_deadline = self._hb_next
                return True
            return False
        code = _error(code)
        unchanged = req.ctx == (self.generation.generation_id, self.generation.member_id)
        self._hb_next = now + self.retry_backoff_ms
        if code in _COORDINATOR_ERRORS:
            self._coordinator_unknown(now, f"heartbeat: {code.name}")
        elif code == _E.REBALANCE_IN_PROGRESS:
            # still a member: keep the session alive while the group rebalances
            self._session_deadline = now + self.session_timeout_ms
            self._hb_next = now + self.heartbeat_interval_ms
            if self.state == MemberState.STABLE:
                self._request_rejoin("group is already rebalancing")
        elif code in (_E.ILLEGAL_GENERATION, _E.UNKNOWN_MEMBER_ID):
            if unchanged and self.state != MemberState.UNJOINED:
                self._reset_generation(f"heartbeat: {code.name}", reset_member_id=code == _E.UNKNOWN_MEMBER_ID)
                self._request_rejoin(f"heartbeat: {code.name}", prepare=True)
        elif code == _E.FENCED_INSTANCE_ID:
            if unchanged:
                raise FatalConsumerError(code, f"static member {self.group_instance_id} was fenced")
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            pass
        elif code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {self.group_id}")
        else:
            raise FatalConsumerError(code, f"unexpected error in heartbeat response: {code}")

    # ============================================================================ the group
    def _request_rejoin(self, reason: str, *, prepare: bool = False) -> None:
        self._rejoin_needed = True
        self._rejoin_reason = reason
        if prepare:
            self._needs_prepare = True

    def _reset_generation(self, reason: str, *, reset_member_id: bool) -> None:
        """AbstractCoordinator.resetStateAndGeneration."""
        log.info("%s: resetting generation%s: %s", self._who(), " and member id" if reset_member_id else "", reason)
        self.state = MemberState.UNJOINED
        member_id = "" if reset_member_id else self.generation.member_id
        self.generation = _Generation(-1, member_id, None)
        self._leader_task = None
        self._session_deadline = None
        self._prepare = None
        self._completion = None
        self._pending_revocation.clear()

    def _lose_partitions(self) -> None:
        lost = self.assignment
        self._set_assignment(frozenset())
        if lost:
            self._callback(PartitionsLost, lost)
        self._needs_prepare = True
        self._rejoin_needed = True

    def _set_assignment(self, tps: frozenset) -> None:
        self.assignment = frozenset(tps)
        self._pending_revocation &= self.assignment
        for tp in list(self.positions):
            if tp not in self.assignment:
                del self.positions[tp]
        for s in (self._need_committed, self._need_reset):
            s.intersection_update(self.assignment)
        for tp in list(self._completed):
            if tp not in self.assignment:
                del self._completed[tp]

    def _callback(self, cls, partitions) -> int:
        token = next(self._ids)
        self._callbacks_pending.add(token)
        self._actions.append(cls(token, frozenset(partitions)))
        return token

    def _step_group(self, now: int) -> None:
        if not self.subscription or self.group_id is None or self._left_on_poll_timeout:
            return
        if self._completion is not None:
            self._step_completion(now)
            if self._completion is not None:
                return
        if self.state == MemberState.COMPLETING_REBALANCE:
            if self._leader_task is not None:
                self._step_leader(now)
            return
        if self.state == MemberState.PREPARING_REBALANCE:
            return
        if self.state == MemberState.STABLE and self._joined_subscription != self.subscription:
            self._request_rejoin("subscription changed")
        if not self._rejoin_needed:
            return
        if now < self._join_retry_at or not self._coordinator_ready(now):
            return
        if self._needs_prepare and not self._step_prepare(now):
            return
        self._send_join(now)

    # ---- onJoinPrepare ------------------------------------------------------------------
    def _step_prepare(self, now: int) -> bool:
        """ConsumerCoordinator.onJoinPrepare; True once done (then JoinGroup may go out)."""
        p = self._prepare
        if p is None:
            p = self._prepare = {"deadline": now + self.rebalance_timeout_ms, "commit": None, "token": None}
            offsets = self.all_consumed()
            if (self.auto_commit and offsets and self.state == MemberState.STABLE
                    and self.generation.generation_id >= 0):
                p["commit"] = self._start_commit(offsets, "rebalance", now, retry=True,
                                                 timeout_ms=self.rebalance_timeout_ms)
        if p["commit"] is not None:
            op = self._commit_op(p["commit"])
            if op is not None and not op.done and now < p["deadline"]:
                return False
            p["commit"] = None
        if p["token"] is None:
            # the listener runs while the partitions are still assigned (positions readable);
            # they are given up once it is done, as Kafka does after invoking it
            gen = self.generation
            owned = self.assignment
            if gen.generation_id < 0 or not gen.member_id:
                # the generation was reset by an error or a timeout: what we owned is lost
                p["giving_up"] = owned
                p["token"] = self._callback(PartitionsLost, owned) if owned else -1
            elif self.protocol == RebalanceProtocol.EAGER:
                p["giving_up"] = owned
                p["token"] = self._callback(PartitionsRevoked, owned)
            else:
                p["giving_up"] = frozenset(tp for tp in owned if tp.topic not in self.subscription)
                p["token"] = self._callback(PartitionsRevoked, p["giving_up"]) if p["giving_up"] else -1
            self._pending_revocation |= p["giving_up"]
        if p["token"] in self._callbacks_pending:
            return False
        if p["giving_up"]:
            self._set_assignment(self.assignment - p["giving_up"])
        self._prepare = None
        self._needs_prepare = False
        self.is_leader = False
        self._group_topics = frozenset()
        self._assignment_snapshot = None
        return True

    # ---- JoinGroup --------------------------------------------------------------------
    def _subscription_bytes(self, assignor: ConsumerPartitionAssignor) -> bytes:
        topics = sorted(self.subscription)
        return encode_subscription({
            "topics": topics,
            "user_data": assignor.subscription_user_data(set(topics)),
            "owned_partitions": group_partitions(self.assignment),
            "generation_id": self.generation.generation_id,
            "rack_id": self.config["client.rack"] or None,
        }, 3)

    def _send_join(self, now: int) -> None:
        gen = self.generation
        body = {
            "group_id": self.group_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": gen.member_id,
            "group_instance_id": self.group_instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": [{"name": a.name, "metadata": self._subscription_bytes(a)} for a in self.assignors],
            "reason": self._rejoin_reason[:255] if self._rejoin_reason else None,
        }
        timeout = max(self.request_timeout_ms, self.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)

        def build(v: int) -> dict:
            if v < 5 and self.group_instance_id is not None:
                # JoinGroupRequest.Builder: static membership needs JoinGroup v5
                raise FatalConsumerError(_E.UNSUPPORTED_VERSION,
                                         f"the coordinator speaks JoinGroup v{v}, which cannot carry "
                                         "group.instance.id (static membership needs v5)")
            return body
        rid = self._send(COORDINATOR, JOIN_GROUP, build, self._on_join, now, timeout_ms=timeout)
        if rid is None:
            return
        log.info("%s: joining (reason: %s)", self._who(), self._rejoin_reason)
        self._joined_subscription = self.subscription
        self.state = MemberState.PREPARING_REBALANCE
        self._rejoin_needed = False

    def _join_failed(self, now: int, *, backoff: bool) -> None:
        if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
            self.state = MemberState.UNJOINED
        self._rejoin_needed = True
        self._leader_task = None
        self._join_retry_at = now + self.retry_backoff_ms if backoff else now

    def _on_join(self, resp: dict | None, req: _Request, now: int) -> None:
        if self._closing is not None or self.state != MemberState.PREPARING_REBALANCE:
            if resp is not None and _error(resp["error_code"]) == _E.NONE:
                # answered after we gave up on it (e.g. close): the join stands until we leave
                self.generation = _Generation(resp["generation_id"], resp["member_id"], resp.get("protocol_name"))
                if self._closing is None:
                    self._join_failed(now, backoff=True)
            return
        if resp is None:
            self._join_failed(now, backoff=True)
            return
        code = _error(resp["error_code"])
        if code == _E.NONE:
            ptype = resp.get("protocol_type")
            if ptype is not None and ptype != PROTOCOL_TYPE:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL,
                                         f"JoinGroup answered protocol type {ptype!r}")
            self.generation = _Generation(resp["generation_id"], resp["member_id"], resp.get("protocol_name"))
            self.leader_id = resp["leader"]
            self.state = MemberState.COMPLETING_REBALANCE
            self._session_deadline = now + self.session_timeout_ms
            self._hb_next = now + self.heartbeat_interval_ms
            if resp["leader"] == resp["member_id"]:
                self._on_leader_elected(resp, now)
            else:
                self._send_sync(now, [])
            return
        if code == _E.MEMBER_ID_REQUIRED:
            self.generation = _Generation(-1, resp["member_id"], None)
            self._request_rejoin("need to re-join with the given member id")
            self._join_failed(now, backoff=False)
        elif code == _E.UNKNOWN_MEMBER_ID:
            self._reset_generation("JoinGroup: UNKNOWN_MEMBER_ID", reset_member_id=True)
            self._request_rejoin("JoinGroup: UNKNOWN_MEMBER_ID", prepare=True)
            self._join_failed(now, backoff=False)
        elif code == _E.REBALANCE_IN_PROGRESS:
            self._request_rejoin("JoinGroup: REBALANCE_IN_PROGRESS")
            self._join_failed(now, backoff=False)
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_unknown(now, f"JoinGroup: {code.name}")
            self._join_failed(now, backoff=True)
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            self._join_failed(now, backoff=True)
        elif code == _E.FENCED_INSTANCE_ID:
            raise FatalConsumerError(code, f"static member {self.group_instance_id} was fenced by another "
                                           "member with the same group.instance.id")
        elif code in (_E.INCONSISTENT_GROUP_PROTOCOL, _E.INVALID_SESSION_TIMEOUT, _E.INVALID_GROUP_ID,
                      _E.GROUP_AUTHORIZATION_FAILED, _E.GROUP_MAX_SIZE_REACHED, _E.UNSUPPORTED_VERSION):
            raise FatalConsumerError(code, f"JoinGroup failed: {code.message}")
        else:
            raise FatalConsumerError(code, f"unexpected error in JoinGroup response: {code}")

    # ---- the leader -----------------------------------------------------------------------
    def _on_leader_elected(self, resp: dict, now: int) -> None:
        subscriptions: dict[str, Subscription] = {}
        for m in resp["members"]:
            try:
                s = decode_subscription(m["metadata"])
            except DecodeError as e:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL,
                                         f"cannot read the subscription of member {m['member_id']}: {e}") from e
            owned = [TP(t, p) for t, p in flatten_partitions(s.get("owned_partitions") or [])]
            subscriptions[m["member_id"]] = Subscription(
                list(s["topics"]), s.get("user_data"), owned, s.get("generation_id", -1),
                s.get("rack_id"), m.get("group_instance_id"))
        topics = frozenset(t for s in subscriptions.values() for t in s.topics)
        self.is_leader = True
        self._group_topics = topics
        if resp.get("skip_assignment"):
            # KIP-814: a static leader rejoined without a rebalance; it must not assign
            self._assignment_snapshot = self._partition_counts(topics)
            self._send_sync(now, [])
            return
        self._leader_task = {"subscriptions": subscriptions, "topics": topics,
                             "protocol": resp.get("protocol_name"), "metadata_version": self._metadata_version,
                             "versions": {m["member_id"]: decode_subscription(m["metadata"])["version"]
                                          for m in resp["members"]}}
        self._metadata_requested = True        # ensureFreshMetadata
        self._step_leader(now)

    def _step_leader(self, now: int) -> None:
        task = self._leader_task
        if task["metadata_version"] == self._metadata_version or not task["topics"] <= self._metadata_topics:
            if not self._metadata_in_flight:
                self._metadata_requested = True
                task["metadata_version"] = self._metadata_version
            self._step_metadata(now)
            return
        self._leader_task = None
        assignor = next((a for a in self.assignors if a.name == task["protocol"]), None)
        if assignor is None:
            raise IllegalStateError(f"the coordinator selected protocol {task['protocol']!r}, which this "
                                    "member did not offer")
        counts = self._partition_counts(task["topics"])
        racks = {}
        for t, n in counts.items():
            for p in range(n):
                r = frozenset(self._brokers[node][2] for node in self._partition_replicas.get(t, {}).get(p, ())
                              if node in self._brokers and self._brokers[node][2])
                if r:
                    racks[TP(t, p)] = r
        cluster = ClusterMetadata(counts, racks or None)
        result = assignor.assign(cluster, GroupSubscription(dict(task["subscriptions"])))
        assignments = result.assignments
        if self.protocol == RebalanceProtocol.COOPERATIVE:
            self._validate_cooperative(task["subscriptions"], assignments)
        self._assignment_snapshot = counts
        out = []
        for member_id, a in assignments.items():
            version = min(3, task["versions"].get(member_id, 3))
            out.append({"member_id": member_id, "assignment": encode_assignment(
                {"assigned_partitions": group_partitions(a.partitions), "user_data": a.user_data}, version)})
        log.info("%s: leader assigned %s with %s", self._who(),
                 {m: sorted(a.partitions) for m, a in assignments.items()}, assignor.name)
        self._send_sync(now, out)

    @staticmethod
    def _validate_cooperative(subscriptions: dict[str, Subscription], assignments: dict[str, Assignment]) -> None:
        """ConsumerCoordinator.validateCooperativeAssignment: no partition may move in one step."""
        added, revoked = set(), set()
        for member_id, a in assignments.items():
            owned = set(subscriptions[member_id].owned_partitions) if member_id in subscriptions else set()
            new = set(a.partitions)
            added |= new - owned
            revoked |= owned - new
        moved = added & revoked
        if moved:
            raise IllegalStateError(f"assignor supporting the COOPERATIVE protocol violates its "
                                    f"requirements: {sorted(moved)} were reassigned while still owned")

    # ---- SyncGroup --------------------------------------------------------------------
    def _send_sync(self, now: int, assignments: list[dict]) -> None:
        gen = self.generation
        body = {"group_id": self.group_id, "generation_id": gen.generation_id, "member_id": gen.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": PROTOCOL_TYPE,
                "protocol_name": gen.protocol_name, "assignments": assignments}
        rid = self._send(COORDINATOR, SYNC_GROUP, body, self._on_sync, now,
                         ctx=(gen.generation_id, gen.member_id))
        if rid is None:
            # the coordinator connection went away between JoinGroup and SyncGroup
            self._join_failed(now, backoff=True)
            return

    def _on_sync(self, resp: dict | None, req: _Request, now: int) -> None:
        if self._closing is not None:
            return
        if resp is None:
            if self.state == MemberState.COMPLETING_REBALANCE:
                self._join_failed(now, backoff=True)
            return
        code = _error(resp["error_code"])
        if code == _E.NONE:
            ptype, pname = resp.get("protocol_type"), resp.get("protocol_name")
            if ptype is not None and ptype != PROTOCOL_TYPE:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL, f"SyncGroup answered protocol type {ptype!r}")
            if pname is not None and self.generation.protocol_name not in (None, "", pname):
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL,
                                         f"SyncGroup answered protocol {pname!r}, JoinGroup {self.generation.protocol_name!r}")
            if req.ctx != (self.generation.generation_id, self.generation.member_id) \
                    or self.state != MemberState.COMPLETING_REBALANCE:
                # the generation was reset meanwhile (UnjoinedGroupException): retry
                self._join_failed(now, backoff=True)
                return
            self.state = MemberState.STABLE
            self._session_deadline = now + self.session_timeout_ms
            self.rebalances += 1
            self._on_join_complete(resp["assignment"], now)
            return
        if code == _E.REBALANCE_IN_PROGRESS:
            self._request_rejoin("SyncGroup: REBALANCE_IN_PROGRESS")
            self._join_failed(now, backoff=False)
        elif code in (_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION):
            self._reset_generation(f"SyncGroup: {code.name}", reset_member_id=code == _E.UNKNOWN_MEMBER_ID)
            self._request_rejoin(f"SyncGroup: {code.name}", prepare=True)
            self._join_failed(now, backoff=False)
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_unknown(now, f"SyncGroup: {code.name}")
            self._join_failed(now, backoff=True)
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            self._join_failed(now, backoff=True)
        elif code == _E.FENCED_INSTANCE_ID:
            raise FatalConsumerError(code, f"static member {self.group_instance_id} was fenced")
        elif code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {self.group_id}")
        else:
            raise FatalConsumerError(code, f"unexpected error in SyncGroup response: {code}")

    # ---- onJoinComplete -----------------------------------------------------------------
    def _on_join_complete(self, data: bytes, now: int) -> None:
        if data:
            try:
                a = decode_assignment(data)
            except DecodeError as e:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL, f"cannot read the assignment: {e}") from e
            assigned = _tps(a["assigned_partitions"])
            user_data = a.get("user_data")
        else:
            assigned, user_data = frozenset(), None
        if any(tp.topic not in self.subscription for tp in assigned):
            # SubscriptionState.checkAssignmentMatchedSubscription
            log.warning("%s: assignment %s does not match the subscription %s; rejoining",
                        self._who(), sorted(assigned), sorted(self.subscription))
            self._request_rejoin("received an assignment that does not match the subscription")
            return
        owned = self.assignment
        if self.protocol == RebalanceProtocol.COOPERATIVE:
            added, revoked = assigned - owned, owned - assigned
        else:
            added, revoked = assigned, frozenset()
        self._completion = {"assigned": assigned, "added": added, "revoked": revoked, "user_data": user_data,
                            "stage": "commit", "commit": None, "token": None,
                            "deadline": now + self.rebalance_timeout_ms}
        self._step_completion(now)

    def _step_completion(self, now: int) -> None:
        c = self._completion
        if c["stage"] == "commit":
            if c["commit"] is None and c["revoked"] and self.auto_commit:
                offsets = {tp: OffsetAndMetadata(self.positions[tp]) for tp in _sorted(c["revoked"])
                           if tp in self.positions}
                if offsets:
                    c["commit"] = self._start_commit(offsets, "rebalance", now, retry=True,
                                                     timeout_ms=self.rebalance_timeout_ms)
            if c["commit"] is not None:
                op = self._commit_op(c["commit"])
                if op is not None and not op.done and now < c["deadline"]:
                    return
            c["stage"] = "revoke"
        if c["stage"] == "revoke":
            if c["token"] is None and c["revoked"]:
                self._pending_revocation |= c["revoked"]
                c["token"] = self._callback(PartitionsRevoked, c["revoked"])
            if c["token"] in self._callbacks_pending:
                return
            self._set_assignment(self.assignment - c["revoked"])
            c["stage"], c["token"] = "assign", None
        if c["stage"] == "assign":
            if c["token"] is None:
                for a in self.assignors:
                    if a.name == self.generation.protocol_name:
                        a.on_assignment(Assignment(_sorted(c["assigned"]), c["user_data"]), self.group_metadata())
                self._set_assignment(c["assigned"])
                self._need_committed |= set(c["added"]) - set(self.positions)
                self._next_auto_commit = now + self.auto_commit_interval_ms
                c["token"] = self._callback(PartitionsAssigned, c["added"])
                log.info("%s: generation %s assignment %s (added %s, revoked %s)", self._who(),
                         self.generation.generation_id, sorted(c["assigned"]), sorted(c["added"]),
                         sorted(c["revoked"]))
            if c["token"] in self._callbacks_pending:
                return
            self._completion = None
            self._needs_prepare = True
            if c["revoked"]:
                self._request_rejoin("need to revoke partitions and re-join")

    # ---- leaving --------------------------------------------------------------------------
    def _maybe_leave_group(self, now: int, reason: str) -> None:
        """AbstractCoordinator.maybeLeaveGroup: LeaveGroup for dynamic members, then reset."""
        gen = self.generation
        if (not self.is_static and self.coordinator is not None and self.state != MemberState.UNJOINED
                and gen.member_id):
            member_id = gen.member_id

            def build(v: int) -> dict:
                if v >= 3:
                    return {"group_id": self.group_id,
                            "members": [{"member_id": member_id, "group_instance_id": None, "reason": reason}]}
                return {"group_id": self.group_id, "member_id": member_id}
            rid = self._send(COORDINATOR, LEAVE_GROUP, build, self._on_leave, now)
            if rid is not None and self._closing is not None:
                self._closing["leave"] = rid
        self._reset_generation(f"leaving the group: {reason}", reset_member_id=True)
        self._request_rejoin(reason, prepare=True)

    def _on_leave(self, resp: dict | None, req: _Request, now: int) -> None:
        if self._closing is not None and self._closing.get("leave") == req.request_id:
            self._closing["leave"] = None
        if resp is not None:
            code = _error(resp["error_code"])
            if code != _E.NONE:
                log.info("%s: LeaveGroup failed: %s", self._who(), code)

    def _step_close(self, now: int) -> None:
        c = self._closing
        expired = now >= c["deadline"]
        if c["stage"] == "commit":
            if "commit" not in c:
                offsets = self.all_consumed()
                c["commit"] = None
                if (self.auto_commit and offsets and self.state == MemberState.STABLE
                        and self.generation.generation_id >= 0):
                    c["commit"] = self._start_commit(offsets, "close", now, retry=True,
                                                     timeout_ms=max(0, c["deadline"] - now))
            if c["commit"] is not None:
                op = self._commit_op(c["commit"])
                if op is not None and not op.done and not expired:
                    return
            c["stage"] = "revoke"
        if c["stage"] == "revoke":
            if "token" not in c:
                owned = self.assignment
                gen = self.generation
                c["token"] = -1
                self._pending_revocation |= owned
                if owned:
                    lost = gen.generation_id < 0 or not gen.member_id
                    c["token"] = self._callback(PartitionsLost if lost else PartitionsRevoked, owned)
            if c["token"] in self._callbacks_pending and not expired:
                return
            self._set_assignment(frozenset())
            c["stage"] = "leave"
        if c["stage"] == "leave":
            if "leave" not in c:
                c["leave"] = None
                if self.group_id is not None and self._coordinator_ready(now):
                    self._maybe_leave_group(now, "the consumer is being closed")
                self._left_on_poll_timeout = True          # never rejoin
            if c["leave"] is not None and not expired:
                return
            c["stage"] = "drain"
        if c["stage"] == "drain":
            if any(not op.done for op in self._commits) and not expired:
                return
            self._finish_close(now)

    def _finish_close(self, now: int) -> None:
        for op in self._commits:
            if not op.done:
                self._complete_commit(op, KafkaError(_E.REQUEST_TIMED_OUT, "the consumer closed"))
        self._commits.clear()
        for conn in list(self._conns.values()):
            self._actions.append(Disconnect(conn.conn_id))
        self._conns.clear()
        self._conn_by_key.clear()
        self._inflight.clear()
        self.closed = True
        self.state = MemberState.UNJOINED
        self._actions.append(Closed())

    def _fail_fatally(self, error: Exception) -> None:
        if self.fatal_error is not None:
            return
        log.error("%s: fatal: %s", self._who(), error)
        self.fatal_error = error
        self.state = MemberState.UNJOINED
        self._actions.append(ErrorRaised(error, True))
        for op in self._commits:
            if not op.done:
                self._complete_commit(op, error)
        self._commits.clear()
        for op in self._offset_fetches:
            if not op.internal:
                self._actions.append(OffsetsFetched(op.handle, {}, error))
        self._offset_fetches.clear()

    # ============================================================================ commits
    def _start_commit(self, offsets: dict, kind: str, now: int, *, retry: bool,
                      timeout_ms: int | None = None) -> int:
        handle = next(self._ids)
        deadline = now + (self.api_timeout_ms if timeout_ms is None else timeout_ms)
        op = _CommitOp(handle, kind, dict(offsets), deadline, retry)
        if not offsets:
            op.done = True
            self._actions.append(CommitCompleted(handle, kind, {}, None))
            return handle
        if self.fatal_error is not None:
            self._complete_commit(op, self.fatal_error)
            return handle
        self._commits.append(op)
        return handle

    def _commit_op(self, handle: int) -> _CommitOp | None:
        return next((op for op in self._commits if op.handle == handle), None)

    def _complete_commit(self, op: _CommitOp, error: Exception | None) -> None:
        op.done = True
        op.error = error
        if error is None:
            for tp, om in op.offsets.items():
                self.committed_offsets[tp] = om.offset
        self._actions.append(CommitCompleted(op.handle, op.kind, op.offsets, error))

    def _step_auto_commit(self, now: int) -> None:
        """An auto-commit is due (_step's guard: auto-commit on, its time come)."""
        if self.state is not _STABLE or self._completion is not None:
            return
        if self.coordinator is None:
            self._next_auto_commit = now + self.retry_backoff_ms
            return
        self._next_auto_commit = now + self.auto_commit_interval_ms
        offsets = self.all_consumed()
        if offsets:
            self._start_commit(offsets, "auto", now, retry=False)

    def _step_commits(self, now: int) -> None:
        """Commits wait (_step's guard)."""
        for op in list(self._commits):
            if op.done:
                self._commits.remove(op)
                continue
            if op.in_flight:
                continue
            if now >= op.deadline:
                self._commits.remove(op)
                self._complete_commit(op, op.error or KafkaError(
                    _E.REQUEST_TIMED_OUT, "the commit did not complete within its timeout"))
                continue
            if now < op.next_try:
                continue
            gen = self.generation
            if self.subscription:
                if self.state is not _STABLE or gen.generation_id < 0:
                    self._commits.remove(op)
                    if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE) \
                            or self._rejoin_needed:
                        self._complete_commit(op, RebalanceInProgressError())
                    else:
                        self._complete_commit(op, CommitFailedError(
                            "the consumer is not part of an active group", _E.UNKNOWN_MEMBER_ID))
                    continue
                generation_id, member_id = gen.generation_id, gen.member_id
            else:
                generation_id, member_id = -1, ""
            conn = self._coordinator_conn(now)
            if conn is None:
                continue
            by_topic: dict[str, list] = {}
            for tp, om in sorted(op.offsets.items()):
                by_topic.setdefault(tp.topic, []).append({
                    "partition_index": tp.partition, "committed_offset": om.offset,
                    "committed_leader_epoch": -1 if om.leader_epoch is None else om.leader_epoch,
                    "commit_timestamp": -1, "committed_metadata": om.metadata})
            body = {"group_id": self.group_id, "generation_id_or_member_epoch": generation_id,
                    "member_id": member_id, "group_instance_id": self.group_instance_id,
                    "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
            rid = self._send(COORDINATOR, OFFSET_COMMIT, body, self._on_commit, now,
                             ctx=(op, generation_id, member_id, self.state), conn=conn)
            if rid is not None:
                op.in_flight = True

    def _on_commit(self, resp: dict | None, req: _Request, now: int) -> bool | None:
        op, sent_generation, sent_member, _ = req.ctx
        op.in_flight = False
        if op.done:
            return None
        if resp is None:
            self._commit_retriable(op, KafkaError(_E.NETWORK_EXCEPTION, "no response to OffsetCommit"), now)
            return None
        first = 0
        for t in resp["topics"]:
            for p in t["partitions"]:
                code = p["error_code"]
                if code and not first:
                    first = code
        if not first:
            self._complete_commit(op, None)
            # settled when no rebalance step and no close() waits for a commit (the done op
            # leaves _commits at the next poll)
            return self._prepare is None and self._completion is None and self._closing is None
        code = _error(first)
        if code in (_E.COORDINATOR_LOAD_IN_PROGRESS, _E.UNKNOWN_TOPIC_OR_PARTITION):
            self._commit_retriable(op, KafkaError(code), now)
        elif code in _COORDINATOR_ERRORS or code == _E.REQUEST_TIMED_OUT:
            self._coordinator_unknown(now, f"OffsetCommit: {code.name}")
            self._commit_retriable(op, KafkaError(code), now)
        elif code == _E.FENCED_INSTANCE_ID:
            self._complete_commit(op, FatalConsumerError(code))
            raise FatalConsumerError(code, f"static member {self.group_instance_id} was fenced")
        elif code == _E.REBALANCE_IN_PROGRESS:
            self._request_rejoin("offset commit failed since the group is already rebalancing")
            self._complete_commit(op, RebalanceInProgressError())
        elif code in (_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION):
            unchanged = (sent_generation, sent_member) == (self.generation.generation_id, self.generation.member_id)
            if not unchanged and self.state == MemberState.PREPARING_REBALANCE:
                self._complete_commit(op, RebalanceInProgressError())
            else:
                if unchanged and sent_generation >= 0:
                    self._reset_generation(f"OffsetCommit: {code.name}", reset_member_id=code == _E.UNKNOWN_MEMBER_ID)
                    self._request_rejoin(f"OffsetCommit: {code.name}", prepare=True)
                self._complete_commit(op, CommitFailedError(code=code))
        else:
            self._complete_commit(op, KafkaError(code))

    def _commit_retriable(self, op: _CommitOp, error: KafkaError, now: int) -> None:
        if op.retry and now + self.retry_backoff_ms < op.deadline:
            op.error = error
            op.next_try = now + self.retry_backoff_ms
            return
        self._complete_commit(op, error if op.retry else RetriableCommitFailedError(error.code, str(error)))

    # ============================================================================ committed offsets
    def _step_offset_fetches(self, now: int) -> None:
        if not self._need_committed and not self._offset_fetches:
            return
        # partitions newly assigned need their committed offsets (as one internal fetch)
        pending = frozenset(self._need_committed - self._committed_in_flight)
        if pending and self.group_id is not None and not any(op.internal for op in self._offset_fetches):
            self._offset_fetches.append(_FetchOffsetsOp(0, pending, now + self.api_timeout_ms, internal=True))
            self._committed_in_flight |= pending
        for op in list(self._offset_fetches):
            if op.in_flight:
                continue
            if now >= op.deadline and not op.internal:
                self._offset_fetches.remove(op)
                self._actions.append(OffsetsFetched(op.handle, {}, KafkaError(
                    _E.REQUEST_TIMED_OUT, "OffsetFetch did not complete within its timeout")))
                continue
            if now < op.next_try or not self._coordinator_ready(now):
                continue
            by_topic: dict[str, list[int]] = {}
            for tp in sorted(op.partitions):
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
            group = self.group_id

            def build(v: int, topics=topics) -> dict:
                if v >= 8:
                    return {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                                        "topics": topics}], "require_stable": False}
                return {"group_id": group, "topics": topics, "require_stable": False}
            if self._send(COORDINATOR, OFFSET_FETCH, build, self._on_offset_fetch, now, ctx=op) is not None:
                op.in_flight = True

    def _on_offset_fetch(self, resp: dict | None, req: _Request, now: int) -> None:
        op: _FetchOffsetsOp = req.ctx
        op.in_flight = False
        if op not in self._offset_fetches:
            return
        if resp is None:
            op.next_try = now + self.retry_backoff_ms
            return
        if req.version >= 8:
            g = next((g for g in resp["groups"] if g["group_id"] == self.group_id), None)
            code, topics = (_error(g["error_code"]), g["topics"]) if g else (_E.NONE, [])
        else:
            code, topics = _error(resp.get("error_code", 0)), resp["topics"]
        if code == _E.NONE:
            for t in topics:
                for p in t["partitions"]:
                    pc = _error(p["error_code"])
                    if pc != _E.NONE:
                        code = pc
                        break
        if code in (_E.COORDINATOR_LOAD_IN_PROGRESS, _E.UNSTABLE_OFFSET_COMMIT):
            op.next_try = now + self.retry_backoff_ms
            return
        if code in _COORDINATOR_ERRORS:
            self._coordinator_unknown(now, f"OffsetFetch: {code.name}")
            op.next_try = now + self.retry_backoff_ms
            return
        self._offset_fetches.remove(op)
        if code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {self.group_id}")
        result: dict[TP, OffsetAndMetadata | None] = {tp: None for tp in op.partitions}
        if code == _E.NONE:
            for t in topics:
                for p in t["partitions"]:
                    tp = TP(t["name"], p["partition_index"])
                    if tp in result and p["committed_offset"] >= 0:
                        epoch = p.get("committed_leader_epoch", -1)
                        result[tp] = OffsetAndMetadata(p["committed_offset"], p.get("metadata") or "",
                                                       None if epoch is None or epoch < 0 else epoch)
        if op.internal:
            self._committed_in_flight -= op.partitions
            if code != _E.NONE:
                self._actions.append(ErrorRaised(KafkaError(code, "fetching committed offsets failed"), False))
                self._need_committed -= op.partitions
                self._need_reset |= (op.partitions & self.assignment) - set(self.positions)
                return
            for tp, om in result.items():
                if tp not in self._need_committed:
                    continue              # no longer assigned, or seeked meanwhile
                self._need_committed.discard(tp)
                if om is not None:
                    self.positions[tp] = om.offset
                    self.committed_offsets[tp] = om.offset
                else:
                    self._need_reset.add(tp)
            return
        self._actions.append(OffsetsFetched(op.handle, result, None if code == _E.NONE else KafkaError(code)))

    # ============================================================================ offset reset
    def _step_positions(self, now: int) -> None:
        if not self._need_reset:
            return
        pending = self._need_reset - self._reset_in_flight
        if not pending or now < self._reset_retry_at:
            return
        strategy = self.config["auto.offset.reset"]
        if strategy == "none":
            self._need_reset -= pending
            self._actions.append(ErrorRaised(NoOffsetForPartitionError(pending), False))
            return
        timestamp = EARLIEST if strategy == "earliest" else LATEST
        by_leader: dict[int, list[TP]] = {}
        for tp in sorted(pending):
            leader = self._leader_of(tp)
            if leader is None:
                self._metadata_requested = True
                continue
            by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            by_topic: dict[str, list] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": timestamp,
                     "max_num_offsets": 1})
            body = {"replica_id": -1, "isolation_level": 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()], "timeout_ms": 0}
            broker = self._brokers.get(leader)
            if broker is None:
                self._metadata_requested = True
                continue
            rid = self._send((BROKER, leader), LIST_OFFSETS, body, self._on_list_offsets, now,
                             node=(leader, broker[0], broker[1]), ctx=frozenset(tps))
            if rid is not None:
                self._reset_in_flight |= set(tps)

    def _on_list_offsets(self, resp: dict | None, req: _Request, now: int) -> None:
        tps = req.ctx
        self._reset_in_flight -= tps
        if resp is None:
            self._reset_retry_at = now + self.retry_backoff_ms
            return
        for t in resp["topics"]:
            for p in t["partitions"]:
                tp = TP(t["name"], p["partition_index"])
                if tp not in self._need_reset:
                    continue
                code = _error(p["error_code"])
                if code == _E.NONE:
                    offset = p.get("offset", -1)
                    if offset is None or offset < 0:
                        olds = p.get("old_style_offsets") or []
                        offset = olds[0] if olds else -1
                    if offset >= 0:
                        self.positions[tp] = offset
                        self._need_reset.discard(tp)
                        continue
                self._metadata_requested = True
                self._reset_retry_at = now + self.retry_backoff_ms

    # ============================================================================ fetcher
    def _step_fetch(self, now: int) -> None:
        fetchable = [tp for tp in self.assignment if tp in self.positions and tp not in self._completed
                     and tp not in self._pending_revocation]
        if not fetchable:
            return
        by_leader: dict[int, list[TP]] = {}
        for tp in fetchable:
            leader = self._leader_of(tp)
            if leader is None:
                self._metadata_requested = True
                continue
            by_leader.setdefault(leader, []).append(tp)
        cfg = self.config
        for leader, tps in by_leader.items():
            if leader in self._fetches_in_flight:
                continue
            self._rng.shuffle(tps)
            by_topic: dict[str, list] = {}
            offsets = {}
            for tp in tps:
                offsets[tp] = self.positions[tp]
                by_topic.setdefault(tp.topic, []).append({
                    "partition": tp.partition, "current_leader_epoch": -1, "fetch_offset": self.positions[tp],
                    "last_fetched_epoch": -1, "log_start_offset": -1,
                    "partition_max_bytes": cfg["max.partition.fetch.bytes"]})
            body = {"cluster_id": None, "replica_id": -1, "max_wait_ms": cfg["fetch.max.wait.ms"],
                    "min_bytes": cfg["fetch.min.bytes"], "max_bytes": cfg["fetch.max.bytes"],
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                    "forgotten_topics_data": [], "rack_id": cfg["client.rack"]}
            broker = self._brokers.get(leader)
            if broker is None:
                self._metadata_requested = True
                continue
            rid = self._send((BROKER, leader), FETCH, body, self._on_fetch, now,
                             node=(leader, broker[0], broker[1]),
                             timeout_ms=self.request_timeout_ms + cfg["fetch.max.wait.ms"],
                             ctx=(leader, offsets))
            if rid is not None:
                self._fetches_in_flight.add(leader)

    def _on_fetch(self, resp: dict | None, req: _Request, now: int) -> None:
        leader, offsets = req.ctx
        self._fetches_in_flight.discard(leader)
        if resp is None:
            return
        if resp.get("error_code"):
            self._metadata_requested = True
            return
        check = self.config["check.crcs"]
        for t in resp["responses"]:
            for p in t["partitions"]:
                tp = TP(t["topic"], p["partition_index"])
                fetch_offset = offsets.get(tp)
                if fetch_offset is None or tp not in self.assignment or self.positions.get(tp) != fetch_offset:
                    continue
                code = _error(p["error_code"])
                if code == _E.OFFSET_OUT_OF_RANGE:
                    self.positions.pop(tp, None)
                    self._need_reset.add(tp)
                    continue
                if code != _E.NONE:
                    self._metadata_requested = True
                    continue
                recs: deque = deque()
                next_offset = fetch_offset
                try:
                    for header, batch in records_codec.iter_batches(p.get("records") or b""):
                        if header.next_offset <= fetch_offset:
                            continue
                        if not header.is_control:
                            _, decoded = records_codec.decode_batch(batch, verify=check)
                            for r in decoded:
                                if r.offset >= fetch_offset:
                                    recs.append(ConsumerRecord(tp.topic, tp.partition, r.offset, r.timestamp,
                                                               header.timestamp_type, r.key, r.value,
                                                               tuple(r.headers or ())))
                        next_offset = max(next_offset, header.next_offset)
                except DecodeError as e:
                    self._actions.append(ErrorRaised(KafkaError(_E.CORRUPT_MESSAGE, f"{tp}: {e}"), False))
                if recs or next_offset > fetch_offset:
                    self._completed[tp] = _CompletedFetch(recs, next_offset, fetch_offset)

    # ============================================================================ misc
    def _who(self) -> str:
        return f"member {self.generation.member_id or '?'}" + (
            f" ({self.group_instance_id})" if self.group_instance_id else "")

    def __repr__(self) -> str:
        return (f"Member(group={self.group_id!r}, member_id={self.generation.member_id!r}, "
                f"generation={self.generation.generation_id}, state={self.state.name}, "
                f"assignment={sorted(self.assignment)})")
