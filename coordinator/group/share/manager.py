"""The share groups of a coordinator (KIP-932): ShareGroupHeartbeat and ShareGroupDescribe, the
session timers of their members, their share-partition state metadata (and, in :mod:`.offsets`,
DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets).

After Kafka 4.x's ``GroupMetadataManager`` (``shareGroupHeartbeat``, ``shareGroupLeave``,
``shareGroupFenceMember``, ``maybeUpdateTargetAssignment``, ``maybeReconcile``,
``subscribedTopicsChangeMap``, ``initializeShareGroupState``, ``maybeCleanupShareGroupState``,
``shareGroupDescribe``) and ``GroupCoordinatorService`` (request validation, the persister calls).
The runtime (:mod:`..runtime`) routes to it; the model is :mod:`.group`, the records :mod:`.records`,
the assignor :mod:`.assignor`. Each step of an operation makes its records and the group changes only
by replaying them (:meth:`_emit`).

A share group assigns only the partitions whose share-partition state is initialized. A heartbeat
that finds subscribed partitions neither initialized nor being initialized writes them as
initializing; once the heartbeat is written, their state is initialized (Kafka: the share
coordinator's InitializeShareGroupState, through its persister, with the group epoch as state epoch
and start offset -1; here :attr:`ShareGroupManager.persister`, which the share-partition side
provides) and a second operation writes them as initialized. So, as on Kafka, a member joining gets
an empty assignment, and the partitions at its next heartbeat (which finds initialized partitions
not yet assigned and bumps the group epoch for them).

Which Kafka release each behaviour follows: the emulated one (``groupcoord.kafka.version``). Kafka
3.9 has no share groups; 4.1 has them off unless enabled (``share.version=1``, or
``group.share.enable``); 4.2 and 4.3 on unless ``share.version=0``. From 4.2: the assignor's balanced builders (4.1 hashes member
ids), a member's partitions filtered by its subscription and taken again when it changes it. From
4.3: a new group at epoch 1, the assignment interval (KIP-1263), the delivery count and record lock
group configs.

Timer keys: ``("sg-session", group, member)``.
"""
from __future__ import annotations

import uuid
from dataclasses import replace
from functools import partial
from typing import Callable, Iterable, Protocol

import structlog

from groupcoord.protocol.errors import ErrorCode

from ...releases import at_least
from ..assignors.spec import GroupSpec, MemberSpec, PartitionAssignorError
from ..classic.requests import join_error, sync_error
from ..context import GroupContext, entry
from . import records, view
from .assignor import NAME as ASSIGNOR_NAME, assign, assign_4_1
from .configs import ASSIGNMENT_INTERVAL, HEARTBEAT_INTERVAL, SESSION_TIMEOUT, define_configs
from .group import (DEAD, JOIN_EPOCH, LEAVE_EPOCH, STATES, FencedMemberEpoch, InitMapValue, ShareGroup,
                    ShareGroupMember, assignment_response, check_member_epoch, reconcile)
from .offsets import ShareGroupOffsets
from .records import metadata_hash
from .requests import ShareGroupHeartbeatRequest, heartbeat_error

_E = ErrorCode
_log = structlog.get_logger("groupcoord.group")

#: the name a topic the metadata does not know gets in the state metadata (Kafka's)
UNKNOWN_TOPIC_NAME = "<UNKNOWN>"


