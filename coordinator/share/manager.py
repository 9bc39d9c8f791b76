"""The share-partition leaders' side of share groups: share sessions, ShareFetch and ShareAcknowledge
(Kafka's ``SharePartitionManager``, ``ShareSessionCache``, ``DelayedShareFetch`` and the share half of
``KafkaApis``), sans-I/O.

One :class:`SharePartitionManager` serves every node of the emulated cluster: the logs are shared, each
share-partition (a :class:`~.partition.SharePartition`) is loaded on the node leading its partition (and
loaded again from its persisted state when the leadership moves), and each node has its own share
sessions, keyed by (group id, member id) and tied to the connection that opened them.

Share sessions (``newContext``, ``acknowledgeSessionUpdate``): ShareFetch at epoch 0 opens one (replacing
any, its records left to their locks; acknowledgements refused: INVALID_REQUEST; at
``group.share.max.share.sessions`` SHARE_SESSION_LIMIT_REACHED, after MaxWaitMs); at epoch n it must
find the session at n (else SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH, the session kept),
adds the request's partitions, forgets ForgottenTopicsData and moves to n + 1 (after INT_MAX: 1); at -1
it acknowledges, fetches nothing, and closes the session. ShareAcknowledge at 0 is
INVALID_SHARE_SESSION_EPOCH; at n it moves the epoch as a fetch does; at -1 it closes the session after
its acknowledgements. A closed session, or its connection's close, releases what the member holds in
the session's partitions.

A fetch (``DelayedShareFetch``) acquires from the session's partitions, rotated by the request's session epoch;
it answers at once when the records it can acquire reach MinBytes (or it has an error, or MaxWaitMs is
0), else it waits until they do or MaxWaitMs passes; a produce, an acknowledgement, a release or an
expired lock on one of its partitions tries it again. MaxRecords is shared by the partitions in turn;
MaxBytes (at most ``fetch.max.bytes``) is split evenly among them. The records sent are the log's
batches covering the acquired ranges.

Observability (set by the service; nothing of it runs while :attr:`SharePartitionManager.emit` is None):
events of the share-partitions and share sessions (:mod:`..events`), counted rather than one per record
(one per partition per request, one per lock expiry of a partition, coalesced over the locks expiring
together), each emitted once the operation that made it has finished: ``share.session_opened``,
``share.session_closed``, ``share.records_acquired``, ``share.records_acknowledged``,
``share.lock_expired``, ``share.records_archived``; and :attr:`SharePartitionManager.stats`, the counts
Kafka's share metrics keep (BrokerTopicMetrics' ShareFetch and ShareAcknowledgement requests,
ShareGroupMetrics' RecordAcknowledgementsPerSec, DelayedShareFetchMetrics' ExpiresPerSec), which
:mod:`..metrics` reads with each share-partition's :class:`~.partition.SharePartitionCounters`.

Faults (:mod:`..faults`): a request whose body carries :data:`DROP_ACKNOWLEDGEMENTS` has its
acknowledgements ignored, each partition answered with that error code (0: NONE, as if applied);
:meth:`SharePartitionManager.expire_locks` expires acquisition locks now.

Purity: no sockets, no asyncio; time is the injected clock, the long polls are keyed timers
``("share-fetch", node, connection, correlation id)``, the coalesced lock-expiry events
``("share-lock-expired", group, topic id, partition)``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Callable, Hashable

import structlog

from groupcoord.protocol.errors import ErrorCode, KafkaError

from ..events import SCHEMA_VERSION
from ..releases import at_least
from .partition import (LogBatch, RecordState, ShareAcknowledgementBatch, ShareAcquireMode, SharePartition,
                        SharePartitionConfig, SharePartitionCounters, acknowledgement_batches_valid)
from .states import ShareStates, StateKey

__all__ = ["DROP_ACKNOWLEDGEMENTS", "FETCH_MAX_BYTES", "ShareSession", "SharePartitionManager", "ShareStats",
           "acknowledge_error", "fetch_error", "next_epoch"]

_E = ErrorCode
_log = structlog.get_logger("groupcoord.share")

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
#: Kafka's fetch.max.bytes default (55 MiB), the cap of a ShareFetch's MaxBytes
FETCH_MAX_BYTES = 57_671_680
_INT_MAX = 2**31 - 1
#: Kafka's message of UNKNOWN_TOPIC_OR_PARTITION (Errors.java), what an exception built without one carries
_NOT_HOSTED = _E.UNKNOWN_TOPIC_OR_PARTITION.message

TopicPartition = tuple[Hashable, int]       # (topic id, partition)

#: the key a fault (faults.py) sets in a ShareFetch's or ShareAcknowledge's body to drop its
#: acknowledgements: the error code each acknowledged partition is answered with (0: NONE)
DROP_ACKNOWLEDGEMENTS = "_drop_acknowledgements"
#: the acknowledge types Kafka's RecordAcknowledgementsPerSec counts (GAP is not one)
_METERED_ACK_TYPES = (1, 2, 3, 4)
_NO_COUNTS = (0,) * 8
#: indexes into a counters tuple (:func:`_counts`)
_ACQUIRED, _ACCEPTED, _RELEASED, _REJECTED, _GAPS, _RENEWED, _EXPIRED, _ARCHIVED = range(8)


_COUNTER_NAMES = tuple(f.name for f in fields(SharePartitionCounters))


def _counts(c: SharePartitionCounters) -> tuple:
    return (c.acquired, c.acknowledged, c.released, c.rejected, c.gaps, c.renewed, c.lock_expired, c.archived)


def _operation(method):
    """A way into the manager (a request, a timer, a wake-up, a fault): the events made meanwhile are
    emitted once it, and every operation it ran, has finished (a subscriber that acts on one, a
    scheduled fault, finds the manager between operations)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        self._depth += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            self._depth -= 1
            if not self._depth and self._events:
                self._emit_events()
    return run


