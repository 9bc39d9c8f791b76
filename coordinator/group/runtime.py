"""The group runtime: Kafka's group coordinator shard, sans-I/O.

:class:`GroupCoordinator` holds one registry of groups of every type (through the
:class:`~.context.GroupContext` it gives each type's manager: never itself), loads them by replaying
their records, and routes each request to the manager of its group's type:

- :mod:`.classic` (``ClassicGroupManager``): the classic protocol's groups;
- :mod:`.consumer` (``ConsumerGroupManager``): KIP-848's consumer groups, including the classic
  protocol's members inside them;
- :mod:`.share` (``ShareGroupManager``): KIP-932's share groups;
- :mod:`.offsets` (``OffsetManager``): every group's committed offsets, by group id.

What is not a type's own is here: ListGroups and DeleteGroups over every type, loading, and the
online migration between the classic and the consumer group types (one operation each, that both
types reach through the context).

Purity: no sockets, no asyncio, no wall clock. Time comes only from ``clock()`` (ms); delays go
through the keyed :class:`~groupcoord.coordinator.timer.Timers`, which the driver advances. Responses
produced while the coordinator is updating its state are queued and delivered when the outermost call
returns (:func:`~.context.entry`), so a ``respond`` callback may call back into the coordinator.

Timer keys: the types' (``("hb", ...)``, ``("join", ...)``, ``("sync", ...)`` of classic groups;
``("cg-session", ...)``, ``("cg-rebalance", ...)``, ``("cg-join", ...)``, ``("cg-sync", ...)`` of consumer
groups; ``("sg-session", ...)`` of share groups) and ``("offsets-expiry",)``.
"""
from __future__ import annotations

import uuid
from typing import Callable, Iterable, Iterator


from groupcoord.protocol.errors import ErrorCode

from .. import storage as _st
from ..config import BrokerConfig
from ..events import default_emit
from ..timer import Timers
from .classic import records as classic_records
from .classic.group import ClassicGroup
from .classic.manager import ClassicGroupManager
from .classic.requests import (
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest, join_error, sync_error,
)
from .consumer.group import ConsumerGroup
from .consumer.manager import ConsumerGroupManager
from .consumer.requests import ConsumerGroupHeartbeatRequest, heartbeat_error as consumer_heartbeat_error
from .context import AUTHORIZED_OPERATIONS_OMITTED, GroupContext, entry
from .offsets import OffsetManager
from .share.manager import ShareGroupManager
from .share.requests import ShareGroupHeartbeatRequest


#: AuthorizedOperations of a group when no authorizer is configured: READ, DELETE, DESCRIBE,
#: DESCRIBE_CONFIGS and ALTER_CONFIGS (AclEntry.supportedOperations(GROUP)).
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)

_NONE = 0
_E = ErrorCode

__all__ = ["AUTHORIZED_OPERATIONS_OMITTED", "GROUP_AUTHORIZED_OPERATIONS", "GroupCoordinator", "HeartbeatRequest",
           "JoinGroupRequest", "LeaveGroupRequest", "SyncGroupRequest", "join_error", "sync_error"]


#: The group types: a type is a package with a manager (its ``type`` the name ListGroups gives it).
GROUP_TYPES = (ClassicGroupManager, ConsumerGroupManager, ShareGroupManager)


def default_member_id_factory(prefix: str) -> str:
    """``<client_id>-<uuid4>`` / ``<group_instance_id>-<uuid4>``."""
    return f"{prefix}-{uuid.uuid4()}"