class HeartbeatError(Exception):
    """A heartbeat refused with ``code`` and Kafka's message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


class SharePartitionStates(Protocol):
    """Where the share-partition states of the share groups live (Kafka's share coordinator, which
    the group coordinator reaches through its ``Persister``): the share-partition side provides it.
    Each call answers an error code, 0 when it succeeded."""

    def initialize(self, group_id: str, state_epoch: int, partitions: dict, start_offsets: dict | None = None,
                   *, complete_count_known: bool = False) -> int:
        """``initializeState``: the partitions ({topic id: partitions}) start at state epoch
        ``state_epoch`` with start offset -1 (the leader computes it from share.auto.offset.reset), or
        the one ``start_offsets`` ({topic id: {partition: start offset}}, AlterShareGroupOffsets) gives;
        ``complete_count_known``: such a start offset comes with delivery complete count 0 (Kafka 4.3)."""
        ...

    def delete(self, group_id: str, partitions: dict) -> int:
        """``deleteState``: the group's state of these partitions ({topic id: partitions}) goes."""
        ...

    def read(self, key: tuple):
        """``readSummary`` of one share-partition ((group id, topic id, partition)): its kept state
        (start_offset, leader_epoch, delivery_complete_count), None when nothing is kept."""
        ...


class NoSharePartitionStates:
    """Share-partition states that need nothing done (until the share-partition side plugs in its
    own): every call succeeds."""

    def initialize(self, group_id: str, state_epoch: int, partitions: dict, start_offsets: dict | None = None,
                   *, complete_count_known: bool = False) -> int:
        return 0

    def delete(self, group_id: str, partitions: dict) -> int:
        return 0

    def read(self, key: tuple):
        return None


def share_version(config) -> int:
    """The share.version feature's finalized level: the ``share.version`` setting, else the release's
    (0 at Kafka 4.1, 1 from 4.2; 3.9 has no such feature: 0)."""
    release = str(config["groupcoord.kafka.version"])
    level = int(config["share.version"])
    if not at_least(release, "4.1"):
        return 0
    if level >= 0:
        return level
    return 1 if at_least(release, "4.2") else 0


def enabled(config) -> bool:
    """Whether share groups are served (KafkaApis.isShareGroupProtocolEnabled): share.version 1, or on
    Kafka 4.1 and 4.2 ``group.share.enable``; never on 3.9."""
    release = str(config["groupcoord.kafka.version"])
    if not at_least(release, "4.1"):
        return False
    return share_version(config) >= 1 or (not at_least(release, "4.3") and bool(config["group.share.enable"]))