@dataclass
class ShareStats:
    """What the metrics count of the share-partition leaders' requests (plain ints, see :mod:`..metrics`).

    ``share_fetch``, ``failed_share_fetch``: topic -> ShareFetch requests that read it, and those where a
    partition of it failed (Kafka's BrokerTopicMetrics TotalShareFetchRequestsPerSec,
    FailedShareFetchRequestsPerSec); ``share_acknowledgement``, ``failed_share_acknowledgement``: the same
    of the requests acknowledging (TotalShareAcknowledgementRequestsPerSec,
    FailedShareAcknowledgementRequestsPerSec); ``record_acknowledgements``: acknowledge type (1 ACCEPT,
    2 RELEASE, 3 REJECT, 4 RENEW) -> records acknowledged (ShareGroupMetrics RecordAcknowledgementsPerSec);
    ``delayed_share_fetch_expires``: fetches answered at MaxWaitMs (DelayedShareFetchMetrics
    ExpiresPerSec); ``retired``: the counters of share-partitions dropped since (leadership moved, state
    deleted), so that the totals never go back."""
    share_fetch: dict = field(default_factory=dict)
    failed_share_fetch: dict = field(default_factory=dict)
    share_acknowledgement: dict = field(default_factory=dict)
    failed_share_acknowledgement: dict = field(default_factory=dict)
    record_acknowledgements: dict = field(default_factory=dict)
    delayed_share_fetch_expires: int = 0
    retired: SharePartitionCounters = field(default_factory=SharePartitionCounters)

    def count_topics(self, counts: dict, topics) -> None:
        for topic in topics:
            counts[topic] = counts.get(topic, 0) + 1


def next_epoch(epoch: int) -> int:
    """ShareRequestMetadata.nextEpoch: after INT_MAX comes 1 (0 and -1 are the open and close epochs)."""
    return 1 if epoch >= _INT_MAX else epoch + 1


@dataclass(eq=False)
class ShareSession:
    """A member's share session on one node: its epoch (the one the next request must carry) and its
    partitions, in the order they joined it."""
    group_id: str
    member_id: str
    node_id: int
    connection_id: Hashable
    epoch: int = 1
    partitions: dict[TopicPartition, None] = field(default_factory=dict)


class _SessionLimitReached(Exception):
    pass


@dataclass
class _Context:
    """What newContext decided: the partitions to fetch (None: a final context, nothing fetched) and
    those the response must carry even without data (a full context's, a subsequent one's added)."""
    session: ShareSession | None
    fetch: list[TopicPartition] | None
    full: bool
    added: set[TopicPartition]