class GroupCoordinator:
    """Kafka's group coordinator, in virtual time.

    ``config``            BrokerConfig (group.* and offsets.* settings are read once).
    ``timers``            keyed timers the driver advances.
    ``clock``             () -> now in ms.
    ``emit``              receives every structured event (:mod:`.events`); default: structlog.
    ``member_id_factory`` prefix (client id or group instance id) -> new classic member id;
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
        self.store = store if store is not None else _st.MemoryStore()
        ctx = self.ctx = GroupContext(config, timers, clock, emit if emit is not None else default_emit, self.store,
                                      member_id_factory or default_member_id_factory)
        self._groups = ctx.groups
        self.num_offsets_partitions = ctx.num_partitions
        protocols = {p.strip() for p in str(config["group.coordinator.rebalance.protocols"]).split(",")}
        self.consumer_protocol_enabled = "consumer" in protocols
        # the group types, by name (each registers the replay of its records with the context)
        self._types = {manager.type: manager for manager in (t(ctx) for t in GROUP_TYPES)}
        self.classic: ClassicGroupManager = self._types["classic"]
        self.consumer: ConsumerGroupManager = self._types["consumer"]
        self.share: ShareGroupManager = self._types["share"]
        #: the emulated release serves share groups (4.2+; 4.1 with group.share.enable)
        self.share_groups_enabled = self.share.enabled
        self.group_configs = ctx.group_configs
        self.offsets = OffsetManager(ctx, self._simple_group, self.classic.member_committed, self.delete_group)
        self.offsets.emit_commits = emit_offset_commits
        ctx.replayers[_st.OffsetCommitKey.kind] = self.offsets.replay
        ctx.replayers[_st.TxnOffsetCommitKey.kind] = self.offsets.replay_txn_offset
        # (a marker is replayed for the partition whose log holds it: complete_loading, complete_transaction)
        ctx.upgrade = self.upgrade_group
        ctx.downgrade = self.downgrade_group
        ctx.give_way = self._give_way
        ctx.other_heartbeat = self._other_heartbeat
        # the classic protocol's settings the handlers check
        self.min_session_timeout_ms = self.classic.min_session_timeout_ms
        self.max_session_timeout_ms = self.classic.max_session_timeout_ms
        self.group_max_size = self.classic.group_max_size
        # the offset requests are the offset manager's (bound here: no call in between)
        self.offset_commit = self.offsets.offset_commit
        self.commit_offsets = self.offsets.commit_offsets
        self.offset_fetch = self.offsets.offset_fetch
        self.offset_delete = self.offsets.offset_delete
        self.txn_offset_commit = self.offsets.txn_offset_commit
        self.delete_topic_offsets = self.offsets.delete_topic_offsets
        self.cleanup_group_metadata = self.offsets.cleanup_group_metadata
        # (the hot path: Heartbeat goes to the classic manager without a hop here)
        self.heartbeat_error = self.classic.heartbeat_error
        self.offsets.schedule_expiration()

    # ==================================================================== durability
    def partition_of(self, group_id: str) -> int:
        """The offsets-topic partition whose log holds the group."""
        return self.ctx.partition_of(group_id)

    def is_loading(self, group_id: str) -> bool:
        return self.ctx.is_loading(group_id)

    def begin_loading(self, partition: int) -> None:
        """Mark a partition as loading: its groups answer COORDINATOR_LOAD_IN_PROGRESS."""
        self.ctx.loading.add(partition)

    @entry
    def complete_loading(self, partition: int, records) -> int:
        """Rebuild groups and offsets from a partition's records (Kafka's ``loadGroupsAndOffsets``:
        each record replayed in order, by the same replay as live) and open the partition; returns
        how many groups were loaded. Then each group's type finishes its load (Kafka's
        ``onLoaded``): Stable groups come back with their members, whose session timers start now;
        offsets without a group bring a simple classic group."""
        ctx = self.ctx
        try:
            now = self._clock()
            ctx.load_problems = {}
            replayers = dict(ctx.replayers)         # (a marker applies to this partition's groups)
            replayers[_st.TxnMarkerKey.kind] = lambda key, value: self.offsets.replay_marker(partition, key, value)
            for key, value in records:
                replayers[key.kind](key, value)
            loaded = [g for gid, g in self._groups.items() if self.partition_of(gid) == partition]
            for group in loaded:
                if not self._types[group.type].loaded(group, now):     # a group deleted part way
                    displaced = ctx.load_displaced.get(group.group_id)
                    if displaced is not None:          # (as before: the other type's group stays)
                        self._groups[group.group_id] = displaced
                        self._types[displaced.type].loaded(displaced, now)
                    else:
                        del self._groups[group.group_id]
            count = sum(1 for gid in self._groups if self.partition_of(gid) == partition)
            for group_id in self.offsets.group_ids() + self.offsets.pending_group_ids():
                if group_id not in self._groups and self.partition_of(group_id) == partition:
                    self._simple_group(group_id, now, None)
                    count += 1
            return count
        finally:
            ctx.load_problems = None
            ctx.load_displaced = {}
            ctx.loading.discard(partition)

    # ==================================================================== lookup / admin
    def groups(self) -> Iterator:
        """All groups, of every type (a snapshot iterator)."""
        return iter(list(self._groups.values()))

    def get(self, group_id: str):
        """The group of that id, of any type, or None."""
        return self._groups.get(group_id)

    def manager(self, type_name: str):
        """The manager of a group type, by name (what a type's API handlers and the admin API reach)."""
        return self._types[type_name]

    def set_metadata_image(self, image) -> None:
        """The cluster's topics (``topics`` by name, ``topics_by_id``), which the group types read;
        tell each type of their changes with :meth:`topics_changed`."""
        self.ctx.image = image
        for manager in self._types.values():
            manager.image = image

    def topics_changed(self, names) -> None:
        """Topics were created, deleted or grew (Kafka's ``onNewMetadataImage``): each type is told."""
        for manager in self._types.values():
            manager.topics_changed(names)

    def group_types(self) -> list:
        """The group types' managers, in registry order (each has ``type`` and ``states``)."""
        return list(self._types.values())

    def group(self, group_id: str) -> ClassicGroup | None:
        """The classic group of that id, or None."""
        return self.classic.group(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of that id, or None."""
        return self.ctx.group(group_id, "consumer")

    def __len__(self) -> int:
        return len(self._groups)

    def __contains__(self, group_id: str) -> bool:
        return group_id in self._groups

    def clock(self) -> int:
        return self._clock()

    def defer(self, fn: Callable[[], None]) -> None:
        """Run fn once the operation in progress (e.g. the one emitting an event) has finished,
        behind its queued responses, so that nothing re-enters the core mid-operation; at once
        when the core is idle."""
        if self.ctx.depth:
            self.ctx.outbox.append((lambda _response: fn(), None))
        else:
            fn()

    # ==================================================================== the classic protocol
    @entry
    def join_group(self, respond: Callable[[dict], None], req: JoinGroupRequest) -> None:
        """JoinGroup of a request the API layer validated (:meth:`JoinGroupRequest.error`): to the
        classic group of its id (created when none), or as a classic member of a consumer group."""
        group_id = req.group_id
        if self.ctx.is_loading(group_id):
            self.ctx.reply(respond, join_error(req.member_id, _E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        group = self._groups.get(group_id)
        if group is not None and group.type != "classic":
            manager = self._types[group.type]
            if not group.is_empty() or not getattr(manager, "gives_way", True):
                manager.join_group(respond, req, group)
                return
            group = self._give_way(group, "classic", "join_group")
        self.classic.join_group(respond, req, group)

    @entry
    def sync_group(self, respond: Callable[[dict], None], req: SyncGroupRequest) -> None:
        """SyncGroup of a request the API layer validated (:meth:`SyncGroupRequest.error`)."""
        if self.ctx.is_loading(req.group_id):
            self.ctx.reply(respond, sync_error(_E.COORDINATOR_LOAD_IN_PROGRESS))
            return
        group = self._groups.get(req.group_id)
        self._types[group.type if group is not None else "classic"].sync_group(respond, req, group)

    def heartbeat(self, respond: Callable[[dict], None], req: HeartbeatRequest) -> None:
        """Heartbeat of a request the API layer validated (:meth:`HeartbeatRequest.error`)
        (hot path: no events, no queued responses)."""
        respond({"throttle_time_ms": 0, "error_code": self.heartbeat_error(req)})

    def _other_heartbeat(self, req: HeartbeatRequest, group) -> int:
        """A Heartbeat to a group of a type other than classic (the classic manager's hand-back)."""
        return self._types[group.type].heartbeat_error(req, group)

    @entry
    def leave_group(self, respond: Callable[[dict], None], req: LeaveGroupRequest) -> None:
        """LeaveGroup of a request the API layer validated (:meth:`LeaveGroupRequest.error`).
        Response in the v3+ shape."""
        self.ctx.reply(respond, self._leave(req.group_id, req.members, "member"))

    @entry
    def remove_member(self, group_id: str, member_id: str = "", group_instance_id: str | None = None,
                      reason: str | None = None) -> int:
        """Admin removal of one member of a classic group, or of a classic member of a consumer
        group (by member id, or by instance id with member id "").

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
        if self.ctx.is_loading(group_id):
            return {"throttle_time_ms": 0, "error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "members": []}
        group = self._groups.get(group_id)
        return self._types[group.type if group is not None else "classic"].leave(group, group_id, idents, initiator)

    # ==================================================================== DescribeGroups
    def describe_groups(self, respond: Callable[[dict], None], *, group_ids: Iterable[str | None],
                        group_id_not_found: bool = False) -> None:
        """DescribeGroups. ``group_id_not_found`` (request v6+, KIP-1043): a missing group gets
        GROUP_ID_NOT_FOUND and an error message instead of a bare "Dead" entry."""
        respond({"throttle_time_ms": 0,
                 "groups": [self.describe_group(group_id, group_id_not_found) for group_id in group_ids]})

    def describe_group(self, group_id: str | None, group_id_not_found: bool = False) -> dict:
        """DescribeGroups' entry of one group: a classic group's (a group of another type is not one)."""
        if group_id is not None and not self.ctx.is_loading(group_id):
            group = self.classic.group(group_id)
            if group is not None and group.state != "Dead":
                return group.as_described_group()
        entry = {"error_code": _NONE, "error_message": None, "group_id": group_id or "", "group_state": "",
                 "protocol_type": "", "protocol_data": "", "members": [],
                 "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
        if group_id is None:
            entry["error_code"] = int(_E.INVALID_GROUP_ID)
        elif self.ctx.is_loading(group_id):
            entry["error_code"] = int(_E.COORDINATOR_LOAD_IN_PROGRESS)
        else:
            entry["group_state"] = "Dead"
            if group_id_not_found:
                entry["error_code"] = int(_E.GROUP_ID_NOT_FOUND)
                entry["error_message"] = (f"Group {group_id} is not a classic group." if group_id in self._groups
                                          else f"Group {group_id} not found.")
        return entry

    def expire_member(self, group_id: str, member_id: str) -> None:
        """End a member's session now, as its session timer would, whatever it waits for (the
        faults' ``expire_member``; ``member.expired`` of a classic group, whose parked JoinGroup or
        SyncGroup is answered UNKNOWN_MEMBER_ID first; ``consumer.member_fenced`` of a consumer group)."""
        group = self._groups.get(group_id)
        if group is not None:
            self._types[group.type].expire_member(group_id, member_id)

    def on_unloaded(self, partitions: set) -> list:
        """This coordinator gives up these offsets-topic partitions (their leadership moved): each
        group there is told by its type's manager (Kafka's ``onUnloaded``: the classic type answers
        its parked JoinGroup and SyncGroup requests NOT_COORDINATOR). The groups moved."""
        moved = [g for g in self.groups() if self.partition_of(g.group_id) in partitions]
        for group in moved:
            self._types[group.type].on_unloaded(group)
        return moved

    # ==================================================================== the consumer protocol
    @entry
    def consumer_group_heartbeat(self, respond: Callable[[dict], None], req: ConsumerGroupHeartbeatRequest) -> None:
        """ConsumerGroupHeartbeat of a request the API layer validated. A group of a type the consumer
        group does not take over (a share group) is not one (Kafka's ``getOrMaybeCreateConsumerGroup``
        and ``consumerGroup``, whatever the member epoch)."""
        group = self._groups.get(req.group_id)
        if group is not None and group.type not in ("classic", "consumer") and not self.ctx.is_loading(req.group_id):
            self.ctx.reply(respond, consumer_heartbeat_error(_E.GROUP_ID_NOT_FOUND,
                                                             f"Group {req.group_id} is not a consumer group."))
            return
        self.ctx.reply(respond, self.consumer.heartbeat(req))

    # ==================================================================== share groups
    @entry
    def share_group_heartbeat(self, respond: Callable[[dict], None], req: ShareGroupHeartbeatRequest) -> None:
        """ShareGroupHeartbeat of a request the API layer validated."""
        self.ctx.reply(respond, self.share.heartbeat(req))

    # ==================================================================== ListGroups
    def list_groups(self, respond: Callable[[dict], None], *, states_filter: Iterable[str] | None = None,
                    types_filter: Iterable[str] | None = None,
                    group_filter: Callable[[str], bool] | None = None) -> None:
        """ListGroups. Filters are case-insensitive (states are also trimmed, as Kafka does);
        an empty filter does not filter; an unknown type matches nothing.
        ``group_filter``: keep only these group ids (e.g. those this node coordinates)."""
        states = {s.lower().strip() for s in states_filter} if states_filter else None
        types = {t.lower() for t in types_filter} if types_filter else None
        if self.ctx.loading:
            respond({"throttle_time_ms": 0, "error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "groups": []})
            return
        out = []
        for type_name in self._types:           # each type's groups together, in the order they came
            if types is not None and type_name not in types:
                continue
            for group in self._groups.values():
                if group.type != type_name:
                    continue
                if states is not None and group.state.lower() not in states:
                    continue
                if group_filter is not None and not group_filter(group.group_id):
                    continue
                out.append({"group_id": group.group_id, "protocol_type": group.protocol_type or "",
                            "group_state": group.state, "group_type": type_name})
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
            if self.ctx.is_loading(group_id):
                code = int(_E.COORDINATOR_LOAD_IN_PROGRESS)
            elif group is None or group.state == "Dead":
                code = int(_E.GROUP_ID_NOT_FOUND)
            elif not group.is_empty():
                code = int(_E.NON_EMPTY_GROUP)
            else:
                code = self._deletion_error(group) or _NONE
                if not code:
                    self.delete_group(group, self._clock(), "delete_groups")
            results.append({"group_id": group_id, "error_code": code})
        respond({"throttle_time_ms": 0, "results": results})

    def _deletion_error(self, group) -> int | None:
        """What keeps an empty group from being deleted, from its type (optional: a share group whose
        share-partition state could not be deleted keeps the error, as Kafka chains the deletions)."""
        delete_error = getattr(self._types[group.type], "delete_error", None)
        return None if delete_error is None else delete_error(group)

    def delete_group(self, group, now: int, reason: str) -> None:
        """Delete a group and its offsets (DeleteGroups, or the retention sweep): the offsets'
        tombstones and the group's in one append (Kafka's ``deleteAllOffsets`` and
        ``createGroupTombstoneRecords``)."""
        group_id = group.group_id
        offsets = self.offsets.count(group_id)
        records = self.offsets.delete_all(group_id)
        records += self._types[group.type].delete(group, now, reason)
        self.ctx.append(group_id, records)
        del self._groups[group_id]
        self.ctx.event(group, "group.deleted", now, {"reason": reason, "offsets": offsets})

    # ==================================================================== offsets
    @entry
    def complete_transaction(self, offsets_partition: int, producer_id: int, producer_epoch: int,
                             commit: bool, coordinator_epoch: int = 0) -> int:
        """A transaction's marker for an offsets-topic partition (Kafka's
        ``GroupCoordinatorService.completeTransaction``, the transaction coordinator's
        WriteTxnMarkers to ``__consumer_offsets``): the producer's pending transactional offsets
        of the partition's groups become visible (commit) or are dropped (abort); returns an
        error code (NONE 0). See :meth:`.offsets.OffsetManager.complete_transaction`."""
        return self.offsets.complete_transaction(offsets_partition, producer_id, producer_epoch, commit,
                                                 coordinator_epoch)

    def _simple_group(self, group_id: str, now: int, cause: str | None) -> ClassicGroup:
        """The classic group a commit outside any group brings (``cause`` None: at load, silently)."""
        if cause is None:
            group = self._groups[group_id] = ClassicGroup(group_id, now)
            return group
        return self.classic.create_group(group_id, now, cause)

    # ==================================================================== online migration
    def _give_way(self, group, to_type: str, cause: str):
        """An empty group gives way to a new group of another type of its id (a JoinGroup to an
        empty consumer group: a classic group; a ConsumerGroupHeartbeat to an empty classic group: a
        consumer group); its committed offsets stay, they are the group id's."""
        now = self._clock()
        records = self._types[group.type].retire(group)
        self.ctx.append(group.group_id, records)
        del self._groups[group.group_id]
        self.ctx.event(group, "group.deleted", now, {"reason": "converted", "offsets": 0})
        return self._types[to_type].create_group(group.group_id, now, cause)

    def upgrade_group(self, classic: ClassicGroup, group: ConsumerGroup, now: int) -> None:
        """A classic group with members becomes ``group`` (the consumer type's conversion of it):
        the classic record's tombstone and the consumer group's records in one append, as Kafka's
        conversion is one batch of records."""
        self.classic.stop(classic)
        records = [classic_records.group_tombstone(classic.group_id), *self.consumer.creation_records(group)]
        self.ctx.append(group.group_id, records)
        self.ctx.event(classic, "group.deleted", now, {"reason": "converted", "offsets": 0})
        del self._groups[classic.group_id]
        self._groups[group.group_id] = group
        self.ctx.event(group, "group.created", now, {"protocol_type": "consumer", "cause": "upgrade"})

    def downgrade_group(self, group: ConsumerGroup, classic: ClassicGroup, now: int, rebalance: bool) -> None:
        """A consumer group of classic members becomes ``classic``, Stable with its members, whose
        session timers start now: the consumer group's tombstones and the classic record in one
        append; then it rebalances when asked."""
        records = self.consumer.retire(group)
        del self._groups[group.group_id]
        self.ctx.event(group, "group.deleted", now, {"reason": "converted", "offsets": 0})
        self._groups[classic.group_id] = classic
        if self.ctx.persist:
            records.append(classic_records.group_record(classic))
        self.ctx.append(classic.group_id, records)
        self.ctx.event(classic, "group.created", now, {"protocol_type": classic.protocol_type, "cause": "downgrade"})
        self.classic.adopt(classic, now, rebalance)
