"""Sans-I/O core of Kafka's group coordinator: the group manager.

:class:`GroupCoordinator` follows the Java coordinator of Kafka 4.x (``GroupMetadataManager``;
"J" in the reference spec) for classic groups: the groups of this coordinator, their records and
loading, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups, DeleteGroups
and every timer of a classic group. The offset requests and the retention sweep go to its
:class:`~.offsets.OffsetManager` (``OffsetMetadataManager``); a group is a
:class:`~.classic.ClassicGroup`.

Purity: no sockets, no asyncio, no wall clock. Time comes only from ``clock()`` (ms);
delays go through the keyed :class:`~groupcoord.coordinator.timer.Timers`, which the driver
advances. Group metadata "writes" always succeed at once, so callbacks Kafka runs after a
log append run immediately.

Calling convention: every request method takes ``respond`` first, then what does not depend on
the API version (the handlers do the version shims): JoinGroup, SyncGroup, Heartbeat, LeaveGroup
and the offset requests one typed request object (:class:`JoinGroupRequest`, ...,
:class:`~.offsets.OffsetCommitRequest`), which the handler has checked with its ``error()`` as
Kafka's API layer does (the core does not repeat those checks); the others keyword arguments.
The response is a dict in the field names of the API's latest version, handed to ``respond``
now or later (parked JoinGroup/SyncGroup). Responses produced while the coordinator is updating its
state are queued and delivered when the outermost call returns, so a ``respond`` callback
may call back into the coordinator.

Timer keys: ``("hb", group, member)`` (session / new-member / KIP-394 pending timers share it,
as in Kafka), ``("join", group)`` (join phase and initial delay), ``("sync", group)``
(pending sync), ``("offsets-expiry",)``.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from collections import deque
from functools import partial, wraps
from typing import Callable, Iterable, Iterator

import structlog

from groupcoord.protocol.errors import ErrorCode

from .. import records as _rec
from .. import storage as _st
from ..cluster import partition_for
from ..config import BrokerConfig
from ..events import SCHEMA_VERSION, default_emit
from . import consumer_records
from .consumer import ConsumerGroup
from .consumer_classic import ApiError
from .consumer_manager import ConsumerGroupHeartbeatRequest, ConsumerGroupManager
from .offsets import OffsetManager
from .classic import (
    COMPLETING_REBALANCE, DEAD, EMPTY, EMPTY_ASSIGNMENT, PREPARING_REBALANCE, STABLE, ClassicGroup, Member,
    OffsetAndMetadata,
)
from ..timer import Timers

_log = structlog.get_logger("groupcoord.group")

#: Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
#: AuthorizedOperations of a group when no authorizer is configured: READ, DELETE, DESCRIBE,
#: DESCRIBE_CONFIGS and ALTER_CONFIGS (AclEntry.supportedOperations(GROUP)).
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

_NONE = 0
_E = ErrorCode


def default_member_id_factory(prefix: str) -> str:
    """``<client_id>-<uuid4>`` / ``<group_instance_id>-<uuid4>``."""
    return f"{prefix}-{uuid.uuid4()}"


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


def _entry(fn):
    """Mark a public entry point (or timer callback): queued responses go out when it returns."""
    @wraps(fn)
    def wrapper(self, *args, **kwargs):
        self._depth += 1
        try:
            return fn(self, *args, **kwargs)
        finally:
            self._depth -= 1
            if not self._depth and self._outbox:
                self._flush()
    return wrapper


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


class GroupCoordinator:
    """Kafka's classic group coordinator, in virtual time.

    ``config``            BrokerConfig (group.* and offsets.* settings are read once).
    ``timers``            keyed timers the driver advances.
    ``clock``             () -> now in ms.
    ``emit``              receives every structured event (:mod:`.events`); default: structlog.
    ``member_id_factory`` prefix (client id or group instance id) -> new member id;
                          default ``<prefix>-<uuid4>``.
    ``emit_offset_commits`` whether to emit one ``offset.committed`` event per OffsetCommit.
    ``store``             where offset commits and group metadata are appended as records
                          (:mod:`.storage`); default :class:`~.storage.MemoryStore` (nothing kept).
                          ``append`` returns before the commit is acknowledged.

    Loading (:meth:`begin_loading` / :meth:`complete_loading`): while an offsets-topic partition
    loads, its groups answer COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE), as in Kafka.
    """

    def __init__(self, config: BrokerConfig, timers: Timers, clock: Callable[[], int],
                 emit: Callable[[dict], None] | None = None,
                 member_id_factory: Callable[[str], str] | None = None, *,
                 emit_offset_commits: bool = True, store: "_st.Store | None" = None) -> None:
        self.config = config
        self.timers = timers
        self._clock = clock
        self._emit = emit if emit is not None else default_emit
        self._new_member_id = member_id_factory or default_member_id_factory
        self._emit_commits = emit_offset_commits
        self._groups: dict[str, ClassicGroup] = {}
        self._outbox: deque = deque()
        self._depth = 0
        self.min_session_timeout_ms = int(config["group.min.session.timeout.ms"])
        self.max_session_timeout_ms = int(config["group.max.session.timeout.ms"])
        self.initial_rebalance_delay_ms = int(config["group.initial.rebalance.delay.ms"])
        self.group_max_size = int(config["group.max.size"])
        self.new_member_join_timeout_ms = NEW_MEMBER_JOIN_TIMEOUT_MS
        # the offsets topic's max.message.bytes; never above what the log can read back
        self.max_message_bytes = min(int(config["message.max.bytes"]), _st.MAX_FRAME - 4)
        self.num_offsets_partitions = int(config["offsets.topic.num.partitions"])
        self.store = store if store is not None else _st.MemoryStore()
        self._persist = not isinstance(self.store, _st.MemoryStore)
        self._loading: set[int] = set()
        self.offsets = OffsetManager(self)
        # the offset requests are the offset manager's (bound here: no call in between)
        self.offset_commit = self.offsets.offset_commit
        self.offset_fetch = self.offsets.offset_fetch
        self.offset_delete = self.offsets.offset_delete
        self.delete_topic_offsets = self.offsets.delete_topic_offsets
        self.cleanup_group_metadata = self.offsets.cleanup_group_metadata
        # consumer groups (KIP-848): a map of their own (a group id names one group of either type)
        self._consumer_groups: dict[str, ConsumerGroup] = {}
        protocols = {p.strip() for p in str(config["group.coordinator.rebalance.protocols"]).split(",")}
        self.consumer_protocol_enabled = "consumer" in protocols
        self.consumer = ConsumerGroupManager(self)
        self._schedule_offset_expiration()

    # ==================================================================== durability
    def partition_of(self, group_id: str) -> int:
        """The offsets-topic partition whose log holds the group."""
        return partition_for(group_id, self.num_offsets_partitions)

    def _is_loading(self, group_id: str) -> bool:
        return bool(self._loading) and self.partition_of(group_id) in self._loading

    def begin_loading(self, partition: int) -> None:
        """Mark a partition as loading: its groups answer COORDINATOR_LOAD_IN_PROGRESS."""
        self._loading.add(partition)

    @_entry
    def complete_loading(self, partition: int, records) -> int:
        """Rebuild groups and offsets from a partition's records (Kafka's ``loadGroupsAndOffsets``)
        and open the partition; returns how many groups were loaded. Stable groups come back
        with their members, whose session timers start now."""
        try:
            state = _st.replay(records)
            now = self._clock()
            loaded = 0
            for group_id, gm in state.groups.items():
                self._restore_group(group_id, gm, now)
                loaded += 1
            for group_id, values in state.consumer_groups.items():
                loaded += self._restore_consumer_group(group_id, values, now)
            for (group_id, topic, index), v in state.offsets.items():
                group = self._groups.get(group_id)
                if group is None:
                    group = self._consumer_groups.get(group_id)
                if group is None:
                    group = self._groups[group_id] = ClassicGroup(group_id, now)
                    loaded += 1
                group.offsets.setdefault(topic, {})[index] = OffsetAndMetadata(
                    v.offset, v.leader_epoch, v.metadata, v.commit_timestamp,
                    None if v.expire_timestamp == -1 else v.expire_timestamp)
            return loaded
        finally:
            self._loading.discard(partition)

    def _restore_group(self, group_id: str, gm: "_st.GroupMetadataValue", now: int) -> None:
        ts = gm.current_state_timestamp
        group = ClassicGroup(group_id, now if ts == -1 else ts)
        group.protocol_type = gm.protocol_type
        group.generation_id = gm.generation
        group.protocol_name = gm.protocol_name
        for m in gm.members:
            member = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.rebalance_timeout_ms, m.session_timeout_ms, gm.protocol_type or "",
                            [(gm.protocol_name or "", m.subscription)], m.assignment, joined_ms=now)
            group.add(member)
        group.protocol_type = gm.protocol_type
        group.leader_id = gm.leader if gm.members else None
        group.state = STABLE if gm.members else EMPTY
        group.previous_state = DEAD
        group.subscribed_topics = group.compute_subscribed_topics()
        self._groups[group_id] = group
        for m in gm.members:
            self._schedule_heartbeat(group_id, m.member_id, m.session_timeout_ms, now)

    def _restore_consumer_group(self, group_id: str, values: dict, now: int) -> int:
        """Rebuild a consumer group from its records (Kafka's replay of them): its members' session
        timers start now, and those still revoking partitions get their rebalance timer. Returns
        1, or 0 when the records hold no group (no epoch record: a group deleted part way)."""
        if (_rec.CONSUMER_GROUP_METADATA, None) not in values:
            return 0
        group, written, warnings = consumer_records.restore(group_id, values, now)
        for warning in warnings:
            _log.warning("consumer group record not applied", group=group_id, problem=warning)
        group.log_state = written
        self._groups.pop(group_id, None)      # live records of both types: a damaged log; this one wins
        self._consumer_groups[group_id] = group
        self.consumer.restored(group, now)
        self.write_consumer_group(group)         # an epoch bumped at load (a topic changed meanwhile)
        return 1

    def _append(self, group_id: str, records: list) -> None:
        if records:
            self.store.append(self.partition_of(group_id), records)

    def _persist_group(self, group: ClassicGroup) -> None:
        """Append the group metadata record (Stable: members and assignments; Empty: none)."""
        if self._persist:
            self._append(group.group_id, [self._group_record(group)])

    def _group_record_too_large(self, group: ClassicGroup) -> bool:
        """Whether the group's metadata record exceeds message.max.bytes, the offsets topic's limit:
        Kafka's append fails (RecordTooLargeException) and nothing is written. Checked whether or
        not this service persists, so that a group behaves as on Kafka either way."""
        return _st.payload_size(*self._group_record(group)) > self.max_message_bytes

    def _group_record(self, group: ClassicGroup) -> tuple:
        protocol = group.protocol_name
        members = ()
        if group.state != EMPTY:
            members = tuple(_st.MemberMetadata(
                m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.session_timeout_ms, m.metadata(protocol) if protocol is not None else b"", m.assignment)
                for m in group.members.values())
        ts = group.current_state_timestamp
        value = _st.GroupMetadataValue(group.protocol_type, group.generation_id, protocol,
                                       group.leader_id if members else None, -1 if ts is None else ts, members)
        return _st.GroupMetadataKey(group.group_id), value

    # ==================================================================== lookup / admin
    def groups(self) -> Iterator[ClassicGroup]:
        """All groups (a snapshot iterator)."""
        return iter(list(self._groups.values()))

    def group(self, group_id: str) -> ClassicGroup | None:
        return self._groups.get(group_id)

    def __len__(self) -> int:
        return len(self._groups)

    def __contains__(self, group_id: str) -> bool:
        return group_id in self._groups or group_id in self._consumer_groups

    # ==================================================================== consumer groups
    def clock(self) -> int:
        return self._clock()

    def is_loading(self, group_id: str) -> bool:
        return bool(self._loading) and self._is_loading(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        return self._consumer_groups.get(group_id)

    def consumer_groups(self) -> list[ConsumerGroup]:
        return list(self._consumer_groups.values())

    def add_consumer_group(self, group_id: str, now: int, replaces: ClassicGroup | None = None) -> ConsumerGroup:
        """A new consumer group; ``replaces``: the empty classic group of that id, whose committed
        offsets it takes over."""
        group = ConsumerGroup(group_id, now)
        if replaces is not None:
            self.retire_classic_group(replaces, now)
            group.offsets = replaces.offsets
        self.install_consumer_group(group, now, "consumer_group_heartbeat")
        return group

    def _stop_classic_group(self, group: ClassicGroup) -> None:
        """A classic group gives way to a consumer group of its id: its waiting JoinGroups and
        SyncGroups are answered REBALANCE_IN_PROGRESS, its timers stop, it leaves the map."""
        group_id = group.group_id
        for member in list(group.members.values()):
            respond = group.take_join_callback(member)
            if respond is not None:
                self._reply(respond, join_error(member.member_id, _E.REBALANCE_IN_PROGRESS))
            respond = group.take_sync_callback(member)
            if respond is not None:
                self._reply(respond, sync_error(_E.REBALANCE_IN_PROGRESS))
            self._cancel_heartbeat(group_id, member.member_id)
        for member_id in group.pending_join_members:
            self._cancel_heartbeat(group_id, member_id)
        self.timers.cancel(("join", group_id))
        self.timers.cancel(("sync", group_id))
        del self._groups[group_id]

    def retire_classic_group(self, group: ClassicGroup, now: int) -> None:
        """An empty classic group gives way to a consumer group (its offsets go with the caller)."""
        self._stop_classic_group(group)
        if self._persist:
            self._append(group.group_id, [(_st.GroupMetadataKey(group.group_id), None)])
        self._event(group, "group.deleted", now, {"reason": "converted", "offsets": 0})

    def install_consumer_group(self, group: ConsumerGroup, now: int, cause: str) -> None:
        self._consumer_groups[group.group_id] = group
        self.event_consumer(group, "group.created", now, {"protocol_type": "consumer", "cause": cause})

    def retire_consumer_group(self, group: ConsumerGroup, now: int) -> None:
        """An empty consumer group gives way to a classic group: its records are tombstoned."""
        self._tombstone_consumer_group(group)
        del self._consumer_groups[group.group_id]
        self._event(group, "group.deleted", now, {"reason": "converted", "offsets": 0})

    def upgrade_group(self, classic: ClassicGroup, group: ConsumerGroup, now: int) -> None:
        """A classic group with members becomes ``group`` (:mod:`.consumer_classic`): the classic
        record's tombstone and the consumer group's records in one append, as Kafka's conversion
        is one batch of records."""
        self._stop_classic_group(classic)
        if self._persist:
            group.log_state = consumer_records.Written()
            self._append(group.group_id, [(_st.GroupMetadataKey(group.group_id), None),
                                          *consumer_records.changes(group, group.log_state)])
        else:
            group.changed.clear()
        self._event(classic, "group.deleted", now, {"reason": "converted", "offsets": 0})
        self.install_consumer_group(group, now, "upgrade")

    def downgrade_group(self, group: ConsumerGroup, classic: ClassicGroup, now: int) -> None:
        """A consumer group of classic members becomes ``classic``, Stable with its members, whose
        session timers start now: the consumer group's tombstones and the classic record in one
        append."""
        records = []
        if self._persist and group.log_state is not None:
            records = consumer_records.deletion(group, group.log_state)
        del self._consumer_groups[group.group_id]
        self._event(group, "group.deleted", now, {"reason": "converted", "offsets": 0})
        self._groups[classic.group_id] = classic
        if self._persist:
            self._append(classic.group_id, [*records, self._group_record(classic)])
        self._event(classic, "group.created", now, {"protocol_type": classic.protocol_type, "cause": "downgrade"})
        for member in classic.members.values():
            self._schedule_heartbeat(classic.group_id, member.member_id, member.session_timeout_ms, now)

    def prepare_rebalance(self, group: ClassicGroup, now: int, reason: str) -> None:
        self._prepare_rebalance(group, now, reason)

    def write_consumer_group(self, group: ConsumerGroup) -> None:
        """Append the records of what changed in the consumer group since its last write."""
        if not self._persist:
            group.changed.clear()
            return
        if group.log_state is None:
            group.log_state = consumer_records.Written()
        self._append(group.group_id, consumer_records.changes(group, group.log_state))

    def write_consumer_group_id(self, group_id: str) -> None:
        """:meth:`write_consumer_group` of the consumer group of that id, when there (still) is one."""
        group = self._consumer_groups.get(group_id)
        if group is not None:
            self.write_consumer_group(group)

    def _tombstone_consumer_group(self, group: ConsumerGroup) -> None:
        if self._persist and group.log_state is not None:
            self._append(group.group_id, consumer_records.deletion(group, group.log_state))

    def _replace_consumer_group(self, group: ConsumerGroup, now: int) -> ClassicGroup:
        """An empty consumer group becomes a classic group (a JoinGroup came), with its offsets."""
        self.retire_consumer_group(group, now)
        classic = self._create_group(group.group_id, now, "join_group")
        classic.offsets = group.offsets
        return classic

    def event_consumer(self, group: ConsumerGroup, kind: str, now: int, fields: dict) -> None:
        """An event of a consumer group (``generation``: its group epoch)."""
        self._event(group, kind, now, fields)

    @_entry
    def consumer_timer(self, fn: Callable, group_id: str, *args) -> None:
        """A timer of a consumer group fired: ``fn(group_id, *args)``, then what it changed in the
        group is written (nothing when the group is gone or became a classic group, whose
        conversion wrote its records); responses queued meanwhile go out after it."""
        fn(group_id, *args)
        self.write_consumer_group_id(group_id)

    def expire_consumer_member(self, group_id: str, member_id: str) -> None:
        """End a consumer group member's session now, exactly as its session timer would
        (``consumer.member_fenced``, reason "session_timeout")."""
        self.consumer_timer(self.consumer.expire_member, group_id, member_id)

    @_entry
    def consumer_group_heartbeat(self, respond: Callable[[dict], None], req: ConsumerGroupHeartbeatRequest) -> None:
        """ConsumerGroupHeartbeat of a request the API layer validated."""
        self._reply(respond, self.consumer.heartbeat(req))

    # ==================================================================== plumbing
    def _reply(self, respond: Callable[[dict], None], response: dict) -> None:
        self._outbox.append((respond, response))

    def _flush(self) -> None:
        outbox = self._outbox
        failure = None
        while outbox:
            respond, response = outbox.popleft()
            try:
                respond(response)
            except BaseException as e:  # keep delivering the others
                if failure is None:
                    failure = e
        if failure is not None:
            raise failure

    def _event(self, group: ClassicGroup, kind: str, now: int, fields: dict) -> None:
        event = {"v": SCHEMA_VERSION, "event": kind, "ts_ms": now, "group": group.group_id,
                 "generation": group.generation_id, "state": group.state, "members": len(group.members)}
        event.update(fields)
        emit = self._emit             # (see heartbeat_error)
        emit(event)

    def _transition(self, group: ClassicGroup, target: str, now: int, reason: str | None) -> str:
        since = group.current_state_timestamp
        previous = group.transition_to(target, now)
        self._event(group, "group.state_change", now, {
            "state_from": previous, "state_to": target,
            "duration_ms": now - since if since is not None else 0, "reason": reason})
        return previous

    def _leader_changed(self, group: ClassicGroup, before: str | None, now: int, reason: str) -> None:
        if group.leader_id != before:
            self._event(group, "group.leader_changed", now,
                        {"leader_from": before, "leader_to": group.leader_id, "reason": reason})

    def _create_group(self, group_id: str, now: int, cause: str) -> ClassicGroup:
        group = ClassicGroup(group_id, now)
        self._groups[group_id] = group
        self._event(group, "group.created", now, {"protocol_type": None, "cause": cause})
        return group

    def _schedule_heartbeat(self, group_id: str, member_id: str, timeout_ms: int, now: int) -> None:
        self.timers.schedule(("hb", group_id, member_id), now + timeout_ms,
                             partial(self._on_heartbeat_timer, group_id, member_id))

    def _cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        self.timers.cancel(("hb", group_id, member_id))

    def _join_response(self, group: ClassicGroup, member_id: str, members: list, leader: str | None = None,
                       skip_assignment: bool = False) -> dict:
        return {"throttle_time_ms": 0, "error_code": _NONE, "generation_id": group.generation_id,
                "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
                "leader": (group.leader_id if leader is None else leader) or "",
                "skip_assignment": skip_assignment, "member_id": member_id, "members": members}

    # ==================================================================== JoinGroup
    @_entry
    def join_group(self, respond: Callable[[dict], None], req: JoinGroupRequest) -> None:
        """JoinGroup of a request the API layer validated (:meth:`JoinGroupRequest.error`)."""
        group_id, member_id = req.group_id, req.member_id
        req.respond = respond
        if self._loading and self._is_loading(group_id):
            self._reply(respond, join_error(member_id, _E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        now = self._clock()
        group = self._groups.get(group_id)
        if group is None and group_id in self._consumer_groups:
            consumer = self._consumer_groups[group_id]
            if consumer.members:
                self._classic_in_consumer_group(respond, consumer, "join", req, now)
                return
            group = self._replace_consumer_group(consumer, now)
        if group is None:
            if member_id:
                self._reply(respond, join_error(member_id, _E.UNKNOWN_MEMBER_ID))
                return
            group = self._create_group(group_id, now, "join_group")
        if not self._accept_joining_member(group, member_id):
            removed = group.remove(member_id)
            if removed is not None:
                self._cancel_heartbeat(group_id, member_id)
                self._event(group, "member.removed", now, {"member": member_id,
                            "instance_id": removed.group_instance_id, "reason": "group_max_size"})
            self._reply(respond, join_error("", _E.GROUP_MAX_SIZE_REACHED))
        elif not member_id:
            self._join_new_member(group, req, now)
        else:
            self._join_existing_member(group, req, now)

    def _classic_in_consumer_group(self, respond, group: ConsumerGroup, kind: str, req, now: int) -> None:
        """A JoinGroup or SyncGroup of a classic member to a consumer group (:mod:`.consumer_classic`);
        the group's records written."""
        classic = self.consumer.classic
        try:
            if kind == "join":
                response = classic.join(group, req, now)
            else:
                response = classic.sync(group, req)
        except ApiError as e:          # (the heartbeat steps' HeartbeatError too: an assignor's failure)
            response = join_error(e.member_id, e.code) if kind == "join" else sync_error(e.code)
        finally:
            self.write_consumer_group_id(group.group_id)
        self._reply(respond, response)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        state = group.state
        if state == EMPTY or state == DEAD:
            return True
        member = group.members.get(member_id)
        if state == PREPARING_REBALANCE:
            return (member is not None and member.awaiting_join is not None) or \
                group.num_members_awaiting_join < self.group_max_size
        return member is not None or len(group.members) < self.group_max_size

    def _join_new_member(self, group: ClassicGroup, req: JoinGroupRequest, now: int) -> None:
        if group.state == DEAD:
            self._reply(req.respond, join_error("", _E.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self._reply(req.respond, join_error("", _E.INCONSISTENT_GROUP_PROTOCOL))
            return
        instance_id = req.group_instance_id
        new_id = self._new_member_id(instance_id if instance_id is not None else req.client_id)
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is not None:
                self._update_static_member(group, req, existing, new_id, now)
            else:
                self._add_member_then_rebalance_or_complete_join(group, req, new_id, now)
        elif req.require_known_member_id:
            group.add_pending_member(new_id)
            self._schedule_heartbeat(group.group_id, new_id, req.session_timeout_ms, now)
            self._event(group, "member.pending", now, {
                "member": new_id, "client_id": req.client_id, "client_host": req.client_host,
                "session_timeout_ms": req.session_timeout_ms})
            self._reply(req.respond, join_error(new_id, _E.MEMBER_ID_REQUIRED))
        else:
            self._add_member_then_rebalance_or_complete_join(group, req, new_id, now)

    def _join_existing_member(self, group: ClassicGroup, req: JoinGroupRequest, now: int) -> None:
        member_id = req.member_id
        if group.state == DEAD:
            self._reply(req.respond, join_error(member_id, _E.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self._reply(req.respond, join_error(member_id, _E.INCONSISTENT_GROUP_PROTOCOL))
            return
        if member_id in group.pending_join_members:
            if req.group_instance_id is not None:
                # Kafka: IllegalStateException, answered as an unknown server error
                self._reply(req.respond, join_error("", _E.UNKNOWN_SERVER_ERROR))
                return
            self._add_member_then_rebalance_or_complete_join(group, req, member_id, now)
            return
        error = group.validate_member(member_id, req.group_instance_id)
        if error is not None:
            self._reply(req.respond, join_error(member_id, error))
            return
        member = group.members[member_id]
        state = group.state
        if state == PREPARING_REBALANCE:
            self._update_member_then_rebalance_or_complete_join(group, member, req, now, "member_rejoined")
        elif state == COMPLETING_REBALANCE:
            if member.matches(req.protocols):
                # a lost JoinGroup response: answer with the current generation
                members = group.current_member_list() if group.is_leader(member_id) else []
                self._reply(req.respond, self._join_response(group, member_id, members))
            else:
                self._update_member_then_rebalance_or_complete_join(group, member, req, now, "metadata_changed")
        elif state == STABLE:
            if group.is_leader(member_id):
                self._update_member_then_rebalance_or_complete_join(group, member, req, now, "leader_rejoined")
            elif not member.matches(req.protocols):
                self._update_member_then_rebalance_or_complete_join(group, member, req, now, "metadata_changed")
            else:
                self._reply(req.respond, self._join_response(group, member_id, []))
        else:  # Empty
            self._reply(req.respond, join_error(member_id, _E.UNKNOWN_MEMBER_ID))

    def _update_member_then_rebalance_or_complete_join(self, group: ClassicGroup, member: Member, req: JoinGroupRequest,
                                                       now: int, reason: str) -> None:
        group.update_member(member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, req.respond)
        self._maybe_prepare_rebalance_or_complete_join(group, now, reason, member.member_id, req.reason)

    def _add_member_then_rebalance_or_complete_join(self, group: ClassicGroup, req: JoinGroupRequest, member_id: str,
                                                    now: int) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type, req.protocols,
                        joined_ms=now)
        member.is_new = True
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True
        group.add(member, req.respond)
        # the new member's JoinGroup may be parked for long: bound it by the new-member timeout
        self._schedule_heartbeat(group.group_id, member_id, self.new_member_join_timeout_ms, now)
        self._event(group, "member.joined", now, {
            "member": member_id, "instance_id": req.group_instance_id, "client_id": req.client_id,
            "client_host": req.client_host, "protocol_type": req.protocol_type,
            "protocols": [name for name, _ in req.protocols], "session_timeout_ms": req.session_timeout_ms,
            "rebalance_timeout_ms": req.rebalance_timeout_ms, "reason": req.reason,
            "leader": group.leader_id == member_id})
        self._maybe_prepare_rebalance_or_complete_join(group, now, "new_member", member_id, req.reason)

    def _update_static_member(self, group: ClassicGroup, req: JoinGroupRequest, old_id: str, new_id: str, now: int) -> None:
        """A known static member rejoined with member id "": replace the old id (KIP-345)."""
        instance_id = req.group_instance_id
        leader_before = group.leader_id
        new, old = group.replace_static_member(instance_id, old_id, new_id)
        respond = old.awaiting_join
        if respond is not None:
            old.awaiting_join = None
            self._reply(respond, {"throttle_time_ms": 0, "error_code": int(_E.FENCED_INSTANCE_ID),
                                  "generation_id": -1, "protocol_type": None, "protocol_name": None,
                                  "leader": "", "skip_assignment": False, "member_id": old_id, "members": []})
        respond = old.awaiting_sync
        if respond is not None:
            old.awaiting_sync = None
            self._reply(respond, sync_error(_E.FENCED_INSTANCE_ID))
        # the old id's timer would expire without effect; the new id gets a session timer
        # (with the timeout before this request's update, as Kafka does)
        self._cancel_heartbeat(group.group_id, old_id)
        self._schedule_heartbeat(group.group_id, new_id, new.session_timeout_ms, now)
        group.update_member(new, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, req.respond)
        self._leader_changed(group, leader_before, now, "static_member_replaced")
        state = group.state
        if state == STABLE:
            selected = group.select_protocol()
            if (group.protocol_name or "") == selected:
                if self._group_record_too_large(group):
                    # as Kafka when this append fails: the replacement is reverted and the
                    # JoinGroup answered UNKNOWN_SERVER_ERROR (MESSAGE_TOO_LARGE mapped)
                    replaced_leader = group.leader_id
                    group.update_member(new, old.protocols, old.rebalance_timeout_ms, old.session_timeout_ms, None)
                    group.replace_static_member(instance_id, new_id, old_id)
                    self._cancel_heartbeat(group.group_id, new_id)
                    self._schedule_heartbeat(group.group_id, old_id, old.session_timeout_ms, now)
                    self._leader_changed(group, replaced_leader, now, "group_record_too_large")
                    self._reply(req.respond, {**join_error("", _E.UNKNOWN_SERVER_ERROR),
                                              "generation_id": group.generation_id, "leader": leader_before or "",
                                              "protocol_type": group.protocol_type,
                                              "protocol_name": group.protocol_name})
                    return
                self._event(group, "member.replaced", now, {"member": new_id, "old_member": old_id,
                                                            "instance_id": instance_id, "rebalance": False})
                # no rebalance: the group is persisted with the new id and the member answered
                self._persist_group(group)
                respond = group.take_join_callback(new)
                if req.supports_skip_assignment:
                    is_leader = group.is_leader(new_id)
                    members = group.current_member_list() if is_leader else []
                    response = self._join_response(group, new_id, members, skip_assignment=is_leader)
                else:
                    response = self._join_response(group, new_id, [], leader=leader_before)
                if respond is not None:
                    self._reply(respond, response)
                return
            self._event(group, "member.replaced", now, {"member": new_id, "old_member": old_id,
                                                        "instance_id": instance_id, "rebalance": True})
            self._maybe_prepare_rebalance_or_complete_join(group, now, "static_member_protocol_changed",
                                                           new_id, req.reason)
        elif state == COMPLETING_REBALANCE:
            self._event(group, "member.replaced", now, {"member": new_id, "old_member": old_id,
                                                        "instance_id": instance_id, "rebalance": True})
            self._prepare_rebalance(group, now, "static_member_rejoined_during_sync", new_id, req.reason)
        else:
            self._event(group, "member.replaced", now, {"member": new_id, "old_member": old_id,
                                                        "instance_id": instance_id, "rebalance": False})
            self._maybe_complete_join_phase(group, now)

    # ---- rebalance machinery -------------------------------------------------------
    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, now: int, reason: str,
                                                  member_id: str | None = None,
                                                  client_reason: str | None = None) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now, reason, member_id, client_reason)
        else:
            self._maybe_complete_join_phase(group, now)

    def _prepare_rebalance(self, group: ClassicGroup, now: int, reason: str, member_id: str | None = None,
                           client_reason: str | None = None) -> None:
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = EMPTY_ASSIGNMENT
            self._propagate_assignment(group, _E.REBALANCE_IN_PROGRESS, now)
        self._remove_sync_expiration(group)
        initial = group.state == EMPTY
        delay = None
        rebalance_timeout = group.rebalance_timeout_ms()
        if initial:
            delay = self.initial_rebalance_delay_ms
            remaining = max(rebalance_timeout - delay, 0)
            self.timers.schedule(("join", group.group_id), now + delay,
                                 partial(self._on_initial_rebalance_timer, group.group_id, delay, remaining))
        state_from = group.state
        if state_from == COMPLETING_REBALANCE and group.rebalance_started_ms is not None:
            group.rebalance_rounds += 1
        else:
            group.rebalance_started_ms = now
            group.rebalance_rounds = 1
        self._transition(group, PREPARING_REBALANCE, now, reason)
        self._event(group, "rebalance.started", now, {
            "state_from": state_from, "reason": reason, "member": member_id, "client_reason": client_reason,
            "round": group.rebalance_rounds, "initial": initial, "rebalance_timeout_ms": rebalance_timeout,
            "delay_ms": delay})
        if not initial:
            self._maybe_complete_join_else_schedule(group, now)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup, now: int) -> None:
        if group.has_all_members_joined():
            self._complete_join(group, now)
        else:
            self.timers.schedule(("join", group.group_id), now + group.rebalance_timeout_ms(),
                                 partial(self._on_join_timer, group.group_id))

    def _maybe_complete_join_phase(self, group: ClassicGroup, now: int) -> None:
        if group.state != PREPARING_REBALANCE:
            return
        if group.previous_state == EMPTY:   # the initial delay decides
            return
        if not group.has_all_members_joined():
            return
        self._complete_join(group, now)

    @_entry
    def _on_initial_rebalance_timer(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        group = self._groups.get(group_id)
        if group is None:
            return
        now = self._clock()
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)   # Kafka subtracts the *current* delay
            self.timers.schedule(("join", group_id), now + new_delay,
                                 partial(self._on_initial_rebalance_timer, group_id, new_delay, new_remaining))
        else:
            self._complete_join(group, now)

    @_entry
    def _on_join_timer(self, group_id: str) -> None:
        group = self._groups.get(group_id)
        if group is not None:
            self._complete_join(group, self._clock())

    def _complete_join(self, group: ClassicGroup, now: int) -> None:
        if group.state != PREPARING_REBALANCE:   # Kafka would fail the operation; nothing to do
            return
        group_id = group.group_id
        self.timers.cancel(("join", group_id))
        leader_before = group.leader_id
        not_rejoined = [m for m in group.members.values()
                        if m.awaiting_join is None and m.group_instance_id is None]
        for m in not_rejoined:
            group.remove(m.member_id)
            self._cancel_heartbeat(group_id, m.member_id)
            self._event(group, "member.removed", now, {"member": m.member_id, "instance_id": None,
                                                       "reason": "not_rejoined"})
        if group.state == DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined: wait another rebalance timeout (sessions will expire meanwhile)
            self._leader_changed(group, leader_before, now, "leader_removed")
            self.timers.schedule(("join", group_id), now + group.rebalance_timeout_ms(),
                                 partial(self._on_join_timer, group_id))
            return
        self._leader_changed(group, leader_before, now,
                             "leader_not_rejoined" if leader_before in group.members else "leader_removed")
        since = group.current_state_timestamp
        duration = now - since if since is not None else 0
        previous = group.init_next_generation(now)
        self._event(group, "group.state_change", now, {
            "state_from": previous, "state_to": group.state, "duration_ms": duration, "reason": "join_completed"})
        self._event(group, "rebalance.join_completed", now, {
            "protocol": group.protocol_name, "leader": group.leader_id, "duration_ms": duration,
            "removed": len(not_rejoined), "state_to": group.state})
        if group.state == EMPTY:
            self._persist_group(group)
            self._rebalance_completed(group, now, EMPTY)
            return
        leader_id = group.leader_id
        pending_sync = group.pending_sync_members
        for member in group.members.values():
            respond = group.take_join_callback(member)
            if respond is not None:
                members = group.current_member_list() if member.member_id == leader_id else []
                self._reply(respond, self._join_response(group, member.member_id, members))
            self._schedule_heartbeat(group_id, member.member_id, member.session_timeout_ms, now)
            member.is_new = False
            pending_sync.add(member.member_id)
        self.timers.schedule(("sync", group_id), now + group.rebalance_timeout_ms(),
                             partial(self._on_sync_timer, group_id, group.generation_id))

    def _rebalance_completed(self, group: ClassicGroup, now: int, outcome: str) -> None:
        started = group.rebalance_started_ms
        self._event(group, "rebalance.completed", now, {
            "outcome": outcome, "duration_ms": now - started if started is not None else 0,
            "rounds": group.rebalance_rounds, "protocol": group.protocol_name, "leader": group.leader_id})
        group.rebalance_started_ms = None
        group.rebalance_rounds = 0

    def _propagate_assignment(self, group: ClassicGroup, error: int, now: int) -> None:
        if error == _NONE:
            protocol_type, protocol_name = group.protocol_type, group.protocol_name
        else:
            protocol_type = protocol_name = None
        group_id = group.group_id
        for member in group.members.values():
            respond = member.awaiting_sync
            if respond is not None:
                member.awaiting_sync = None
                self._reply(respond, {"throttle_time_ms": 0, "error_code": int(error),
                                      "protocol_type": protocol_type, "protocol_name": protocol_name,
                                      "assignment": member.assignment})
                # the session restarts once the member has its assignment
                self._schedule_heartbeat(group_id, member.member_id, member.session_timeout_ms, now)

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timers.cancel(("sync", group.group_id))

    @_entry
    def _on_sync_timer(self, group_id: str, generation_id: int) -> None:
        group = self._groups.get(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync_members:
            return
        now = self._clock()
        leader_before = group.leader_id
        for member_id in list(group.pending_sync_members):
            removed = group.remove(member_id)
            self._cancel_heartbeat(group_id, member_id)
            if removed is not None:
                self._event(group, "member.removed", now, {
                    "member": member_id, "instance_id": removed.group_instance_id, "reason": "sync_timeout"})
        self._leader_changed(group, leader_before, now, "leader_removed")
        self._prepare_rebalance(group, now, "sync_timeout")

    def defer(self, fn: Callable[[], None]) -> None:
        """Run fn once the operation in progress (e.g. the one emitting an event) has finished,
        behind its queued responses, so that nothing re-enters the core mid-operation; at once
        when the core is idle."""
        if self._depth:
            self._outbox.append((lambda _response: fn(), None))
        else:
            fn()

    def expire_member(self, group_id: str, member_id: str) -> None:
        """End a member's session now, exactly as its session timer would (``member.expired``)."""
        self._on_heartbeat_timer(group_id, member_id)
        self.timers.cancel(("hb", group_id, member_id))

    @_entry
    def _on_heartbeat_timer(self, group_id: str, member_id: str) -> None:
        group = self._groups.get(group_id)
        if group is None or group.state == DEAD:
            return
        now = self._clock()
        if member_id in group.pending_join_members:
            group.remove(member_id)
            self._event(group, "member.expired", now, {"member": member_id, "instance_id": None,
                                                       "reason": "pending_member_timeout",
                                                       "session_timeout_ms": None})
            if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join(group, now)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        reason = "new_member_join_timeout" if member.is_new else "session_timeout"
        respond = group.take_join_callback(member)
        if respond is not None:
            self._reply(respond, join_error("", _E.UNKNOWN_MEMBER_ID))
        leader_before = group.leader_id
        group.remove(member_id)
        self._event(group, "member.expired", now, {"member": member_id, "instance_id": member.group_instance_id,
                                                   "reason": reason, "session_timeout_ms": member.session_timeout_ms})
        self._leader_changed(group, leader_before, now, "leader_removed")
        state = group.state
        if state == STABLE or state == COMPLETING_REBALANCE:
            self._maybe_prepare_rebalance_or_complete_join(group, now, "member_expired", member_id)
        elif state == PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group, now)

    # ==================================================================== SyncGroup
    @_entry
    def sync_group(self, respond: Callable[[dict], None], req: SyncGroupRequest) -> None:
        """SyncGroup of a request the API layer validated (:meth:`SyncGroupRequest.error`)."""
        group_id, generation_id, member_id = req.group_id, req.generation_id, req.member_id
        group_instance_id, protocol_type, protocol_name = req.group_instance_id, req.protocol_type, req.protocol_name
        assignments = req.assignments
        if self._loading and self._is_loading(group_id):
            self._reply(respond, sync_error(_E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        group = self._groups.get(group_id)
        if group is None and group_id in self._consumer_groups:
            self._classic_in_consumer_group(respond, self._consumer_groups[group_id], "sync", req, self._clock())
            return
        if group is None or group.state == EMPTY:
            self._reply(respond, sync_error(_E.UNKNOWN_MEMBER_ID))
            return
        if group.state == DEAD:
            self._reply(respond, sync_error(_E.COORDINATOR_NOT_AVAILABLE))
            return
        error = group.validate_member(member_id, group_instance_id)
        if error is None:
            if generation_id != group.generation_id:
                error = _E.ILLEGAL_GENERATION
            elif (protocol_type is not None and group.protocol_type is not None
                  and protocol_type != group.protocol_type) or \
                 (protocol_name is not None and group.protocol_name is not None
                  and protocol_name != group.protocol_name):
                error = _E.INCONSISTENT_GROUP_PROTOCOL
        if error is not None:
            self._reply(respond, sync_error(error))
            return
        state = group.state
        now = self._clock()
        if state == PREPARING_REBALANCE:
            self._reply(respond, sync_error(_E.REBALANCE_IN_PROGRESS))
        elif state == COMPLETING_REBALANCE:
            member = group.members[member_id]
            member.awaiting_sync = respond   # a repeated SyncGroup replaces the parked one
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                assignment: dict[str, bytes] = {}
                for a in assignments:
                    if isinstance(a, dict):
                        mid, data = a["member_id"], a["assignment"]
                    else:
                        mid, data = a
                    assignment[mid] = data if isinstance(data, bytes) else bytes(data or b"")
                empty = 0
                for m in group.members.values():
                    data = assignment.get(m.member_id)
                    if data is None:
                        data = EMPTY_ASSIGNMENT
                    if not data:
                        empty += 1
                    m.assignment = data
                if self._group_record_too_large(group):
                    self._sync_store_failed(group, now)
                    return
                # the "append" of the group metadata succeeds at once
                self._propagate_assignment(group, _NONE, now)
                since = group.current_state_timestamp
                self._transition(group, STABLE, now, "sync_completed")
                self._persist_group(group)
                duration = now - since if since is not None else 0
                self._event(group, "group.sync_completed", now, {
                    "protocol": group.protocol_name, "leader": group.leader_id, "duration_ms": duration,
                    "empty_assignments": empty})
                self._rebalance_completed(group, now, STABLE)
        elif state == STABLE:
            self._remove_pending_sync_member(group, member_id)
            member = group.members[member_id]
            self._reply(respond, {"throttle_time_ms": 0, "error_code": _NONE,
                                  "protocol_type": group.protocol_type, "protocol_name": group.protocol_name,
                                  "assignment": member.assignment})

    def _sync_store_failed(self, group: ClassicGroup, now: int) -> None:
        """The leader's assignment could not be stored (its record is over message.max.bytes):
        as Kafka, every parked SyncGroup gets UNKNOWN_SERVER_ERROR (MESSAGE_TOO_LARGE mapped by
        appendGroupMetadataErrorToResponseError), nothing is written, and the group rebalances."""
        for m in group.members.values():
            m.assignment = EMPTY_ASSIGNMENT
        self._propagate_assignment(group, _E.UNKNOWN_SERVER_ERROR, now)
        self._maybe_prepare_rebalance_or_complete_join(group, now, "group_record_too_large")

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        state = group.state
        if state == COMPLETING_REBALANCE or state == STABLE:
            if not group.pending_sync_members:
                self.timers.cancel(("sync", group.group_id))
        else:
            self.timers.cancel(("sync", group.group_id))

    # ==================================================================== Heartbeat
    def heartbeat(self, respond: Callable[[dict], None], req: HeartbeatRequest) -> None:
        """Heartbeat of a request the API layer validated (:meth:`HeartbeatRequest.error`)
        (hot path: no events, no queued responses)."""
        respond({"throttle_time_ms": 0, "error_code": self.heartbeat_error(req)})

    def heartbeat_error(self, req: HeartbeatRequest) -> int:
        """A validated heartbeat, answered at once: its error code (what :meth:`heartbeat` responds)."""
        group_id = req.group_id
        if self._loading and self._is_loading(group_id):
            return _NONE   # Kafka: a heartbeat to a loading coordinator succeeds
        group = self._groups.get(group_id)
        if group is None:
            consumer = self._consumer_groups.get(group_id)
            if consumer is None:
                return int(_E.UNKNOWN_MEMBER_ID)
            try:
                return self.consumer.classic.heartbeat(consumer, req)
            except ApiError as e:
                return e.code
        state = group.state
        if state == DEAD:
            return int(_E.COORDINATOR_NOT_AVAILABLE)
        member_id = req.member_id
        member = group.members.get(member_id)
        group_instance_id = req.group_instance_id
        if group_instance_id is not None:
            existing = group.static_members.get(group_instance_id)
            if existing is None:
                return int(_E.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                return int(_E.FENCED_INSTANCE_ID)
        if member is None:
            return int(_E.UNKNOWN_MEMBER_ID)
        if req.generation_id != group.generation_id:
            return int(_E.ILLEGAL_GENERATION)
        if state == EMPTY:
            return int(_E.UNKNOWN_MEMBER_ID)
        clock = self._clock           # (through a local: 3.11 specializes the call, not self._clock())
        self._rearm_session(group_id, member, clock())
        return int(_E.REBALANCE_IN_PROGRESS) if state == PREPARING_REBALANCE else _NONE

    def _rearm_session(self, group_id: str, member: Member, now: int) -> None:
        key = member.timer_key
        if key is None:
            key = member.timer_key = ("hb", group_id, member.member_id)
            member.timer_callback = partial(self._on_heartbeat_timer, group_id, member.member_id)
        self.timers.schedule(key, now + member.session_timeout_ms, member.timer_callback)

    # ==================================================================== LeaveGroup
    @_entry
    def leave_group(self, respond: Callable[[dict], None], req: LeaveGroupRequest) -> None:
        """LeaveGroup of a request the API layer validated (:meth:`LeaveGroupRequest.error`).
        Response in the v3+ shape."""
        self._reply(respond, self._leave(req.group_id, req.members, "member"))

    @_entry
    def remove_member(self, group_id: str, member_id: str = "", group_instance_id: str | None = None,
                      reason: str | None = None) -> int:
        """Admin removal of one member (by member id, or by instance id with member id "").

        Same path as a LeaveGroup; returns the member's error code (the top-level one when
        the whole request fails)."""
        req = LeaveGroupRequest(group_id, [(member_id, group_instance_id, reason)])
        error = req.error()
        if error is not None:
            return int(error)
        resp = self._leave(req.group_id, req.members, "admin")
        if resp["error_code"]:
            return resp["error_code"]
        return resp["members"][0]["error_code"]

    def _leave(self, group_id: str, idents: list, initiator: str) -> dict:
        """The members of a validated LeaveGroup (``idents``: [(member_id, group_instance_id, reason)])
        leave the group."""
        if self._loading and self._is_loading(group_id):
            return {"throttle_time_ms": 0, "error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "members": []}
        group = self._groups.get(group_id)
        if group is None and group_id in self._consumer_groups:
            consumer = self._consumer_groups[group_id]
            response = self.consumer.classic.leave(consumer, idents, self._clock())
            if self._consumer_groups.get(group_id) is consumer:
                self.write_consumer_group(consumer)
            return response
        if group is None:
            return {"throttle_time_ms": 0, "error_code": _NONE, "members": [
                {"member_id": mid, "group_instance_id": iid, "error_code": int(_E.UNKNOWN_MEMBER_ID)}
                for mid, iid, _ in idents]}
        if group.state == DEAD:
            return {"throttle_time_ms": 0, "error_code": int(_E.COORDINATOR_NOT_AVAILABLE), "members": []}
        now = self._clock()
        results = []
        left = 0
        leader_before = group.leader_id
        for member_id, instance_id, reason in idents:
            error = _NONE
            if not member_id:
                if instance_id is not None and instance_id in group.static_members:
                    self._remove_current_member(group, group.static_members[instance_id], reason, now, "admin")
                else:
                    error = int(_E.UNKNOWN_MEMBER_ID)
            elif member_id in group.pending_join_members:
                group.remove(member_id)
                self._cancel_heartbeat(group_id, member_id)
                self._event(group, "member.left", now, {"member": member_id, "instance_id": instance_id,
                                                        "reason": reason, "pending": True, "initiator": initiator})
            else:
                e = group.validate_member(member_id, instance_id)
                if e is None:
                    self._remove_current_member(group, member_id, reason, now, initiator)
                else:
                    error = int(e)
            if error == _NONE:
                left += 1
            results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": error})
        if left:
            self._leader_changed(group, leader_before, now, "leader_removed")
            state = group.state
            if state == STABLE or state == COMPLETING_REBALANCE:
                self._maybe_prepare_rebalance_or_complete_join(group, now, "member_left")
            elif state == PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group, now)
        return {"throttle_time_ms": 0, "error_code": _NONE, "members": results}

    def _remove_current_member(self, group: ClassicGroup, member_id: str, reason: str | None, now: int,
                               initiator: str) -> None:
        member = group.members[member_id]
        self._cancel_heartbeat(group.group_id, member_id)
        respond = group.take_join_callback(member)
        if respond is not None:
            self._reply(respond, join_error("", _E.UNKNOWN_MEMBER_ID))
        group.remove(member_id)
        self._event(group, "member.left", now, {"member": member_id, "instance_id": member.group_instance_id,
                                                "reason": reason, "pending": False, "initiator": initiator})

    # ==================================================================== DescribeGroups
    def describe_groups(self, respond: Callable[[dict], None], *, group_ids: Iterable[str | None],
                        group_id_not_found: bool = False) -> None:
        """DescribeGroups. ``group_id_not_found`` (request v6+, KIP-1043): a missing group gets
        GROUP_ID_NOT_FOUND and an error message instead of a bare "Dead" entry."""
        out = []
        for group_id in group_ids:
            out.append(self.describe_group(group_id, group_id_not_found))
        respond({"throttle_time_ms": 0, "groups": out})

    def describe_group(self, group_id: str | None, group_id_not_found: bool = False) -> dict:
        entry = {"error_code": _NONE, "error_message": None, "group_id": group_id, "group_state": "",
                 "protocol_type": "", "protocol_data": "", "members": [],
                 "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
        if group_id is None:
            entry["group_id"] = ""
            entry["error_code"] = int(_E.INVALID_GROUP_ID)
            return entry
        if self._loading and self._is_loading(group_id):
            entry["error_code"] = int(_E.COORDINATOR_LOAD_IN_PROGRESS)
            return entry
        group = self._groups.get(group_id)
        if group is None or group.state == DEAD:
            entry["group_state"] = DEAD
            if group_id_not_found:
                entry["error_code"] = int(_E.GROUP_ID_NOT_FOUND)
                entry["error_message"] = (f"Group {group_id} is not a classic group." if group_id in self._consumer_groups
                                          else f"Group {group_id} not found.")
            return entry
        entry["group_state"] = group.state
        entry["protocol_type"] = group.protocol_type or ""
        stable = group.state == STABLE
        protocol = group.protocol_name
        if stable:
            entry["protocol_data"] = protocol
        entry["members"] = [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
             "client_host": m.client_host, "member_metadata": m.metadata(protocol) if stable else b"",
             "member_assignment": m.assignment}
            for m in group.members.values()]
        return entry

    # ==================================================================== ListGroups
    def list_groups(self, respond: Callable[[dict], None], *, states_filter: Iterable[str] | None = None,
                    types_filter: Iterable[str] | None = None,
                    group_filter: Callable[[str], bool] | None = None) -> None:
        """ListGroups. Filters are case-insensitive (states are also trimmed, as Kafka does);
        an empty filter does not filter; an unknown type matches nothing.
        ``group_filter``: keep only these group ids (e.g. those this node coordinates)."""
        states = {s.lower().strip() for s in states_filter} if states_filter else None
        types = {t.lower() for t in types_filter} if types_filter else None
        if self._loading:
            respond({"throttle_time_ms": 0, "error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "groups": []})
            return
        out = []
        if types is None or "classic" in types:
            for group in self._groups.values():
                if states is not None and group.state.lower() not in states:
                    continue
                if group_filter is not None and not group_filter(group.group_id):
                    continue
                out.append({"group_id": group.group_id, "protocol_type": group.protocol_type or "",
                            "group_state": group.state, "group_type": "classic"})
        if types is None or "consumer" in types:
            for group in self._consumer_groups.values():
                if states is not None and group.state.lower() not in states:
                    continue
                if group_filter is not None and not group_filter(group.group_id):
                    continue
                out.append({"group_id": group.group_id, "protocol_type": "consumer",
                            "group_state": group.state, "group_type": "consumer"})
        respond({"throttle_time_ms": 0, "error_code": _NONE, "groups": out})

    # ==================================================================== DeleteGroups
    def delete_groups(self, respond: Callable[[dict], None], *, group_ids: Iterable[str | None]) -> None:
        """DeleteGroups: each Empty group is deleted with its offsets."""
        results = []
        for group_id in group_ids:
            if group_id is None:
                results.append({"group_id": None, "error_code": int(_E.INVALID_GROUP_ID)})
                continue
            group = self._groups.get(group_id)
            consumer = self._consumer_groups.get(group_id)
            if self._loading and self._is_loading(group_id):
                code = int(_E.COORDINATOR_LOAD_IN_PROGRESS)
            elif consumer is not None:
                if consumer.members:
                    code = int(_E.NON_EMPTY_GROUP)
                else:
                    self._delete_consumer_group(consumer, self._clock(), "delete_groups")
                    code = _NONE
            elif group is None or group.state == DEAD:
                code = int(_E.GROUP_ID_NOT_FOUND)
            elif group.state != EMPTY:
                code = int(_E.NON_EMPTY_GROUP)
            else:
                self._delete_group(group, self._clock(), "delete_groups")
                code = _NONE
            results.append({"group_id": group_id, "error_code": code})
        respond({"throttle_time_ms": 0, "results": results})

    def _delete_group(self, group: ClassicGroup, now: int, reason: str) -> None:
        offsets = group.offset_count()
        if self._persist:
            records = [(_st.OffsetCommitKey(group.group_id, t, p), None) for t, p, _ in group.iter_offsets()]
            records.append((_st.GroupMetadataKey(group.group_id), None))
            self._append(group.group_id, records)
        group.offsets.clear()
        self.timers.cancel(("join", group.group_id))
        self.timers.cancel(("sync", group.group_id))
        for member_id in group.pending_join_members:
            self._cancel_heartbeat(group.group_id, member_id)
        group.pending_join_members.clear()
        self._transition(group, DEAD, now, reason)
        del self._groups[group.group_id]
        self._event(group, "group.deleted", now, {"reason": reason, "offsets": offsets})

    def _delete_consumer_group(self, group: ConsumerGroup, now: int, reason: str) -> None:
        offsets = group.offset_count()
        if self._persist:
            records = [(_st.OffsetCommitKey(group.group_id, t, p), None)
                       for t, parts in group.offsets.items() for p in parts]
            self._append(group.group_id, records)
        self._tombstone_consumer_group(group)
        group.offsets.clear()
        del self._consumer_groups[group.group_id]
        group.state = DEAD
        self.event_consumer(group, "group.deleted", now, {"reason": reason, "offsets": offsets})

    # ==================================================================== offsets (offsets.py)
    def _offset_tombstones(self, group_id: str, pairs) -> None:
        self.offsets._offset_tombstones(group_id, pairs)

    def _schedule_offset_expiration(self) -> None:
        self.timers.schedule(("offsets-expiry",), self._clock() + self.offsets.offsets_retention_check_interval_ms,
                             self._on_offset_expiration_timer)

    @_entry
    def _on_offset_expiration_timer(self) -> None:
        try:
            self.offsets.cleanup_group_metadata()
        finally:
            self._schedule_offset_expiration()