class SharePartitionManager:
    """The share-partitions and share sessions of the emulated cluster (see the module).

    ``cluster``         the cluster (topics by id, their logs and leaders, the nodes; its waiters hear of
                        appends);
    ``group_configs``   the group configs (share.record.lock.duration.ms and the others, by group);
    ``config``          the broker config (group.share.*), ``release`` the Kafka release emulated.
    """

    def __init__(self, *, cluster, timers, clock: Callable[[], int], config, group_configs, release: str) -> None:
        self.cluster = cluster
        self.timers = timers
        self.clock = clock
        self.config = config
        self.group_configs = group_configs
        self.release = release
        self.states = ShareStates(clock=clock, on_delete=self._states_deleted)
        self.max_sessions = int(config["group.share.max.share.sessions"])
        self._partitions: dict[StateKey, tuple[int, SharePartition]] = {}     # key -> (node, partition)
        self._sessions: dict[tuple[int, str, str], ShareSession] = {}         # (node, group, member)
        self._sessions_per_node: dict[int, int] = {}
        self._by_connection: dict[tuple[int, Hashable], set[tuple[int, str, str]]] = {}
        # an ordered set: the fetches parked first are woken first (a set of objects would iterate in the
        # order of their addresses: not the same from one run to the next)
        self._parked: dict[_ParkedFetch, None] = {}
        #: where the events go (the service's bus); None: no events, nothing counted for them
        self.emit: Callable[[dict], None] | None = None
        #: group id -> (group epoch, state, members): the events' common fields (the service's)
        self.group_view: Callable[[str], tuple[int, str, int]] | None = None
        #: what the metrics count of the requests (see :class:`ShareStats`)
        self.stats = ShareStats()
        self._events: list[dict] = []                   # made by the operation under way
        self._depth = 0                                 # operations under way (nested)
        self._seen: dict[StateKey, tuple] = {}          # key -> (partition, its counters the events told)
        self._expiry_cause = "timeout"
        cluster.add_waiter(self)
        cluster.topic_listeners.append(self._topics_changed)

    # ---- what the service and the admin API read ----

    def share_partitions(self) -> dict[StateKey, SharePartition]:
        """The loaded share-partitions."""
        return {k: sp for k, (_, sp) in self._partitions.items()}

    def sessions(self) -> list[ShareSession]:
        return list(self._sessions.values())

    def leader_of(self, key: StateKey) -> int | None:
        """The node that has the share-partition loaded, None when none has."""
        loaded = self._partitions.get(key)
        return loaded[0] if loaded is not None else None

    def counters_total(self) -> SharePartitionCounters:
        """Every share-partition's counters summed, those dropped since included (never decreasing)."""
        total = SharePartitionCounters(**{name: getattr(self.stats.retired, name) for name in _COUNTER_NAMES})
        for _, sp in self._partitions.values():
            for name in _COUNTER_NAMES:
                setattr(total, name, getattr(total, name) + getattr(sp.counters, name))
        return total

    # ---- events (see the module: counted, emitted when the operation ends) ----

    def _emit_events(self) -> None:
        events, self._events = self._events, []
        emit = self.emit
        if emit is not None:
            for event in events:
                emit(event)

    def _event(self, kind: str, group_id: str, fields: dict) -> None:
        generation, state, members = self.group_view(group_id) if self.group_view is not None else (-1, "Dead", 0)
        event = {"v": SCHEMA_VERSION, "event": kind, "ts_ms": self.clock(), "group": group_id,
                 "generation": generation, "state": state, "members": members}
        event.update(fields)
        self._events.append(event)

    def _topic_name(self, topic_id) -> str | None:
        topic = self.cluster.topics_by_id.get(topic_id)
        return topic.name if topic is not None else None

    def _partition_event(self, kind: str, key: StateKey, fields: dict, member: str | None = None) -> None:
        head = {} if member is None else {"member": member}
        self._event(kind, key[0], {**head, "topic": self._topic_name(key[1]), "partition": key[2], **fields})

    def _deltas(self, key: StateKey, sp: SharePartition) -> list[int] | None:
        """How the share-partition's counters moved since the events last told (None: not at all)."""
        now = _counts(sp.counters)
        seen = self._seen.get(key)
        before = seen[1] if seen is not None and seen[0] is sp else _NO_COUNTS
        if now == before:
            return None
        self._seen[key] = (sp, now)
        return [a - b for a, b in zip(now, before)]

    def _account_expiry(self, key: StateKey, sp: SharePartition, cause: str | None = None) -> None:
        """The share-partition's locks that expired since the events last told (outside an operation,
        only a lock expiry changes a share-partition): ``share.lock_expired``, and
        ``share.records_archived`` for those at the delivery count limit."""
        d = self._deltas(key, sp)
        if d is None:
            return
        if d[_EXPIRED]:
            self._partition_event("share.lock_expired", key, {"records": d[_EXPIRED], "archived": d[_ARCHIVED],
                                                              "cause": cause or self._expiry_cause})
        if d[_ARCHIVED]:
            self._partition_event("share.records_archived", key, {"records": d[_ARCHIVED],
                                                                  "reason": "delivery_count_limit"})

    def _acquired_events(self, key: StateKey, sp: SharePartition, member_id: str, ranges: list) -> None:
        d = self._deltas(key, sp)
        if d is not None and d[_ARCHIVED]:
            # (archived on the way: the log start offset moved past them)
            self._partition_event("share.records_archived", key, {"records": d[_ARCHIVED],
                                                                  "reason": "log_start_moved"})
        if ranges:
            self._partition_event("share.records_acquired", key, {
                "records": sum(r.last_offset - r.first_offset + 1 for r in ranges),
                "first_offset": ranges[0].first_offset, "last_offset": ranges[-1].last_offset,
                "ranges": [[r.first_offset, r.last_offset, r.delivery_count] for r in ranges],
                "redelivered": sum(r.last_offset - r.first_offset + 1 for r in ranges if r.delivery_count > 1)},
                member_id)

    def _acknowledged_event(self, key: StateKey, sp: SharePartition | None, member_id: str, request: str,
                            raw: list, code: int, dropped: bool) -> None:
        d = (self._deltas(key, sp) if sp is not None else None) or _NO_COUNTS
        self._partition_event("share.records_acknowledged", key, {
            "request": request, "first_offset": min(b["first_offset"] for b in raw),
            "last_offset": max(b["last_offset"] for b in raw), "accepted": d[_ACCEPTED], "released": d[_RELEASED],
            "rejected": d[_REJECTED], "gaps": d[_GAPS], "renewed": d[_RENEWED], "archived": d[_ARCHIVED],
            "error": _error_name(code), "dropped": dropped,
            "batches": _ack_runs(raw)}, member_id)
        limit = d[_ARCHIVED] - d[_REJECTED] - d[_GAPS]
        if limit > 0:
            self._partition_event("share.records_archived", key, {"records": limit, "reason": "delivery_count_limit"})

    def _session_event(self, kind: str, session: "ShareSession", fields: dict) -> None:
        self._event(kind, session.group_id, {"member": session.member_id, "node": session.node_id, **fields})

    @_operation
    def _locks_expired(self, key: StateKey) -> None:
        """The coalesced event of the locks of a share-partition that expired together."""
        loaded = self._partitions.get(key)
        if loaded is not None:
            self._account_expiry(key, loaded[1])

    @_operation
    def _run(self, fn: Callable[[], None]) -> None:
        fn()

    # ---- configs ----

    def partition_config(self, group_id: str) -> SharePartitionConfig:
        """The group's share configs as a share-partition reads them (group config, else broker)."""
        configs, broker = self.group_configs, self.config
        defined = configs.defined

        def value(group_name: str, broker_name: str):
            return configs.get(group_id, group_name) if group_name in defined else broker[broker_name]
        return SharePartitionConfig(
            record_lock_duration_ms=int(value("share.record.lock.duration.ms", "group.share.record.lock.duration.ms")),
            delivery_count_limit=int(value("share.delivery.count.limit", "group.share.delivery.count.limit")),
            partition_max_record_locks=int(value("share.partition.max.record.locks",
                                                 "group.share.partition.max.record.locks")),
            renew_acknowledge_enable=bool(configs.get(group_id, "share.renew.acknowledge.enable"))
            if "share.renew.acknowledge.enable" in defined else True,
            auto_offset_reset=str(configs.get(group_id, "share.auto.offset.reset"))
            if "share.auto.offset.reset" in defined else "latest",
            release_decreases_delivery_count=not at_least(self.release, "4.2"))

    def lock_duration_ms(self, group_id: str) -> int:
        """AcquisitionLockTimeoutMs: the group's share.record.lock.duration.ms."""
        return self.partition_config(group_id).record_lock_duration_ms

    # ---- share-partitions ----

    def _share_partition(self, group_id: str, topic_id, partition: int, node_id: int) -> SharePartition:
        """The share-partition led by ``node_id``, loaded from its persisted state if needed (raises
        KafkaError when it cannot be: not initialized, or share.auto.offset.reset finds nothing)."""
        key = (group_id, topic_id, partition)
        topic = self.cluster.topics_by_id.get(topic_id)
        if topic is None or not 0 <= partition < topic.partition_count:
            raise KafkaError(_E.UNKNOWN_TOPIC_OR_PARTITION)       # (deleted while a fetch waited)
        loaded = self._partitions.get(key)
        config = self.partition_config(group_id)
        if loaded is not None:
            node, sp = loaded
            if node == node_id:
                sp.config = config
                return sp
            self._drop(key)             # the leadership moved: the new leader loads the persisted state
        state = self.states.read(key)
        if state is None:
            # the share coordinator's INVALID_REQUEST, which SharePartition.fetchPersisterError makes an
            # UnknownServerException with its message
            raise KafkaError(_E.UNKNOWN_SERVER_ERROR, "Read operation on uninitialized share partition not allowed.")
        sp = SharePartition(group_id, topic_id, partition, timers=self.timers, clock=self.clock, config=config,
                            state=state, log=topic.partitions[partition],
                            write_state=lambda write: self.states.write(key, write),
                            on_change=lambda: self._changed(key))
        self._partitions[key] = (node_id, sp)
        return sp

    def _loaded_on(self, key: StateKey, node_id: int) -> SharePartition | None:
        loaded = self._partitions.get(key)
        return loaded[1] if loaded is not None and loaded[0] == node_id else None

    def _drop(self, key: StateKey) -> None:
        loaded = self._partitions.pop(key, None)
        if loaded is not None:
            sp = loaded[1]
            if self.emit is not None:
                self._account_expiry(key, sp)
            self._seen.pop(key, None)
            retired = self.stats.retired
            for name in _COUNTER_NAMES:
                setattr(retired, name, getattr(retired, name) + getattr(sp.counters, name))
            sp.close()

    @_operation
    def _states_deleted(self, keys: list[StateKey]) -> None:
        for key in keys:
            self._drop(key)

    @_operation
    def _topics_changed(self, names) -> None:
        """Topics were created, deleted or grew: the share-partitions of deleted topics go, their locks
        cancelled, and so does their state (Kafka's ShareCoordinatorShard cleans up the state of deleted
        topics)."""
        topics_by_id = self.cluster.topics_by_id
        for key in [k for k in self._partitions if k[1] not in topics_by_id]:
            self._drop(key)
        gone: dict[str, dict] = {}
        for group_id, topic_id, partition in self.states.keys():
            if topic_id not in topics_by_id:
                gone.setdefault(group_id, {}).setdefault(topic_id, set()).add(partition)
        for group_id, partitions in gone.items():
            self.states.delete(group_id, partitions)

    # ---- share sessions ----

    def _new_context(self, node_id: int, connection_id, group_id: str, member_id: str, epoch: int,
                     wanted: list[TopicPartition], forgotten: list[TopicPartition], has_acks: bool) -> _Context:
        key = (node_id, group_id, member_id)
        if epoch == FINAL_EPOCH:
            session = self._sessions.get(key)
            if session is None:
                raise KafkaError(_E.SHARE_SESSION_NOT_FOUND)
            return _Context(session, None, True, set())
        if epoch == INITIAL_EPOCH:
            if has_acks:
                raise KafkaError(_E.INVALID_REQUEST)
            replaced = self._remove_session(key)   # (its records stay acquired until their locks expire)
            if replaced is not None and self.emit is not None:
                self._session_event("share.session_closed", replaced, {"reason": "replaced", "released": 0,
                                                                       "archived": 0})
            if self._sessions_per_node.get(node_id, 0) >= self.max_sessions:
                raise _SessionLimitReached()
            session = ShareSession(group_id, member_id, node_id, connection_id,
                                   partitions=dict.fromkeys(wanted))
            self._add_session(key, session)
            if self.emit is not None:
                self._session_event("share.session_opened", session, {"partitions": len(session.partitions)})
            return _Context(session, list(session.partitions), True, set())
        session = self._sessions.get(key)
        if session is None:
            raise KafkaError(_E.SHARE_SESSION_NOT_FOUND)
        if session.epoch != epoch:
            raise KafkaError(_E.INVALID_SHARE_SESSION_EPOCH)
        added = {tp for tp in wanted if tp not in session.partitions}
        session.partitions.update(dict.fromkeys(wanted))
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.epoch = next_epoch(session.epoch)
        return _Context(session, list(session.partitions), False, added)

    def _acknowledge_session_update(self, node_id: int, group_id: str, member_id: str, epoch: int) -> ShareSession:
        if epoch == INITIAL_EPOCH:
            raise KafkaError(_E.INVALID_SHARE_SESSION_EPOCH)
        session = self._sessions.get((node_id, group_id, member_id))
        if session is None:
            raise KafkaError(_E.SHARE_SESSION_NOT_FOUND)
        if epoch != FINAL_EPOCH:
            if session.epoch != epoch:
                raise KafkaError(_E.INVALID_SHARE_SESSION_EPOCH)
            session.epoch = next_epoch(session.epoch)
        return session

    def _add_session(self, key, session: ShareSession) -> None:
        self._sessions[key] = session
        self._sessions_per_node[session.node_id] = self._sessions_per_node.get(session.node_id, 0) + 1
        self._by_connection.setdefault((session.node_id, session.connection_id), set()).add(key)

    def _remove_session(self, key) -> ShareSession | None:
        session = self._sessions.pop(key, None)
        if session is None:
            return None
        self._sessions_per_node[session.node_id] -= 1
        conn = (session.node_id, session.connection_id)
        keys = self._by_connection.get(conn)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_connection[conn]
        return session

    @_operation
    def release_session(self, node_id: int, group_id: str, member_id: str) -> None:
        """The session is closed (epoch -1): the member's acquired records in its partitions are released."""
        session = self._remove_session((node_id, group_id, member_id))
        if session is not None:
            self._release(session, "final_epoch")

    def _release(self, session: ShareSession, reason: str) -> None:
        events = self.emit is not None
        released = archived = 0
        for topic_id, partition in session.partitions:
            key = (session.group_id, topic_id, partition)
            sp = self._loaded_on(key, session.node_id)
            if sp is not None:
                if events:
                    self._account_expiry(key, sp)
                error = sp.release_acquired_records(session.member_id)
                if error is not None:
                    _log.warning("share records not released", group=session.group_id, member=session.member_id,
                                 topic_id=str(topic_id), partition=partition, error=str(error))
                d = self._deltas(key, sp) if events else None
                if d is not None:
                    released += d[_RELEASED]
                    archived += d[_ARCHIVED]
                    if d[_ARCHIVED]:
                        self._partition_event("share.records_archived", key, {"records": d[_ARCHIVED],
                                                                              "reason": "delivery_count_limit"})
        if events:
            self._session_event("share.session_closed", session, {"reason": reason, "released": released,
                                                                  "archived": archived})

    @_operation
    def connection_closed(self, node_id: int, connection_id) -> None:
        """A client connection closed: its sessions go and release their records, its waiting fetches
        are dropped."""
        for parked in [p for p in self._parked if p.node_id == node_id and p.connection_id == connection_id]:
            parked.cancel()
        for key in list(self._by_connection.get((node_id, connection_id), ())):
            session = self._remove_session(key)
            if session is not None:
                self._release(session, "connection_closed")

    # ---- acknowledgements ----

    def _acknowledge(self, node_id: int, group_id: str, member_id: str, topics: list, version: int,
                     is_renew_ack: bool, readable: Callable[[str], bool], request: str = "ShareAcknowledge",
                     dropped: int | None = None) -> dict[TopicPartition, tuple[int, str | None]]:
        """KafkaApis.handleAcknowledgements then SharePartitionManager.acknowledge: per partition of
        the request, (error code, message). ``dropped`` (a fault): the acknowledgements that would be
        applied are not, their partitions answered with that error code (0: NONE)."""
        results: dict[TopicPartition, tuple[int, str | None]] = {}
        topics_by_id = self.cluster.topics_by_id
        events = self.emit is not None
        stats = self.stats
        acknowledged, failed = set(), set()          # topics, for the metrics (as SharePartitionManager.acknowledge)
        for topic_id, partitions in _merged(topics):
            topic = topics_by_id.get(topic_id)
            for index, raw in partitions.items():
                tp = (topic_id, index)
                sp = None
                if topic is None:
                    results[tp] = (_E.UNKNOWN_TOPIC_ID, None)
                    if events and raw:
                        self._acknowledged_event((group_id, *tp), None, member_id, request, raw, _E.UNKNOWN_TOPIC_ID,
                                                 False)
                    continue
                batches = [ShareAcknowledgementBatch(b["first_offset"], b["last_offset"], b["acknowledge_types"])
                           for b in raw]
                if not acknowledgement_batches_valid(batches, supports_renew=version >= 2, is_renew_ack=is_renew_ack):
                    results[tp] = (_E.INVALID_REQUEST, None)
                elif not readable(topic.name):
                    results[tp] = (_E.TOPIC_AUTHORIZATION_FAILED, None)
                elif not 0 <= index < topic.partition_count:
                    results[tp] = (_E.UNKNOWN_TOPIC_OR_PARTITION, None)
                elif not batches:
                    results[tp] = (_E.NONE, None)
                    continue
                else:
                    acknowledged.add(topic.name)
                    key = (group_id, topic_id, index)
                    sp = self._loaded_on(key, node_id)
                    if sp is None:
                        # (Errors.UNKNOWN_TOPIC_OR_PARTITION.exception()'s message, as mapAcknowledgementFutures sends it)
                        results[tp] = (_E.UNKNOWN_TOPIC_OR_PARTITION, _NOT_HOSTED)
                        failed.add(topic.name)
                    elif dropped is not None:
                        results[tp] = (dropped, None)           # (a fault: not applied)
                    else:
                        if events:
                            self._account_expiry(key, sp)
                        sp.config = self.partition_config(group_id)
                        error = sp.acknowledge(member_id, batches)
                        results[tp] = (_E.NONE, None) if error is None else (int(error.code), error.message)
                        if error is None:
                            _meter_acknowledgements(stats.record_acknowledgements, batches)
                        else:
                            failed.add(topic.name)
                if events and raw:
                    self._acknowledged_event((group_id, *tp), sp if dropped is None else None, member_id, request,
                                             raw, results[tp][0], dropped is not None and sp is not None)
        stats.count_topics(stats.share_acknowledgement, acknowledged)
        stats.count_topics(stats.failed_share_acknowledgement, failed)
        return results

    # ---- ShareFetch ----

    @_operation
    def share_fetch(self, *, node_id: int, connection_id, correlation_id: int, version: int, body: dict,
                    readable: Callable[[str], bool], respond: Callable[[dict], None]) -> None:
        """A ShareFetch that passed the API layer's checks (share groups on, group id, group READ,
        member id, the RENEW limits): answered through ``respond``, at once or after its wait."""
        group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
        topics = body["topics"]
        has_acks = any(p["acknowledgement_batches"] for t in topics for p in t["partitions"])
        wanted = [(topic_id, index) for topic_id, partitions in _merged(topics) for index in partitions]
        forgotten = [(t["topic_id"], p) for t in body["forgotten_topics_data"] for p in t["partitions"]]
        lock_ms = self.lock_duration_ms(group_id)
        try:
            context = self._new_context(node_id, connection_id, group_id, member_id, epoch, wanted, forgotten,
                                        has_acks)
        except _SessionLimitReached:
            # (answered after MaxWaitMs, as Kafka's idle share fetch timer task)
            key = ("share-fetch", node_id, connection_id, correlation_id)
            self.timers.schedule(key, self.clock() + max(0, body["max_wait_ms"]),
                                 lambda: respond(fetch_error(_E.SHARE_SESSION_LIMIT_REACHED)))
            return
        except KafkaError as e:
            respond(fetch_error(e.code))
            return
        is_renew_ack = version >= 2 and body.get("is_renew_ack", False)
        acks = self._acknowledge(node_id, group_id, member_id, topics, version, is_renew_ack, readable, "ShareFetch",
                                 body.get(DROP_ACKNOWLEDGEMENTS)) if has_acks else {}
        fetch = _ShareFetch(self, node_id, connection_id, correlation_id, body, context, acks, lock_ms, respond)
        if context.fetch is None or is_renew_ack:
            fetch.partitions = []
        else:
            fetch.sort_out(readable)
            self.stats.count_topics(self.stats.share_fetch, fetch.topics_read())
        if epoch == FINAL_EPOCH:
            fetch.finish([])
            self.release_session(node_id, group_id, member_id)
            return
        fetch.start()

    # ---- ShareAcknowledge ----

    @_operation
    def share_acknowledge(self, *, node_id: int, version: int, body: dict, readable: Callable[[str], bool]) -> dict:
        """A ShareAcknowledge that passed the API layer's checks: its response."""
        group_id, member_id, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
        try:
            self._acknowledge_session_update(node_id, group_id, member_id, epoch)
        except KafkaError as e:
            return acknowledge_error(e.code)
        is_renew_ack = version >= 2 and body.get("is_renew_ack", False)
        acks = self._acknowledge(node_id, group_id, member_id, body["topics"], version, is_renew_ack, readable,
                                 "ShareAcknowledge", body.get(DROP_ACKNOWLEDGEMENTS))
        if epoch == FINAL_EPOCH:
            self.release_session(node_id, group_id, member_id)
        endpoints: dict[int, dict] = {}
        responses: dict = {}
        for (topic_id, index), (code, message) in acks.items():
            entry = {"partition_index": index, "error_code": code, "error_message": message,
                     "current_leader": self._current_leader(topic_id, index, code, endpoints)}
            responses.setdefault(topic_id, []).append(entry)
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                "acquisition_lock_timeout_ms": self.lock_duration_ms(group_id),
                "responses": [{"topic_id": t, "partitions": ps} for t, ps in responses.items()],
                "node_endpoints": list(endpoints.values())}

    # ---- faults ----

    @_operation
    def expire_locks(self, group_id: str, member_id: str | None = None, topic_id=None,
                     partition: int | None = None) -> dict[StateKey, int]:
        """Expire acquisition locks now, as if their time had come (a fault): those of the group's loaded
        share-partitions (of one topic, one partition), held by ``member_id`` (None: by anyone). Their
        records become AVAILABLE again, or ARCHIVED at the delivery count limit; ``share.lock_expired``
        says so with cause "fault". Returns the records whose lock expired, per share-partition."""
        expired: dict[StateKey, int] = {}
        for key, (_, sp) in list(self._partitions.items()):
            if key[0] != group_id or (topic_id is not None and key[1] != topic_id) or (
                    partition is not None and key[2] != partition):
                continue
            locks = {}
            for batch in sp.cached_state():
                for _, _, state in batch.states():
                    lock = state.lock
                    if (lock is not None and not lock.cancelled and state.state is RecordState.ACQUIRED
                            and (member_id is None or state.member_id == member_id)):
                        locks[id(lock)] = lock
            if not locks:
                continue
            if self.emit is not None:
                self._account_expiry(key, sp)        # (what expired before, told as such)
            before = sp.counters.lock_expired
            self._expiry_cause = "fault"
            try:
                for lock in sorted(locks.values(), key=lambda lock: lock.first_offset):
                    # (SharePartition's own lock timeout: the AcquisitionLockTimerTask's run)
                    sp._release_acquisition_lock_on_timeout(lock)
                if self.emit is not None:
                    self._account_expiry(key, sp)
            finally:
                self._expiry_cause = "timeout"
            expired[key] = sp.counters.lock_expired - before
        return expired

    # ---- wake-ups ----

    @_operation
    def on_append(self, topic: str, partition: int) -> None:
        """The cluster appended to a partition: the fetches waiting on it try again."""
        if self._parked:                    # (every produce comes here: nothing to do without a waiting fetch)
            t = self.cluster.topics.get(topic)
            if t is not None:
                self._wake((t.topic_id, partition))

    def _changed(self, key: StateKey) -> None:
        if not self._depth and self.emit is not None:
            # outside an operation only a lock expiry changes a share-partition: its event once every
            # lock expiring now has (per-offset locks expire together), as a timer due now runs last
            timer = ("share-lock-expired", *key)
            if not self.timers.is_scheduled(timer):
                self.timers.schedule(timer, self.clock(), lambda: self._locks_expired(key))
        if self._parked:
            self._run(lambda: self._wake((key[1], key[2]), key[0]))

    def _wake(self, tp: TopicPartition, group_id: str | None = None) -> None:
        for parked in list(self._parked):
            if tp in parked.fetch.interested and (group_id is None or parked.fetch.group_id == group_id):
                parked.retry()

    def _current_leader(self, topic_id, index: int, code: int, endpoints: dict) -> dict:
        """CurrentLeader of a partition entry: the leader, for NOT_LEADER_OR_FOLLOWER only (its endpoint
        added to NodeEndpoints)."""
        if code != _E.NOT_LEADER_OR_FOLLOWER:
            return {"leader_id": 0, "leader_epoch": 0}
        topic = self.cluster.topics_by_id.get(topic_id)
        if topic is None:
            return {"leader_id": -1, "leader_epoch": -1}
        leader = self.cluster.leader_for(topic.name, index)
        node = self.cluster.nodes.get(leader)
        if node is not None and node.up:
            endpoints[leader] = {"node_id": leader, "host": node.host, "port": node.port, "rack": node.rack}
        return {"leader_id": leader, "leader_epoch": 0}


