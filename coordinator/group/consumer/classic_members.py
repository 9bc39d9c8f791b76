"""Members of the classic protocol inside a consumer group, and the online migration between the two
types of group (KIP-848), as Kafka 4.x's ``GroupMetadataManager`` does them:
``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup``, ``classicGroupLeaveToConsumerGroup``,
``convertToConsumerGroup`` (``ConsumerGroup.fromClassicGroup``), ``convertToClassicGroup``
(``ClassicGroup.fromConsumerGroup``) and their validations.

A classic member in a consumer group is a :class:`~.consumer.ConsumerGroupMember` with
:class:`~.consumer.ClassicMemberMetadata`: its JoinGroup is the consumer group's heartbeat step
(subscription and owned partitions read from its ConsumerProtocolSubscription), answered at once
with its member epoch as the generation and no leader; its SyncGroup returns what it owns now; its
Heartbeat answers REBALANCE_IN_PROGRESS while it has a step to make, so an eager or cooperative
client rejoins and moves one step at a time. A partition still goes to its new owner only once the
old one released it.

Upgrade: the first ConsumerGroupHeartbeat (epoch 0) to a classic group with members converts it,
when ``group.consumer.migration.policy`` allows it. Downgrade: when the last member of the consumer
protocol leaves (or is fenced, or a classic static member replaces it), a group of classic members
becomes a classic group again, each with its target assignment, and rebalances.

Timer keys: ``("cg-join", group, member)``, ``("cg-sync", group, member)`` (a classic member must
rejoin, or sync, within its rebalance timeout).
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import replace
from functools import partial

from groupcoord.protocol import consumer as cp
from groupcoord.protocol.errors import DecodeError, ErrorCode

from ...releases import at_least
from ..classic.group import DEAD, STABLE, ClassicGroup, Member
from ..context import leave_initiator
from .group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, MemberState, OwnershipError

_E = ErrorCode
POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class ApiError(Exception):
    """A classic request refused with ``code`` (and Kafka's message); ``member_id``: the one a
    JoinGroup's error response carries."""

    def __init__(self, code: int, message: str | None = None, member_id: str = ""):
        super().__init__(message)
        self.code = int(code)
        self.message = message
        self.member_id = member_id


def new_member_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ClassicMembers:
    """The classic protocol's requests to a consumer group, and the conversions; ``cm`` is the
    :class:`~.manager.ConsumerGroupManager`."""

    def __init__(self, cm):
        self.cm = cm
        self.ctx = cm.ctx
        policy = str(self.ctx.config["group.consumer.migration.policy"]).strip().lower()
        if policy not in POLICIES:
            raise ValueError(f"group.consumer.migration.policy: {policy!r} is not one of {', '.join(POLICIES)}")
        self.upgrade_enabled = policy in ("upgrade", "bidirectional")
        self.downgrade_enabled = policy in ("downgrade", "bidirectional")
        # Kafka 4.3.1 (KAFKA-20640): with migration disabled a classic member may not join a consumer
        # group; before, it joins as any classic member does
        self.refuse_classic_joins = policy == "disabled" and at_least(self.ctx.release, "4.3")
        # Kafka 4.3 (KAFKA-20272): a classic member rejoins once a newer target exists; before, once
        # the group epoch moved past its own
        self.newer_target_only = at_least(self.ctx.release, "4.3")

    # ---- the metadata image ---------------------------------------------------------------
    def _ids_by_name(self, pairs) -> dict:
        """[(topic name, partitions)] -> {topic id: partitions}, topics unknown to the image dropped."""
        out = {}
        image = self.cm.image
        for name, partitions in pairs:
            topic = image.topics.get(name) if image is not None else None
            if topic is not None and partitions:
                out.setdefault(topic.topic_id, set()).update(partitions)
        return out

    def _topic_name(self, topic_id) -> str | None:
        image = self.cm.image
        topic = image.topics_by_id.get(topic_id) if image is not None else None
        return topic.name if topic is not None else None

    def _serialize(self, parts: dict, metadata: bytes) -> bytes:
        """A ConsumerProtocolAssignment of ``parts`` ({topic id: partitions}) in the version of the
        member's subscription (``prepareAssignment``)."""
        try:
            version = cp.decode_subscription(metadata)["version"]
        except DecodeError:
            version = 0
        version = max(0, min(version, cp.ASSIGNMENT.valid[1]))
        topics = []
        for topic_id, ps in parts.items():
            name = self._topic_name(topic_id)
            if name is not None:
                topics.append({"topic": name, "partitions": sorted(ps)})
        topics.sort(key=lambda t: t["topic"])
        return cp.encode_assignment({"assigned_partitions": topics, "user_data": None}, version)

    # ---- JoinGroup ------------------------------------------------------------------------
    def join(self, group: ConsumerGroup, req, now: int) -> dict:
        """``classicGroupJoinToConsumerGroup``: the JoinGroup response (raises :class:`ApiError`)."""
        cm = self.cm
        if self.refuse_classic_joins:
            raise ApiError(_E.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group {group.group_id} with "
                           "the classic protocol because the group migration is disabled.")
        member_id = req.member_id
        unknown = not member_id
        if unknown:
            member_id = new_member_id()
        instance_id = req.group_instance_id
        known = member_id in group.members or (instance_id is not None and group.static_member(instance_id))
        if not known and len(group.members) >= cm.max_size:
            raise ApiError(_E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum capacity of "
                           f"{cm.max_size} members.")
        if not group.supports_classic_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            raise ApiError(_E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if unknown and req.require_known_member_id and instance_id is None:
            raise ApiError(_E.MEMBER_ID_REQUIRED, member_id=member_id)

        replaced = None
        if instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id, joined_ms=now)
        else:
            existing = group.static_member(instance_id)
            if unknown:
                if existing is None:
                    member = group.members.get(member_id) or ConsumerGroupMember(member_id, joined_ms=now)
                else:
                    member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                                     joined_ms=now)
                    replaced = existing.member_id
            else:
                if existing is None:
                    raise ApiError(_E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                if existing.member_id != member_id:
                    raise ApiError(_E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                   f"{instance_id} was fenced by member {existing.member_id}.")
                member = existing
        downgrade = (replaced is not None and group.all_classic_except({replaced}) and self.downgrade_enabled
                     and len(group.members) <= cm.classic_max_size)

        try:
            subscription = cp.decode_subscription(req.protocols[0][1])
        except DecodeError:
            raise ApiError(_E.UNKNOWN_SERVER_ERROR, "Malformed embedded consumer protocol in subscription "
                           "deserialization.") from None
        updated = replace(
            member, instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.get("rack_id") or member.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
            server_assignor=None, subscribed_topic_names=tuple(sorted(set(subscription["topics"]))),
            subscribed_topic_regex=None, client_id=req.client_id, client_host=req.client_host,
            classic=ClassicMemberMetadata(req.session_timeout_ms, tuple(req.protocols)))
        subscription_changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                                or member.subscribed_topic_regex is not None)
        owned = [(t, sorted(ps)) for t, ps in self._ids_by_name(
            (o["topic"], o["partitions"]) for o in subscription.get("owned_partitions") or ()).items()]
        regex_bump, regex_job = False, None
        if member.subscribed_topic_regex is not None:
            regex_bump, regex_job = cm.update_regexes(group, member.subscribed_topic_regex, None, now)
        cm.maybe_bump(group, member, updated, replaced, subscription_changed or regex_bump, now)
        cm.take_place(group, updated, replaced, now)
        if downgrade:
            # the classic group takes the target assignments as they are; stale ones: it rebalances
            rebalance = group.assignment_epoch < group.group_epoch
            if not rebalance:
                updated = cm.reconcile_member(group, updated, owned, subscription_changed, now)
        else:
            if cm.target_due(group, now):
                cm.update_target(group, updated)
            updated = cm.reconcile_member(group, updated, owned, subscription_changed, now)
            cm.update_state(group, now)
            if regex_job is not None:
                cm.resolve_regexes(group, regex_job, now, None)
        cm.timers.cancel(("cg-join", group.group_id, member_id))
        response = {"throttle_time_ms": 0, "error_code": 0, "generation_id": updated.member_epoch,
                    "protocol_type": "consumer", "protocol_name": updated.classic.protocols[0][0], "leader": "",
                    "skip_assignment": False, "member_id": member_id, "members": []}
        if downgrade:
            self.to_classic(group, set(), now, rebalance)
        else:
            cm.schedule_session_timeout(group.group_id, member_id, now, req.session_timeout_ms)
            cm.timers.schedule(("cg-sync", group.group_id, member_id), now + req.rebalance_timeout_ms,
                               partial(cm.timer, self._on_timeout, group.group_id, member_id, "sync_timeout",
                                       req.rebalance_timeout_ms))
        return response

    # ---- SyncGroup, Heartbeat, LeaveGroup ------------------------------------------------
    def _member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise ApiError(_E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise ApiError(_E.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member of "
                               f"group {group.group_id}.")
            if member.member_id != member_id:
                raise ApiError(_E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                               f"was fenced by member {member.member_id}.")
        if member.classic is None:
            raise ApiError(_E.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        return member

    def sync(self, group: ConsumerGroup, req) -> dict:
        """``classicGroupSyncToConsumerGroup``: the member's current assignment; what the request
        carries as assignments is ignored."""
        member = self._member(group, req.member_id, req.group_instance_id)
        if member.member_epoch != req.generation_id:
            raise ApiError(_E.ILLEGAL_GENERATION)
        protocol = member.classic.protocols[0][0]
        if (req.protocol_type is not None and req.protocol_type != "consumer") or \
                (req.protocol_name is not None and req.protocol_name != protocol):
            raise ApiError(_E.INCONSISTENT_GROUP_PROTOCOL)
        now = self.ctx.clock()
        if self._rejoin_epoch(group) > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._schedule_join_timeout(group, member, now)
            raise ApiError(_E.REBALANCE_IN_PROGRESS)
        self.cm.timers.cancel(("cg-sync", group.group_id, member.member_id))
        self.cm.schedule_session_timeout(group.group_id, member.member_id, now, member.classic.session_timeout_ms)
        return {"throttle_time_ms": 0, "error_code": 0, "protocol_type": req.protocol_type,
                "protocol_name": req.protocol_name,
                "assignment": self._serialize(member.assigned, member.classic.protocols[0][1])}

    def _rejoin_epoch(self, group: ConsumerGroup) -> int:
        """The epoch a classic member must have reached not to be told to rejoin."""
        return group.assignment_epoch if self.newer_target_only else group.group_epoch

    def heartbeat(self, group: ConsumerGroup, req) -> int:
        """``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS while the member has a
        step to make (a newer target, partitions to revoke, or partitions now free for it)."""
        member = self._member(group, req.member_id, req.group_instance_id)
        if member.member_epoch != req.generation_id:
            raise ApiError(_E.ILLEGAL_GENERATION)
        now = self.ctx.clock()
        self.cm.schedule_session_timeout(group.group_id, member.member_id, now, member.classic.session_timeout_ms)
        if (member.member_epoch < self._rejoin_epoch(group) or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._schedule_join_timeout(group, member, now)
            return int(_E.REBALANCE_IN_PROGRESS)
        return 0

    def leave(self, group: ConsumerGroup, idents: list, now: int, initiator: str) -> dict:
        """``classicGroupLeaveToConsumerGroup``: every member named leaves, in one step (``initiator``
        "member" or "admin"; one named by its instance id alone is removed by an admin)."""
        results, leaving, initiators = [], [], {}
        for member_id, instance_id, reason in idents:
            error = 0
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    error = int(_E.UNKNOWN_MEMBER_ID)
            else:
                member = group.static_member(instance_id)
                if member is None:
                    error = int(_E.UNKNOWN_MEMBER_ID)
                elif member_id and member.member_id != member_id:
                    error = int(_E.FENCED_INSTANCE_ID)
            if not error and member.member_id not in initiators:
                leaving.append(member)
                initiators[member.member_id] = leave_initiator(member_id, reason, initiator)
            results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": error})
        if leaving:
            self.cm.fence(group, leaving, now, "consumer.member_left",
                           lambda m: {"member": m.member_id, "instance_id": m.instance_id, "static": False,
                                      "initiator": initiators[m.member_id]})
        return {"throttle_time_ms": 0, "error_code": 0, "members": results}

    def _schedule_join_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember, now: int) -> None:
        key = ("cg-join", group.group_id, member.member_id)
        if not self.cm.timers.is_scheduled(key):
            self.cm.timers.schedule(key, now + member.rebalance_timeout_ms, partial(
                self.cm.timer, self._on_timeout, group.group_id, member.member_id, "join_timeout",
                member.rebalance_timeout_ms))

    def _on_timeout(self, group_id: str, member_id: str, reason: str, timeout_ms: int) -> None:
        group = self.cm.group(group_id)
        if group is None or member_id not in group.members:
            return
        member = group.members[member_id]
        self.cm.fence(group, [member], self.ctx.clock(), "consumer.member_fenced",
                       lambda m: {"member": m.member_id, "instance_id": m.instance_id, "reason": reason,
                                  "timeout_ms": timeout_ms})

    # ---- upgrade: a classic group becomes a consumer group -------------------------------
    def convert(self, classic: ClassicGroup, now: int) -> ConsumerGroup:
        """``validateOnlineUpgrade`` and ``ConsumerGroup.fromClassicGroup``: the consumer group the
        classic group becomes, each member at the generation, Stable, owning its last assignment;
        not installed yet (:meth:`install_upgrade`), as Kafka's conversion is only records until the
        heartbeat that asked for it succeeds. Raises :class:`ApiError` (GROUP_ID_NOT_FOUND) when it
        cannot."""
        group_id = classic.group_id
        if not self.upgrade_enabled:
            raise ApiError(_E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                           "because online upgrade is disabled.")
        if classic.protocol_type != "consumer":
            raise ApiError(_E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                           "because the group does not use the consumer embedded protocol.")
        if len(classic.members) > self.cm.max_size:
            raise ApiError(_E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                           "because the group size exceeds the consumer group maximum size.")
        generation = classic.generation_id
        group = ConsumerGroup(group_id, now)
        group.group_epoch = group.assignment_epoch = generation
        try:
            for m in classic.members.values():
                assigned = {}
                if m.assignment:
                    assignment = cp.decode_assignment(m.assignment)
                    if assignment.get("user_data"):
                        raise ApiError(_E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer "
                                       "group because an unsupported custom assignor is in use. Please refer to the "
                                       "documentation or switch to a default assignor before re-attempting the "
                                       "upgrade.")
                    assigned = self._ids_by_name((a["topic"], a["partitions"]) for a in assignment["assigned_partitions"])
                protocol = classic.protocol_name if classic.protocol_name is not None else m.protocols[0][0]
                subscription = cp.decode_subscription(m.metadata(protocol))
                member = ConsumerGroupMember(
                    m.member_id, member_epoch=generation, previous_member_epoch=generation,
                    state=MemberState.STABLE, instance_id=m.group_instance_id, rack_id=subscription.get("rack_id"),
                    client_id=m.client_id, client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                    subscribed_topic_names=tuple(sorted(set(subscription["topics"]))),
                    assigned={t: dict.fromkeys(ps, generation) for t, ps in assigned.items()}, joined_ms=now,
                    classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)))
                group.target[m.member_id] = {t: frozenset(ps) for t, ps in assigned.items()}
                group.update_member(member)
        except (DecodeError, KeyError):
            raise ApiError(_E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                           "because the embedded consumer protocol is malformed.") from None
        except OwnershipError as e:
            raise ApiError(_E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group: "
                           f"{e}.") from None
        group.subscription_metadata = self.cm.subscription_metadata(group.subscribed_topic_names())
        group.state = group.compute_state()
        return group

    def install_upgrade(self, group: ConsumerGroup, now: int) -> None:
        """``convertToConsumerGroup``: the consumer group :meth:`convert` made takes the classic
        group's place (its waiting requests answered REBALANCE_IN_PROGRESS, its timers stopped,
        the tombstone and the new group's records in one append); its members' sessions start."""
        self.ctx.upgrade(self.ctx.group(group.group_id, "classic"), group, now)
        for member in group.members.values():
            self.cm.schedule_session_timeout(group.group_id, member.member_id, now,
                                              member.classic.session_timeout_ms)

    # ---- downgrade: a consumer group of classic members becomes a classic group -----------
    def can_downgrade(self, group: ConsumerGroup, leaving: list) -> bool:
        """``validateOnlineDowngradeWithFencedMembers``: whether the group becomes a classic group as
        these members leave (only classic members stay, the policy allows it, they fit)."""
        ids = {m.member_id for m in leaving}
        remaining = len(group.members) - len(ids & set(group.members))
        return (group.all_classic_except(ids) and remaining > 0 and self.downgrade_enabled
                and remaining <= self.cm.classic_max_size)

    def to_classic(self, group: ConsumerGroup, leaving: set, now: int, rebalance: bool) -> ClassicGroup:
        """``ClassicGroup.fromConsumerGroup``: Stable at the group epoch, every remaining member with
        its target assignment, then a rebalance when asked."""
        classic = ClassicGroup(group.group_id, now)
        classic.generation_id = group.group_epoch
        for m in group.members.values():
            self.cm.cancel_timers(group.group_id, m.member_id)
            if m.member_id in leaving:
                continue
            classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                               m.classic.session_timeout_ms, "consumer", list(m.classic.protocols), joined_ms=now))
        classic.protocol_type = "consumer"
        classic.protocol_name = classic.select_protocol()
        for member in classic.members.values():
            member.assignment = self._serialize(group.target.get(member.member_id, {}),
                                                member.metadata(classic.protocol_name))
        classic.subscribed_topics = classic.compute_subscribed_topics()
        classic.state = STABLE
        classic.previous_state = DEAD
        self.ctx.downgrade(group, classic, now, rebalance)
        return classic