class ShareGroupManager(ShareGroupOffsets):
    """The share groups of a coordinator (``ctx``: :class:`~..context.GroupContext`, whose registry
    holds them beside the groups of other types).

    ``image``: the metadata image (the cluster's topics: ``topics`` by name, ``topics_by_id``), set
    by the service; :meth:`topics_changed` tells of its changes. ``persister``: the share-partition
    states (:class:`SharePartitionStates`)."""

    type = "share"
    states = STATES         # (what the metrics count groups by)
    view = view             # the admin API's view of its groups
    #: a JoinGroup to an empty share group does not make it a classic group (Kafka answers
    #: INCONSISTENT_GROUP_PROTOCOL, empty or not)
    gives_way = False

    def __init__(self, ctx: GroupContext):
        cfg = ctx.config
        release = ctx.release
        self.ctx = ctx
        self.timers = ctx.timers
        self._groups = ctx.groups
        self.enabled = enabled(cfg)
        self.configs = ctx.group_configs
        if at_least(release, "4.1"):          # (Kafka 3.9 has no share groups, nor group configs)
            define_configs(ctx.group_configs, cfg, release)
        self.max_size = int(cfg["group.share.max.size"])
        self.assignor_name = ASSIGNOR_NAME       # (group.share.assignors: exactly one, simple, as config.py checks)
        self._assign = assign if at_least(release, "4.2") else assign_4_1
        self.new_groups_at_epoch_1 = at_least(release, "4.3")            # KAFKA-20268
        self.assignment_interval = at_least(release, "4.3")              # KIP-1263
        self.subscription_aware = at_least(release, "4.2")               # ShareGroupAssignmentBuilder
        self.rejoin_at_epoch_0 = at_least(release, "4.2")                # KAFKA-19233
        # Kafka 4.2's GroupCoordinatorConfig.shareGroupInitializeRetryIntervalMs (internal, 30 s); 4.1:
        # twice offsets.commit.timeout.ms (5 s)
        self.initialize_retry_interval_ms = 30_000 if at_least(release, "4.2") else 10_000
        self.persister: SharePartitionStates = NoSharePartitionStates()
        #: the records of the operation under way: each replayed as it is made, all appended when the
        #: operation ends
        self._pending: list = []
        for kind in records.KINDS:
            ctx.replayers[kind] = self.replay
        self.image = None

    # ---- the metadata image -----------------------------------------------------------
    @property
    def image(self):
        return self._image

    @image.setter
    def image(self, image) -> None:
        self._image = image
        self._known_topics = {} if image is None else {name: t.topic_id for name, t in image.topics.items()}

    def _topic(self, name: str):
        return self._image.topics.get(name) if self._image is not None else None

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self._image.topics_by_id.get(topic_id) if self._image is not None else None
        return topic.name if topic is not None else None

    def _subscribed_topics(self, names: Iterable[str]) -> dict[str, tuple[uuid.UUID, int]]:
        """The subscribed topics the metadata has: name -> (topic id, partitions)."""
        out = {}
        for name in names:
            topic = self._topic(name)
            if topic is not None:
                out[name] = (topic.topic_id, topic.partition_count)
        return out

    def _topic_ids(self, names: Iterable[str]) -> frozenset:
        """Kafka's ``TopicIds``: the ids of the names the metadata has."""
        return frozenset(topic_id for topic_id, _ in self._subscribed_topics(names).values())

    def topics_changed(self, names: Iterable[str]) -> None:
        """Topics were created, deleted or grew (Kafka's ``onMetadataUpdate``): the share groups
        subscribing to one compute their metadata hash again at their next heartbeat; a deleted topic
        leaves the share-partition state metadata of every group (``maybeCleanupShareGroupState``)."""
        changed = set(names)
        topics = self._image.topics if self._image is not None else {}
        deleted = set()
        for name in changed:
            topic = topics.get(name)
            known = self._known_topics.get(name)
            if known is not None and (topic is None or topic.topic_id != known):
                deleted.add(known)
            if topic is None:
                self._known_topics.pop(name, None)
            else:
                self._known_topics[name] = topic.topic_id
        for group in self.groups():
            if changed & group.subscribed_topic_names():
                group.metadata_refresh = True
        if deleted:
            self._forget_deleted_topics(deleted)

    @entry
    def _forget_deleted_topics(self, deleted: set) -> None:
        for group in self.groups():
            if not (deleted & (set(group.initializing) | set(group.initialized) | group.deleting)):
                continue
            self._emit(*records.state_partitions_record(
                group.group_id,
                {t: v for t, v in group.initializing.items() if t not in deleted},
                {t: v for t, v in group.initialized.items() if t not in deleted},
                self._names(group.deleting - deleted)))
            self._flush()

    # ---- the groups ---------------------------------------------------------------------
    def group(self, group_id: str) -> ShareGroup | None:
        group = self._groups.get(group_id)
        return group if group is not None and group.type == "share" else None

    def groups(self) -> list[ShareGroup]:
        return [g for g in self._groups.values() if g.type == "share"]

    def create_group(self, group_id: str, now: int, cause: str) -> ShareGroup:
        """A new, empty share group in the registry, at group and assignment epoch 0, or 1 from Kafka
        4.3 (KAFKA-20268), written nowhere until its first member's records."""
        group = ShareGroup(group_id, now)
        group.metadata_hash = 0
        if self.new_groups_at_epoch_1:
            group.group_epoch = group.assignment_epoch = 1
        self._groups[group_id] = group
        self.ctx.event(group, "group.created", now, {"protocol_type": "share", "cause": cause})
        return group

    def loaded(self, group: ShareGroup, now: int) -> bool:
        """A group its records rebuilt at load (Kafka's replay, then ``onLoaded``): its members in
        member id order, its state, its members' session timers; its metadata hash is computed again
        at the next heartbeat (Kafka's refresh deadline starts expired). False, and nothing done, for
        a group without its epoch record (one deleted part way), unless it has share-partition state
        metadata and no members: one an AlterShareGroupOffsets brought (Kafka's replay of the state
        metadata record makes the group), at epoch 0, 1 from Kafka 4.3."""
        if group.metadata_hash is None:
            if not group.state_metadata or group.members:
                return False
            group.metadata_hash = 0
            if self.new_groups_at_epoch_1:
                group.group_epoch = max(group.group_epoch, 1)
                group.assignment_epoch = max(group.assignment_epoch, 1)
        group.members = dict(sorted(group.members.items()))
        group.state = group.compute_state()
        group.metadata_refresh = True
        for member_id in group.members:
            self._schedule_session_timeout(group.group_id, member_id, now)
        return True

    def delete_error(self, group: ShareGroup) -> int | None:
        """Before an empty share group is deleted (``sharePartitionDeleteRequests``): its
        initialized and initializing topics move to deleting (one record), and their share-partition
        state is deleted; an error keeps the group (DeleteGroups answers it for the group)."""
        if not (group.initializing or group.initialized or group.deleting):
            return None              # (no share-partition state to delete)
        candidates = _combine(group.initialized, group.initializing)
        for topic_id in group.deleting:        # a deletion that did not complete is retried
            topic = self._image.topics_by_id.get(topic_id) if self._image is not None else None
            if topic is not None:
                candidates = _combine(candidates, {topic_id: InitMapValue(
                    topic.name, frozenset(range(topic.partition_count)), -1)})
        self._emit(*records.state_partitions_record(group.group_id, {}, {},
                                                    {t: v.name for t, v in candidates.items()}))
        self._flush()
        if not candidates:
            return None
        return self.persister.delete(group.group_id, {t: v.partitions for t, v in candidates.items()}) or None

    def delete(self, group: ShareGroup, now: int, reason: str) -> list:
        """The empty group is deleted: it goes Dead; its tombstones."""
        group.state = DEAD
        return records.tombstones(group)

    def retire(self, group: ShareGroup) -> list:
        """The group gives way to a group of another type (never, as Kafka: kept for the runtime's
        seam): its tombstones."""
        pending, self._pending = self._pending, []
        return pending + records.tombstones(group)

    def on_unloaded(self, group: ShareGroup) -> None:
        """The group's partition moved to another coordinator: nothing of a share group waits on
        this one."""

    # ---- records ------------------------------------------------------------------------
    def replay(self, key, value) -> None:
        """Apply one of a share group's records (:func:`.records.replay`), live and at load."""
        other = self._groups.get(key.group)
        if other is not None and other.type != "share" and self.ctx.load_problems is not None:
            self.ctx.load_displaced.setdefault(key.group, other)     # (a damaged log: both types live)
        records.replay(self._groups, key, value, self.ctx.clock())

    def _emit(self, key, value) -> None:
        """One record of the operation under way: replayed now, appended when the operation ends."""
        records.replay(self._groups, key, value, self.ctx.clock())
        self._pending.append((key, value))

    def _flush(self) -> None:
        """The operation ended: append its records (all of one group)."""
        pending, self._pending = self._pending, []
        if pending:
            self.ctx.append(pending[0][0].group, pending)

    @entry
    def timer(self, fn: Callable, group_id: str, *args) -> None:
        """A timer of a share group fired: ``fn(group_id, *args)``, then what it changed is written."""
        try:
            fn(group_id, *args)
        finally:
            self._flush()

    # ---- the classic protocol's requests to a share group ------------------------------
    def join_group(self, respond, req, group: ShareGroup) -> None:
        """``classicGroupJoin``: a share group is no classic group."""
        self.ctx.reply(respond, join_error("", _E.INCONSISTENT_GROUP_PROTOCOL))

    def sync_group(self, respond, req, group: ShareGroup) -> None:
        self.ctx.reply(respond, sync_error(_E.UNKNOWN_MEMBER_ID))

    def heartbeat_error(self, req, group: ShareGroup) -> int:
        return int(_E.UNKNOWN_MEMBER_ID)

    def leave(self, group: ShareGroup, group_id: str, idents: list, initiator: str) -> dict:
        """``classicGroupLeave``: "Group G not found." (UNKNOWN_MEMBER_ID for the whole request)."""
        return {"throttle_time_ms": 0, "error_code": int(_E.UNKNOWN_MEMBER_ID), "members": []}

    # ---- ShareGroupHeartbeat ----------------------------------------------------------
    def heartbeat(self, req: ShareGroupHeartbeatRequest) -> dict:
        """A heartbeat the API layer validated (:meth:`ShareGroupHeartbeatRequest.error`): its
        response. The share-partition states it asks to initialize are initialized after it."""
        if self.ctx.is_loading(req.group_id):
            return heartbeat_error(_E.COORDINATOR_LOAD_IN_PROGRESS)
        to_initialize = None
        try:
            if req.member_epoch == LEAVE_EPOCH:
                response = self._leave(req)
            else:
                response, to_initialize = self._heartbeat(req)
        except HeartbeatError as e:
            response = heartbeat_error(e.code, e.message)
        finally:
            self._flush()
        if to_initialize is not None:
            self._initialize(*to_initialize)
        return response

    def _group(self, group_id: str, create: bool, now: int) -> ShareGroup:
        """``getOrMaybeCreateShareGroup``."""
        group = self._groups.get(group_id)
        if group is None or (group.type != "share" and group.state == "Dead"):
            if not create:
                raise HeartbeatError(_E.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            return self.create_group(group_id, now, "share_group_heartbeat")
        if group.type != "share":
            raise HeartbeatError(_E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        return group

    def _heartbeat(self, req: ShareGroupHeartbeatRequest) -> tuple[dict, tuple | None]:
        now = self.ctx.clock()
        epoch = req.member_epoch
        joining = epoch == JOIN_EPOCH
        group = self._group(req.group_id, joining, now)
        group_id, member_id = group.group_id, req.member_id
        if len(group.members) >= self.max_size and (not member_id or member_id not in group.members):
            raise HeartbeatError(_E.GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of "
                                 f"{self.max_size} members.")
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            member = ShareGroupMember(member_id)
        try:
            check_member_epoch(member, epoch, self.rejoin_at_epoch_0)
        except FencedMemberEpoch as e:
            raise HeartbeatError(_E.FENCED_MEMBER_EPOCH, str(e)) from None
        new_member = member_id not in group.members

        # 1. the member's metadata; a changed subscription bumps the group epoch
        updated = replace(
            member, rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None else member.subscribed_topic_names),
            client_id=req.client_id, client_host=req.client_host)
        bump = None          # why the group epoch goes up, if it does
        if updated != member:
            self._emit(*records.member_record(group_id, updated))
            if updated.subscribed_topic_names != member.subscribed_topic_names:
                bump = "member_joined" if new_member else "subscription_changed"
        group_epoch = group.group_epoch
        # initialized partitions not in the target yet (Kafka 4.3: only while the target is up to date)
        if bump is None and (not self.assignment_interval or group.assignment_epoch >= group_epoch) and \
                self._initialized_assignment_pending(group):
            bump = "assignment_pending"
        if bump is not None or group.metadata_refresh:
            digest = metadata_hash(self._subscribed_topics(group.subscribed_topic_names()))
            if bump is None and digest != group.metadata_hash:
                bump = "metadata_changed"
            if bump is not None:
                group_epoch += 1
                self._emit(*records.epoch_record(group_id, group_epoch, digest))
                self.ctx.event(group, "share.group_epoch_bumped", now, {"member": member_id, "reason": bump})
            group.metadata_refresh = False
        if new_member:
            self.ctx.event(group, "share.member_joined", now, {
                "member": member_id, "client_id": req.client_id, "client_host": req.client_host,
                "subscribed_topics": list(updated.subscribed_topic_names)})

        # 2. the target assignment, when the group epoch is ahead of it (and, Kafka 4.3, the
        #    assignment interval has passed)
        target_epoch, target = group.assignment_epoch, group.target.get(member_id, {})
        if group.assignment_epoch < group_epoch and self._target_due(group, now):
            target = self._update_target(group, group_epoch, member_id, now)
            target_epoch = group_epoch

        # 3. the member goes to the target (no revocation in a share group)
        subscribed = self._topic_ids(updated.subscribed_topic_names) if self.subscription_aware else None
        reconciled = reconcile(updated, target_epoch, target, subscribed,
                               bump is not None and self.subscription_aware)
        if reconciled != updated:
            self._emit(*records.current_record(group_id, reconciled))
        self.update_state(group, now)
        self._schedule_session_timeout(group_id, member_id, now)

        response = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
                    "member_epoch": reconciled.member_epoch,
                    "heartbeat_interval_ms": self.configs.get(group_id, HEARTBEAT_INTERVAL), "assignment": None}
        # the assignment: to a (re)joining member, a full request (SubscribedTopicNames set), or a change
        if joining or req.subscribed_topic_names is not None or member.assigned != reconciled.assigned:
            response["assignment"] = assignment_response(reconciled.assigned)
        return response, self._initialization(group, group_epoch, now)

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """``initializedAssignmentPending``: some initialized partition of a subscribed topic is not
        in the target assignment (the target is computed again for it)."""
        if not group.members or not group.initialized:
            return False
        names = group.subscribed_topic_names()
        if not names:
            return False
        assigned: dict[uuid.UUID, set] = {}
        for target in group.target.values():
            for topic_id, ps in target.items():
                assigned.setdefault(topic_id, set()).update(ps)
        return any(value.name in names and assigned.get(topic_id) != value.partitions
                   for topic_id, value in group.initialized.items())

    def _target_due(self, group: ShareGroup, now: int) -> bool:
        """Kafka 4.3's ``canComputeNextTargetAssignment``: the group's assignment interval has passed
        since the last target (no previous time, or an interval of 0: at once); before 4.3, always."""
        if not self.assignment_interval:
            return True
        last = group.assignment_timestamp
        interval = self.configs.get(group.group_id, ASSIGNMENT_INTERVAL)
        return last == 0 or interval == 0 or now >= last + interval

    def _update_target(self, group: ShareGroup, group_epoch: int, member_id: str, now: int) -> dict:
        """``maybeUpdateTargetAssignment``: the assignor over every member and the initialized
        partitions; the member's new target."""
        topics = {}
        members = {}
        for m in group.members.values():
            subscribed = self._subscribed_topics(m.subscribed_topic_names)
            topics.update(subscribed.values())
            members[m.member_id] = MemberSpec(m.rack_id, None, frozenset(t for t, _ in subscribed.values()),
                                              group.target.get(m.member_id, {}))
        try:
            result = self._assign(GroupSpec(members, group.homogeneous()), topics, group.initialized_partitions())
        except Exception as e:       # PartitionAssignorError, or a failure of ours: the heartbeat fails
            kind = "" if isinstance(e, PartitionAssignorError) else f"{type(e).__name__}: "
            raise HeartbeatError(_E.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch "
                                 f"{group_epoch}: {kind}{e}") from None
        for mid in members:          # (a member the assignor left out has an empty target, written once)
            target = {t: frozenset(ps) for t, ps in result.get(mid, {}).items() if ps}
            if group.target.get(mid) != target:
                self._emit(*records.target_record(group.group_id, mid, target))
        self._emit(*records.target_epoch_record(group.group_id, group_epoch, now if self.assignment_interval else 0))
        return group.target.get(member_id, {})

    # ---- the share-partition state metadata --------------------------------------------
    def _initialization(self, group: ShareGroup, group_epoch: int, now: int) -> tuple | None:
        """``maybeCreateInitializeShareGroupStateRequest``: the subscribed partitions neither
        initialized nor initializing (since less than the retry interval) are written as
        initializing; (group id, state epoch, them) to initialize once the heartbeat is written."""
        names = group.subscribed_topic_names()
        if not names or self._image is None or not self._image.topics:
            return None
        fresh = {t: v for t, v in group.initializing.items() if now - v.timestamp < self.initialize_retry_interval_ms}
        already = _combine(group.initialized, fresh)
        wanted: dict[uuid.UUID, InitMapValue] = {}
        for name in sorted(names):
            topic = self._topic(name)
            if topic is None:
                continue
            have = already[topic.topic_id].partitions if topic.topic_id in already else frozenset()
            if not have or len(have) < topic.partition_count:
                wanted[topic.topic_id] = InitMapValue(name, frozenset(range(topic.partition_count)) - have, now)
        if not wanted:
            return None
        deleting = set(group.deleting) - set(wanted)      # initializing again: no longer deleting
        self._emit(*records.state_partitions_record(group.group_id, _combine(group.initializing, wanted),
                                                    dict(group.initialized), self._names(deleting)))
        return group.group_id, group_epoch, wanted

    @entry
    def _initialize(self, group_id: str, state_epoch: int, wanted: dict) -> None:
        """The share-partition states of ``wanted`` are initialized (the persister's answer), then
        written as initialized (``initializeShareGroupState``); or, when it failed, no longer as
        initializing (``uninitializeShareGroupState``)."""
        partitions = {t: v.partitions for t, v in wanted.items()}
        error = self.persister.initialize(group_id, state_epoch, partitions)
        group = self.group(group_id)
        if group is None:
            return
        try:
            if error:
                _log.warning("share group state not initialized", group=group_id, error=ErrorCode(error).name)
                self._uninitialize(group, partitions)
            else:
                self._initialized(group, partitions)
        finally:
            self._flush()

    def _initialized(self, group: ShareGroup, partitions: dict) -> None:
        now = self.ctx.clock()
        enriched = {t: InitMapValue(self._topic_name(t) or UNKNOWN_TOPIC_NAME, ps, now) for t, ps in partitions.items()}
        initializing = {}
        for topic_id, value in group.initializing.items():
            if topic_id not in partitions:          # (kept as it is, even without partitions)
                initializing[topic_id] = value
                continue
            left = value.partitions - partitions[topic_id]
            if left:
                initializing[topic_id] = value._replace(partitions=left)
        self._emit(*records.state_partitions_record(group.group_id, initializing,
                                                    _combine(group.initialized, enriched), self._names(group.deleting)))

    def _uninitialize(self, group: ShareGroup, partitions: dict) -> None:
        if not group.initializing or not partitions:
            return
        initializing = {}
        for topic_id, value in group.initializing.items():
            left = value.partitions - partitions.get(topic_id, frozenset())
            if left:
                initializing[topic_id] = value._replace(partitions=left)
        self._emit(*records.state_partitions_record(group.group_id, initializing, dict(group.initialized),
                                                    self._names(group.deleting)))

    def _names(self, topic_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
        """``attachTopicName``: topic id -> its name, or "<UNKNOWN>"."""
        return {t: self._topic_name(t) or UNKNOWN_TOPIC_NAME for t in topic_ids}

    # ---- leaving and fencing -----------------------------------------------------------
    def _leave(self, req: ShareGroupHeartbeatRequest) -> dict:
        """``shareGroupLeave``: epoch -1 removes the member; its MemberEpoch -1 echoed."""
        group = self.group(req.group_id)
        if group is None:
            message = (f"Group {req.group_id} is not a share group." if req.group_id in self._groups
                       else f"Group {req.group_id} not found.")
            raise HeartbeatError(_E.GROUP_ID_NOT_FOUND, message)
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                       f"{group.group_id}.")
        self._fence(group, member, self.ctx.clock(), "share.member_left",
                    {"member": member.member_id, "initiator": "member"})
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": req.member_id,
                "member_epoch": req.member_epoch, "heartbeat_interval_ms": 0, "assignment": None}

    def _fence(self, group: ShareGroup, member: ShareGroupMember, now: int, event: str, fields: dict) -> None:
        """``shareGroupFenceMember``: the member's records go, and the group epoch is bumped with the
        metadata hash of what the others subscribe to."""
        for key, value in records.member_tombstones(group.group_id, member.member_id):
            self._emit(key, value)
        digest = metadata_hash(self._subscribed_topics(group.subscribed_topic_names()))
        self._emit(*records.epoch_record(group.group_id, group.group_epoch + 1, digest))
        self.timers.cancel(("sg-session", group.group_id, member.member_id))
        reason = "member_left" if event == "share.member_left" else "member_fenced"
        self.ctx.event(group, "share.group_epoch_bumped", now, {"member": member.member_id, "reason": reason})
        self.ctx.event(group, event, now, fields)
        self.update_state(group, now)

    def _session_timeout(self, group_id: str) -> int:
        return self.configs.get(group_id, SESSION_TIMEOUT)

    def _schedule_session_timeout(self, group_id: str, member_id: str, now: int) -> None:
        """The member's session timer: share.session.timeout.ms of the group."""
        self.timers.schedule(("sg-session", group_id, member_id), now + self._session_timeout(group_id),
                             partial(self.timer, self._on_session_timeout, group_id, member_id))

    def expire_member(self, group_id: str, member_id: str) -> None:
        """The member's session ends now, exactly as its session timer would (the admin API's and
        the faults' ``expire_member``)."""
        self.timer(self._on_session_timeout, group_id, member_id)

    def _on_session_timeout(self, group_id: str, member_id: str) -> None:
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return
        self._fence(group, group.members[member_id], self.ctx.clock(), "share.member_fenced",
                    {"member": member_id, "reason": "session_timeout", "timeout_ms": self._session_timeout(group_id)})

    def update_state(self, group: ShareGroup, now: int) -> None:
        state = group.compute_state()
        if state != group.state:
            previous, group.state = group.state, state
            self.ctx.event(group, "group.state_change", now, {
                "state_from": previous, "state_to": state, "duration_ms": now - group.state_timestamp,
                "reason": None})
            group.state_timestamp = now

    # ---- ShareGroupDescribe -------------------------------------------------------------
    def describe(self, group_id: str) -> dict:
        """ShareGroupDescribe's entry of one group (Kafka's ``shareGroupDescribe``)."""
        if self.ctx.is_loading(group_id):
            return {"error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "group_id": group_id}
        group = self.group(group_id)
        if group is None or group.state == DEAD:
            message = (f"Group {group_id} is not a share group." if group_id in self._groups and group is None
                       else f"Group {group_id} not found.")
            return {"error_code": int(_E.GROUP_ID_NOT_FOUND), "error_message": message, "group_id": group_id}
        return group.as_described_group(self.assignor_name, self._topic_name)


def _combine(initialized: dict, initializing: dict) -> dict:
    """``combineInitMaps``: both maps' partitions per topic; the name and time of ``initializing``
    where it has the topic."""
    out = dict(initialized)
    for topic_id, value in initializing.items():
        old = out.get(topic_id)
        out[topic_id] = value if old is None else value._replace(partitions=old.partitions | value.partitions)
    return out