_ACK_NAMES = {0: "GAP", 1: "ACCEPT", 2: "RELEASE", 3: "REJECT", 4: "RENEW"}


def _ack_runs(raw: list) -> list[list]:
    """Acknowledgement batches as runs [first, last, type name] of one type each (a batch with one type
    per offset split where it changes)."""
    out: list[list] = []
    for b in raw:
        first, last, types = b["first_offset"], b["last_offset"], b["acknowledge_types"]
        if len(types) <= 1:
            out.append([first, last, _ACK_NAMES.get(types[0] if types else 0, str(types))])
            continue
        for i, t in enumerate(types[: last - first + 1]):
            name = _ACK_NAMES.get(t, str(t))
            if out and out[-1][2] == name and out[-1][1] == first + i - 1 and i:
                out[-1][1] = first + i
            else:
                out.append([first + i, first + i, name])
    return out


class _ShareFetch:
    """One ShareFetch from its session context to its response (DelayedShareFetch)."""

    def __init__(self, manager: SharePartitionManager, node_id: int, connection_id, correlation_id: int, body: dict,
                 context: _Context, acks: dict, lock_ms: int, respond: Callable[[dict], None]) -> None:
        self.manager = manager
        self.node_id = node_id
        self.connection_id = connection_id
        self.body = body
        self.group_id = body["group_id"]
        self.member_id = body["member_id"]
        self.context = context
        self.acks = acks
        self.lock_ms = lock_ms
        self.respond = respond
        self.key = ("share-fetch", node_id, connection_id, correlation_id)
        self.errors: dict[TopicPartition, tuple[int, str | None]] = {}
        self.partitions: list[TopicPartition] = []       # what the fetch may acquire from, in its turn's order
        self.interested: set[TopicPartition] = set()

    def sort_out(self, readable: Callable[[str], bool]) -> None:
        """The context's partitions: in error (unknown topic id, not authorized, unknown partition, not led
        here), or to fetch, rotated by the request's session epoch (Kafka's round-robin PartitionRotateStrategy)."""
        cluster = self.manager.cluster
        fetch = []
        for tp in self.context.fetch or ():
            topic_id, index = tp
            topic = cluster.topics_by_id.get(topic_id)
            if topic is None:
                self.errors[tp] = (_E.UNKNOWN_TOPIC_ID, None)
            elif not readable(topic.name):
                self.errors[tp] = (_E.TOPIC_AUTHORIZATION_FAILED, None)
            elif not 0 <= index < topic.partition_count:
                self.errors[tp] = (_E.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif cluster.leader_for(topic.name, index) != self.node_id:
                self.errors[tp] = (_E.NOT_LEADER_OR_FOLLOWER, None)
            else:
                fetch.append(tp)
        if fetch:
            epoch = self.body["share_session_epoch"]        # the request's, as KafkaApis passes it (not the next)
            shift = epoch % len(fetch) if epoch >= 1 else 0
            fetch = fetch[shift:] + fetch[:shift]
        self.partitions = fetch
        self.interested = set(fetch)

    def topics_read(self) -> set[str]:
        """The topics the fetch reads after the API layer's checks, the partitions of other leaders
        included (what Kafka's TotalShareFetchRequestsPerSec counts)."""
        topics_by_id = self.manager.cluster.topics_by_id
        read = {topics_by_id[t].name for t, _ in self.partitions if t in topics_by_id}
        read.update(topics_by_id[t].name for (t, _), (code, _) in self.errors.items()
                    if code in _LEADER_ERRORS and t in topics_by_id)
        return read

    def start(self) -> None:
        body = self.body
        if body["max_records"] <= 0 or self._max_bytes() <= 0:
            self.finish([])         # nothing asked: nothing read (SharePartitionManager.processShareFetch)
            return
        if not self.partitions or body["max_wait_ms"] <= 0:
            self.finish(self._acquire())
            return
        if self._ready():
            self.finish(self._acquire())
            return
        parked = _ParkedFetch(self)
        self.manager._parked[parked] = None
        self.manager.timers.schedule(self.key, self.manager.clock() + body["max_wait_ms"], parked.expire)

    def _max_bytes(self) -> int:
        return min(self.body["max_bytes"], FETCH_MAX_BYTES)

    def _partition_max_bytes(self) -> int:
        return max(1, self._max_bytes() // max(1, len(self.partitions)))

    def _load(self, tp: TopicPartition) -> SharePartition | None:
        topic = self.manager.cluster.topics_by_id.get(tp[0])
        if topic is not None and 0 <= tp[1] < topic.partition_count and \
                self.manager.cluster.leader_for(topic.name, tp[1]) != self.node_id:
            # (the leadership moved while the fetch waited: answered at once, as DelayedShareFetch does)
            self.errors[tp] = (int(_E.NOT_LEADER_OR_FOLLOWER), None)
            return None
        try:
            return self.manager._share_partition(self.group_id, tp[0], tp[1], self.node_id)
        except KafkaError as e:
            self.errors[tp] = (int(e.code), e.message)
            return None

    def _log(self, tp: TopicPartition):
        return self.manager.cluster.topics_by_id[tp[0]].partitions[tp[1]]

    def _ready(self) -> bool:
        """Whether enough can be acquired now (MinBytes, at most MaxBytes) or a partition is in error."""
        wanted = min(self.body["min_bytes"], self._max_bytes())     # (0: any acquirable partition will do)
        limit = self._partition_max_bytes()
        available = 0
        for tp in self.partitions:
            sp = self._load(tp)
            if sp is None:
                return True
            if not sp.can_acquire_records():
                continue
            log = self._log(tp)
            offset = sp.next_fetch_offset()
            if offset < log.log_start_offset:
                return True
            available += sum(len(data) for _, _, data in log.batches_from(offset, limit))
            if available >= wanted:
                return True
        return False

    def _acquire(self) -> list[dict]:
        """Acquire from each partition in turn; an entry for each partition read, records or not
        (ShareFetchUtils.processFetchResponse; once MaxRecords is spent, the later ones acquire nothing)."""
        body = self.body
        remaining = body["max_records"]
        mode = ShareAcquireMode(body.get("share_acquire_mode", 0)) if body.get("share_acquire_mode", 0) in (0, 1) \
            else ShareAcquireMode.BATCH_OPTIMIZED
        limit = self._partition_max_bytes()
        entries = []
        manager = self.manager
        events = manager.emit is not None
        for tp in self.partitions:
            sp = self._load(tp)
            if sp is None or not sp.maybe_acquire_fetch_lock(self.key):
                continue
            if events:
                manager._account_expiry((self.group_id, *tp), sp)
            try:
                if not sp.can_acquire_records():
                    continue
                log = self._log(tp)
                offset = sp.next_fetch_offset()
                if offset < log.log_start_offset:
                    sp.update_cache_and_offsets(log.log_start_offset)
                    offset = sp.next_fetch_offset()
                read = log.batches_from(offset, limit) if remaining > 0 else []
                acquired = sp.acquire(self.member_id, [LogBatch(base, last) for base, last, _ in read],
                                      fetch_offset=offset, max_fetch_records=remaining,
                                      batch_size=body["batch_size"], acquire_mode=mode) if read else None
            finally:
                sp.release_fetch_lock(self.key)
            ranges = acquired.acquired_records if acquired is not None else []
            remaining -= acquired.count if acquired is not None else 0
            if events:
                manager._acquired_events((self.group_id, *tp), sp, self.member_id, ranges)
            records = b""
            if ranges:
                first, last = ranges[0].first_offset, ranges[-1].last_offset
                records = b"".join(data for base, end, data in read if end >= first and base <= last)
            entries.append(_partition_entry(tp[1], records=records, acquired=[
                {"first_offset": r.first_offset, "last_offset": r.last_offset, "delivery_count": r.delivery_count}
                for r in ranges]))
            entries[-1]["_tp"] = tp
        return entries

    def finish(self, fetched: list[dict]) -> None:
        """Build the response (ShareSessionContext.updateAndGenerateResponseData, then the
        acknowledgements' results) and send it."""
        manager = self.manager
        endpoints: dict[int, dict] = {}
        by_tp: dict[TopicPartition, dict] = {}
        for entry in fetched:
            tp = entry.pop("_tp")
            if self.context.full or entry["acquired_records"] or tp in self.context.added:
                by_tp[tp] = entry
        if self.errors:
            # (the share-partition manager's errors, not the API layer's: FailedShareFetchRequestsPerSec)
            topics_by_id = manager.cluster.topics_by_id
            manager.stats.count_topics(manager.stats.failed_share_fetch, {
                topics_by_id[t].name for (t, _), (code, _) in self.errors.items()
                if code not in _API_LAYER_ERRORS and t in topics_by_id})
        for tp, (code, _message) in self.errors.items():
            # (no ErrorMessage: KafkaApis.getResponsePartitionData copies none into the response)
            by_tp[tp] = _partition_entry(tp[1], code=code)
            by_tp[tp]["current_leader"] = manager._current_leader(tp[0], tp[1], code, endpoints)
        for tp in self.context.added:
            by_tp.setdefault(tp, _partition_entry(tp[1]))
        for tp, (code, message) in self.acks.items():
            entry = by_tp.setdefault(tp, _partition_entry(tp[1]))
            entry["acknowledge_error_code"] = code
            entry["acknowledge_error_message"] = message
        responses: dict = {}
        for (topic_id, _), entry in by_tp.items():
            responses.setdefault(topic_id, []).append(entry)
        self.respond({"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                      "acquisition_lock_timeout_ms": self.lock_ms,
                      "responses": [{"topic_id": t, "partitions": ps} for t, ps in responses.items()],
                      "node_endpoints": list(endpoints.values())})


class _ParkedFetch:
    """A fetch waiting for MinBytes or MaxWaitMs."""

    def __init__(self, fetch: _ShareFetch) -> None:
        self.fetch = fetch
        self.node_id = fetch.node_id
        self.connection_id = fetch.connection_id
        self.done = False

    def retry(self) -> None:
        if not self.done and self.fetch._ready():
            self._complete()

    def expire(self) -> None:
        if not self.done:
            self.fetch.manager.stats.delayed_share_fetch_expires += 1
            self.fetch.manager._run(self._complete)

    def _complete(self) -> None:
        self.cancel()
        self.fetch.finish(self.fetch._acquire())

    def cancel(self) -> None:
        self.done = True
        self.fetch.manager._parked.pop(self, None)
        self.fetch.manager.timers.cancel(self.fetch.key)


#: the errors of a fetch's partitions that its API layer finds (KafkaApis), not the share-partition manager
_API_LAYER_ERRORS = (_E.UNKNOWN_TOPIC_ID, _E.TOPIC_AUTHORIZATION_FAILED)
#: the errors of partitions the share-partition manager is asked for and does not lead
_LEADER_ERRORS = (_E.NOT_LEADER_OR_FOLLOWER, _E.UNKNOWN_TOPIC_OR_PARTITION)


def _meter_acknowledgements(counts: dict, batches: list[ShareAcknowledgementBatch]) -> None:
    """ShareGroupMetrics.recordAcknowledgement of a request's batches: a whole range per single type,
    else each offset's type (GAP is not metered)."""
    for b in batches:
        types = b.acknowledge_types
        if len(types) == 1:
            if types[0] in _METERED_ACK_TYPES:
                counts[types[0]] = counts.get(types[0], 0) + b.last_offset - b.first_offset + 1
        else:
            for t in types:
                if t in _METERED_ACK_TYPES:
                    counts[t] = counts.get(t, 0) + 1


def _error_name(code: int) -> str | None:
    """A Kafka error's name, None for NONE."""
    if not code:
        return None
    error = _E.lookup(code)
    return error.name if isinstance(error, _E) else str(code)


def _merged(topics: list) -> list[tuple[Hashable, dict[int, list]]]:
    """The request's topics with duplicate topic ids merged (librdkafka sends a topic once per partition
    at times): (topic id, {partition: acknowledgement batches}), in request order."""
    merged: dict = {}
    for t in topics:
        partitions = merged.setdefault(t["topic_id"], {})
        for p in t["partitions"]:
            partitions.setdefault(p["partition_index"], []).extend(p.get("acknowledgement_batches") or ())
    return list(merged.items())


def _partition_entry(index: int, *, code: int = 0, message: str | None = None, records: bytes = b"",
                     acquired: list | None = None) -> dict:
    return {"partition_index": index, "error_code": int(code), "error_message": message,
            "acknowledge_error_code": 0, "acknowledge_error_message": None,
            "current_leader": {"leader_id": 0, "leader_epoch": 0}, "records": records,
            "acquired_records": acquired or []}


def fetch_error(code: int, message: str | None = None) -> dict:
    """A ShareFetch failed whole (ShareFetchRequest.getErrorResponse): no partitions, lock timeout 0."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}


def acknowledge_error(code: int, message: str | None = None) -> dict:
    """A ShareAcknowledge failed whole."""
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}

