"""The consumer groups of a coordinator (KIP-848): ConsumerGroupHeartbeat and
ConsumerGroupDescribe, the session and rebalance timers of their members.

After Kafka 4.x's ``GroupMetadataManager`` (``consumerGroupHeartbeat``, ``consumerGroupLeave``,
``consumerGroupFenceMember``, ``updateTargetAssignment``, ``maybeReconcile``,
``consumerGroupDescribe``) and ``GroupCoordinatorService`` (request validation). The runtime
(:mod:`..runtime`) routes to it; the model is :mod:`.group`, the records :mod:`.records`. Each step of an
operation makes its records and the group changes only by replaying them (:meth:`_emit`).

Which Kafka release each behaviour follows: the emulated one (``groupcoord.kafka.version``; a release
line is its newest patch release: 4.1.2, 4.2.1, 4.3.1). From 4.2: an existing member may rejoin with
epoch 0 (KAFKA-19233); a member's current assignment drops topics it no longer subscribes to at once
(``updateCurrentAssignment``, KAFKA-19431: also when only its regex changed, an unresolved regex
counting as no topic) and a member revoking again keeps its epoch (KAFKA-19974), both in
:class:`.group.Reconciliation`. From 4.3: the group epoch of a new group, the assignment interval,
the assignment epochs of offset commits and describe's pending revocations (``__init__``).

Regex subscriptions (SubscribedTopicRegex, v1+; :mod:`.topic_regex`), after Kafka 4.0's
``maybeUpdateRegularExpressions`` and ``handleRegularExpressionsResult`` with the later changes
named: a regex no member had yet is compiled when a member brings it (INVALID_REGULAR_EXPRESSION,
Kafka's message); a member changing to a regex already resolved bumps the group epoch, to a new one
does not (it waits for the resolution); clearing it bumps (Kafka 4.1.2/4.2, KAFKA-19891). Kafka
resolves in a background job (one per group at a time, at most one per 10 s,
``REGEX_BATCH_REFRESH_MIN_INTERVAL_MS``) that a heartbeat schedules when the group has a regex not
resolved yet, when topics were created since the last resolution, or when
``group.consumer.regex.refresh.interval.ms`` has passed (Kafka 4.1, KAFKA-18961); the job matches
every regex of the group against every topic of the metadata image, drops the topics the heartbeat's
principal may not DESCRIBE, and its result is written as a separate operation: the resolutions, and
a group epoch bump if a regex's topics or the subscription metadata changed. This sans-I/O core
runs that job synchronously with the same conditions, at the end of the heartbeat that schedules
it, after its response is made: as a Kafka job that completes before the next request. So the
heartbeat that brings a new regex is answered without its topics, and the member gets them at its
next heartbeat, at the new group epoch, as on Kafka; no job is ever running when a heartbeat comes,
so Kafka's "one job at a time" never applies. The last member leaving a regex drops its resolution
(Kafka's tombstone); a resolution is kept in ``group.resolved_regexes`` (what Kafka writes as
ConsumerGroupRegularExpression records).

Timer keys: ``("cg-session", group, member)``, ``("cg-rebalance", group, member)``.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Callable, Iterable

from groupcoord.protocol.errors import ErrorCode

import structlog

from ...config import assignor_names
from ..assignors import ASSIGNORS, GroupSpec, MemberSpec, PartitionAssignorError
from ..context import GroupContext, entry
from .classic_members import ApiError, ClassicMembers, new_member_id
from ..classic.requests import join_error, sync_error
from . import records, view
from .configs import ASSIGNMENT_INTERVAL, HEARTBEAT_INTERVAL, SESSION_TIMEOUT, define_configs
from .records import metadata_hash
from .requests import ConsumerGroupHeartbeatRequest, heartbeat_error
from .group import (
    DEAD,
    Reconciliation,
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATES,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    FencedMemberEpoch,
    MemberState,
    ResolvedRegularExpression,
    TopicInfo,
    assignment_response,
    owns_only_assigned,
    reconcile,
)
from ..topic_regex import invalid_regex_message, resolve
from ...releases import at_least

_E = ErrorCode
_log = structlog.get_logger("groupcoord.group")

#: Kafka's ``REGEX_BATCH_REFRESH_MIN_INTERVAL_MS``: a group's regexes are resolved at most once per 10 s.
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000

class HeartbeatError(ApiError):
    """A heartbeat refused with ``code`` (and Kafka's message)."""


class ConsumerGroupManager:
    """The consumer groups of a coordinator (``ctx``: :class:`~..context.GroupContext`, whose registry
    holds them beside the groups of other types).

    ``image``: the metadata image (the cluster's topics: ``topics`` by name, each with
    ``topic_id`` and ``partition_count``), set by the service; :meth:`topics_changed` tells of its
    changes. ``metadata_version`` counts them (Kafka: the image's offset), ``new_topics_version`` is
    the version at which a topic was last created (Kafka's ``lastMetadataImageWithNewTopics``)."""

    type = "consumer"
    states = STATES         # (what the metrics count groups by)
    view = view             # the admin API's view of its groups

    def __init__(self, ctx: GroupContext):
        cfg = ctx.config
        self.ctx = ctx
        self.timers = ctx.timers
        self._groups = ctx.groups
        #: group.max.size: a consumer group of classic members becomes a classic group only within it
        self.classic_max_size = int(cfg["group.max.size"])
        # Kafka's dynamic group configs of a consumer group (GroupConfig), per group; the assignment
        # interval from Kafka 4.3 (KIP-1263: before it, a target is computed at once)
        self.configs = ctx.group_configs
        self.assignment_interval = at_least(ctx.release, "4.3")
        define_configs(ctx.group_configs, cfg, self.assignment_interval)
        self.max_size = int(cfg["group.consumer.max.size"])
        self.assignors = assignor_names(cfg["group.consumer.assignors"])
        unknown = [a for a in self.assignors if a not in ASSIGNORS]
        if unknown or not self.assignors:
            raise ValueError(f"group.consumer.assignors: unknown assignor(s) {unknown}; known: "
                             f"{', '.join(ASSIGNORS)}")
        self.default_assignor = self.assignors[0]
        self.regex_refresh_interval_ms = int(cfg["group.consumer.regex.refresh.interval.ms"])
        #: the records of the operation under way: each replayed as it is made (so the operation's next
        #: steps see it), all appended when the operation ends
        self._pending: list = []
        for kind in records.KINDS:
            ctx.replayers[kind] = self.replay
        release = ctx.release
        self.new_groups_at_epoch_1 = at_least(release, "4.3")             # KAFKA-20268
        self.describe_pending_revocation = at_least(release, "4.3")       # KAFKA-20431
        self.epochs_by_partition = at_least(release, "4.3")               # KIP-1251
        self.rejoin_at_epoch_0 = at_least(release, "4.2")                 # KAFKA-19233
        self.reconciliation = Reconciliation.of(release)                  # KAFKA-19431, KAFKA-19974
        self.metadata_version = 0
        self.new_topics_version = 0
        self.image = None
        self.classic = ClassicMembers(self)

    # ---- the metadata image -----------------------------------------------------------
    @property
    def image(self):
        return self._image

    @image.setter
    def image(self, image) -> None:
        # the topics it has now are not new ones (Kafka's first image)
        self._image = image
        self._known_topics = {} if image is None else {name: t.topic_id for name, t in image.topics.items()}

    def _topic(self, name: str):
        image = self.image
        if image is None:
            return None
        return image.topics.get(name)

    def subscription_metadata(self, names: Iterable[str]) -> dict[str, TopicInfo]:
        out = {}
        for name in sorted(names):
            topic = self._topic(name)
            if topic is not None:
                out[name] = TopicInfo(topic.topic_id, name, topic.partition_count)
        return out

    def _topic_ids(self, group: ConsumerGroup, names: Iterable[str]) -> frozenset:
        meta = group.subscription_metadata
        return frozenset(meta[n].topic_id for n in names if n in meta)

    def topics_changed(self, names: Iterable[str]) -> None:
        """Topics were created, deleted or grew (Kafka's ``onNewMetadataImage``): the groups that
        subscribe to one, by name or through a regex, recompute their subscription metadata at their
        next heartbeat; a created topic (a name new or under a new id) makes the regexes of every group
        due for a resolution at their next heartbeat past the 10 s window (Kafka 4.0)."""
        changed = set(names)
        self.metadata_version += 1
        topics = self._image.topics if self._image is not None else {}
        known = self._known_topics
        for name in changed:
            topic = topics.get(name)
            if topic is None:
                known.pop(name, None)
            elif known.get(name) != topic.topic_id:
                known[name] = topic.topic_id
                self.new_topics_version = self.metadata_version
        for group in self.groups():
            if changed & group.subscribed_topic_names():
                group.metadata_refresh = True

    def loaded(self, group: ConsumerGroup, now: int) -> bool:
        """A group its records rebuilt at load (Kafka's replay, then ``onLoaded``): its members in
        member id order; its subscription metadata from the metadata image of now (when it hashes
        otherwise than the group's epoch record says, a topic changed while the coordinator was
        away: the epoch is bumped, as Kafka's metadata hash does); its regexes due for a resolution
        at the first heartbeat (version -1, as after Kafka's load); its state; its members' timers
        (Kafka's replay arms the session timer of every member and the rebalance timer of those
        revoking). What the log held that no longer fits is written again: a member loaded without
        the partitions another owned (``problems``), a target without its member, a regex no member
        has. False, and nothing done, for a group without its epoch record (one deleted part way)."""
        if group.metadata_hash is None:
            return False
        try:
            self._loaded(group, now)
        finally:
            self._flush()
        return True

    def _loaded(self, group: ConsumerGroup, now: int) -> None:
        group.members = dict(sorted(group.members.items()))
        rewrite = {}
        for member_id, problem in (self.ctx.load_problems or {}).get(group.group_id, ()):
            _log.warning("consumer group record not applied", group=group.group_id, problem=problem)
            rewrite[member_id] = None
        for member_id in rewrite:
            member = group.members.get(member_id)
            if member is not None:
                self._emit(*records.member_records(group.group_id, None, member)[-1])
        for member_id in [m for m in group.target if m not in group.members]:
            self._emit(*records.member_tombstones(group.group_id, member_id)[1])
        for regex in [r for r in group.resolved_regexes if r not in group.subscribed_regexes]:
            self._emit(*records.regex_record(group.group_id, regex, None))
        group.resolved_regexes = {r: replace(v, version=-1) for r, v in group.resolved_regexes.items()}
        group.subscription_metadata = self.subscription_metadata(group.subscribed_topic_names())
        if group.members and metadata_hash(group.subscription_metadata) != group.metadata_hash:
            self._bump(group, None, "metadata_changed", now)     # a subscribed topic changed meanwhile
        group.state = group.compute_state()
        for member in group.members.values():
            self.schedule_session_timeout(group.group_id, member.member_id, now,
                                           member.classic.session_timeout_ms if member.classic is not None else None)
            if member.classic is None and member.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group.group_id, member, now)

    # ---- the groups ---------------------------------------------------------------------
    def group(self, group_id: str) -> ConsumerGroup | None:
        group = self._groups.get(group_id)
        return group if group is not None and group.type == "consumer" else None

    def groups(self) -> list[ConsumerGroup]:
        return [g for g in self._groups.values() if g.type == "consumer"]

    def create_group(self, group_id: str, now: int, cause: str) -> ConsumerGroup:
        """A new, empty consumer group in the registry. From Kafka 4.3 it starts at group and assignment
        epoch 1, written nowhere, so its first member's subscription bumps it to 2 (KAFKA-20268); before,
        at 0, with a bump forced at its first heartbeat."""
        group = ConsumerGroup(group_id, now)
        if self.new_groups_at_epoch_1:
            group.group_epoch = group.assignment_epoch = 1
        self._groups[group_id] = group
        self.ctx.event(group, "group.created", now, {"protocol_type": "consumer", "cause": cause})
        return group

    # ---- records ------------------------------------------------------------------------
    def replay(self, key, value) -> None:
        """Apply one of a consumer group's records (:func:`.records.replay`), live and at load (where
        what could not apply is kept in ``ctx.load_problems`` for :meth:`loaded`)."""
        problems = self.ctx.load_problems
        if problems is None:
            records.replay(self._groups, key, value, self.ctx.clock())
            return
        other = self._groups.get(key.group)
        if other is not None and other.type != "consumer":
            self.ctx.load_displaced.setdefault(key.group, other)     # (a damaged log: both types live)
        records.replay(self._groups, key, value, self.ctx.clock(), problems.setdefault(key.group, []))

    def _emit(self, key, value) -> None:
        """One record of the operation under way: replayed now, appended when the operation ends."""
        records.replay(self._groups, key, value, self.ctx.clock())
        self._pending.append((key, value))

    def _flush(self) -> None:
        """The operation ended: append its records (all of one group)."""
        pending, self._pending = self._pending, []
        if pending:
            self.ctx.append(pending[0][0].group, pending)

    def _put_member(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """The member takes its place in the group (a new member, or a new state of one)."""
        for key, value in records.member_records(group.group_id, group.members.get(member.member_id), member):
            self._emit(key, value)

    def _remove_member(self, group: ConsumerGroup, member_id: str) -> None:
        for key, value in records.member_tombstones(group.group_id, member_id):
            self._emit(key, value)

    def creation_records(self, group: ConsumerGroup) -> list:
        """Every record of a group a conversion made whole (not replayed: the group is the one
        ``convert`` built, put in the registry as it is, as Kafka's conversions do)."""
        return records.creation_records(group)

    def retire(self, group: ConsumerGroup) -> list:
        """The group gives way to a group of another type: the records its operation made so far,
        then the tombstones of all its records."""
        pending, self._pending = self._pending, []
        return pending + records.tombstones(group)

    def delete(self, group: ConsumerGroup, now: int, reason: str) -> list:
        """The empty group is deleted: it goes Dead; its tombstones."""
        group.state = DEAD
        return records.tombstones(group)

    @entry
    def timer(self, fn: Callable, group_id: str, *args) -> None:
        """A timer of a consumer group fired: ``fn(group_id, *args)``, then what it changed in the
        group is written (nothing when the group is gone or became a classic group, whose
        conversion wrote its records)."""
        try:
            fn(group_id, *args)
        finally:
            self._flush()

    # ---- the classic protocol's requests (classic members) -----------------------------
    def join_group(self, respond, req, group: ConsumerGroup) -> None:
        """A JoinGroup of a classic member to the (non-empty) consumer group."""
        try:
            response = self.classic.join(group, req, self.ctx.clock())
        except ApiError as e:          # (the heartbeat steps' HeartbeatError too: an assignor's failure)
            response = join_error(e.member_id, e.code)
        finally:
            self._flush()
        self.ctx.reply(respond, response)

    def sync_group(self, respond, req, group: ConsumerGroup) -> None:
        try:
            response = self.classic.sync(group, req)
        except ApiError as e:
            response = sync_error(e.code)
        finally:
            self._flush()
        self.ctx.reply(respond, response)

    def heartbeat_error(self, req, group: ConsumerGroup) -> int:
        try:
            return self.classic.heartbeat(group, req)
        except ApiError as e:
            return e.code

    def leave(self, group: ConsumerGroup, group_id: str, idents: list, initiator: str) -> dict:
        try:
            return self.classic.leave(group, idents, self.ctx.clock(), initiator)
        finally:
            self._flush()

    # ---- ConsumerGroupHeartbeat -------------------------------------------------------
    def _session_timeout(self, group_id: str) -> int:
        return self.configs.get(group_id, SESSION_TIMEOUT)

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest) -> dict:
        """A heartbeat the API layer validated (:meth:`ConsumerGroupHeartbeatRequest.error`):
        its response."""
        if self.ctx.is_loading(req.group_id):
            return heartbeat_error(_E.COORDINATOR_LOAD_IN_PROGRESS)
        try:
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req)
            return self._heartbeat(req)
        except ApiError as e:
            return heartbeat_error(e.code, e.message)
        finally:
            self._flush()

    def _group(self, group_id: str, create: bool, now: int, missing: str = "Consumer group",
               before_create=None) -> ConsumerGroup:
        """``getOrMaybeCreateConsumerGroup`` (``missing``: how its message names an unknown group;
        the leave path's ``consumerGroup`` says "Group"); ``before_create()`` may still refuse the
        heartbeat before a group is made (Kafka: a failed heartbeat's new group is not kept)."""
        consumer = self.group(group_id)
        if consumer is not None:
            return consumer
        group = self.ctx.group(group_id, "classic")
        if group is None or group.state == "Dead":
            if not create:
                raise HeartbeatError(_E.GROUP_ID_NOT_FOUND, f"{missing} {group_id} not found.")
            if before_create is not None:
                before_create()
            return self.create_group(group_id, now, "consumer_group_heartbeat")
        if create and group.state == "Empty":
            # an empty classic group is replaced (Kafka's getOrMaybeCreateConsumerGroup)
            if before_create is not None:
                before_create()
            return self.ctx.give_way(group, "consumer", "consumer_group_heartbeat")
        if create:
            return self.classic.convert(group, now)       # installed once the heartbeat passed its checks
        raise HeartbeatError(_E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest) -> dict:
        now = self.ctx.clock()
        epoch = req.member_epoch
        joining = epoch == JOIN_EPOCH
        regex = req.subscribed_topic_regex
        check = partial(self._check_new_regex, None, regex) if regex else None
        group = self._group(req.group_id, joining, now, before_create=check)
        member_id = req.member_id
        if len(group.members) >= self.max_size and (not member_id or member_id not in group.members) and \
                (req.instance_id is None or group.static_member(req.instance_id) is None):
            raise HeartbeatError(_E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum "
                                 f"capacity of {self.max_size} members.")
        if not member_id:
            member_id = new_member_id()      # ConsumerGroupHeartbeat v0: the coordinator names it
        replaced = None
        if req.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                         f"{group.group_id}.")
                member = ConsumerGroupMember(member_id, joined_ms=now)
            else:
                self._check_epoch(member, epoch, req.topic_partitions)
        else:
            member, replaced = self._static_member(group, member_id, req, joining, now)

        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None else member.subscribed_topic_names),
            subscribed_topic_regex=(req.subscribed_topic_regex if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=req.client_id, client_host=req.client_host, classic=None)
        if updated.subscribed_topic_regex == "":
            updated.subscribed_topic_regex = None         # librdkafka sends "" for no regex
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        old_regex = member.subscribed_topic_regex
        regex_changed = updated.subscribed_topic_regex != old_regex
        subscription_changed = names_changed or regex_changed
        regex_bump, regex_job = False, None
        if regex_changed or group.subscribed_regexes:
            regex_bump, regex_job = self.update_regexes(group, old_regex, updated.subscribed_topic_regex, now)
        if self.group(group.group_id) is not group:
            self.classic.install_upgrade(group, now)          # the classic group it converts gives way
        self.maybe_bump(group, member, updated, replaced, names_changed or regex_bump, now)
        self.take_place(group, updated, replaced, now)
        self.schedule_session_timeout(group.group_id, member_id, now)
        if self.target_due(group, now):
            self.update_target(group, updated)
        updated = self.reconcile_member(group, updated, req.topic_partitions, subscription_changed, now)
        self.update_state(group, now)

        full = joining or (req.rebalance_timeout_ms != -1 and req.topic_partitions is not None
                           and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None))
        assignment = None
        if full or updated.assigned != member.assigned:
            assignment = assignment_response(updated.assigned)
        if regex_job is not None:
            self.resolve_regexes(group, regex_job, now, req.describable)      # Kafka's job, done after
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": updated.member_epoch, "heartbeat_interval_ms": self.configs.get(req.group_id, HEARTBEAT_INTERVAL),
                "assignment": assignment}

    def maybe_bump(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                    replaced: str | None, subscription_changed: bool, now: int) -> None:
        """Bump the group epoch when the group is new, the member's subscription changed, or the
        subscribed topics' metadata did (``hasMemberSubscriptionChanged``, ``updateSubscriptionMetadata``)."""
        bump = group.group_epoch == 0 or subscription_changed
        if bump or group.metadata_refresh:
            names = group.subscribed_topic_names(without=(member.member_id, replaced or ""))
            names.update(group.member_topics(updated))
            metadata = self.subscription_metadata(names)
            if metadata != group.subscription_metadata:
                group.subscription_metadata = metadata
                bump = True
            group.metadata_refresh = False
        if bump:
            reason = ("member_joined" if member.member_id not in group.members and replaced is None
                      else "subscription_changed" if subscription_changed else "metadata_changed")
            self._bump(group, updated.member_id, reason, now)

    def _bump(self, group: ConsumerGroup, member_id: str | None, reason: str, now: int) -> None:
        """The group epoch goes up (Kafka's "Bumped group epoch"): a new target assignment is due."""
        self._emit(*records.epoch_record(group.group_id, group.group_epoch + 1,
                                         metadata_hash(group.subscription_metadata)))
        self.ctx.event(group, "consumer.group_epoch_bumped", now, {"member": member_id, "reason": reason})

    def take_place(self, group: ConsumerGroup, updated: ConsumerGroupMember, replaced: str | None, now: int) -> None:
        """Put the member in the group; a static member it replaces goes, and it inherits that one's
        target (``replaceMember``)."""
        member_id = updated.member_id
        previous = group.members.get(replaced if replaced is not None else member_id)
        if replaced is not None:
            old = group.members[replaced]
            inherited = group.target.get(replaced, {})
            self._remove_member(group, replaced)
            self.cancel_timers(group.group_id, replaced)
            self._emit(*records.target_record(group.group_id, member_id, inherited))
            self.ctx.event(group, "consumer.member_replaced", now, {
                "member": member_id, "old_member": replaced, "instance_id": old.instance_id})
        is_new = member_id not in group.members
        self._put_member(group, updated)
        self._drop_unused_regex(group, previous.subscribed_topic_regex if previous is not None else None)
        if is_new:
            self.ctx.event(group, "consumer.member_joined", now, {
                "member": member_id, "instance_id": updated.instance_id, "client_id": updated.client_id,
                "client_host": updated.client_host, "subscribed_topics": list(updated.subscribed_topic_names),
                "server_assignor": updated.server_assignor})

    def reconcile_member(self, group: ConsumerGroup, updated: ConsumerGroupMember, owned, subscription_changed: bool,
                   now: int) -> ConsumerGroupMember:
        """``maybeReconcile``: the member's next step towards its target; a member of this protocol
        revoking partitions has its rebalance timer."""
        if not subscription_changed and updated.reconciled_to(group.assignment_epoch):
            return updated
        before = updated
        subscribed = self._topic_ids(group, group.member_topics(updated))
        try:
            updated = reconcile(updated, group.assignment_epoch, group.target.get(updated.member_id, {}),
                                group.partition_epoch, subscribed, owned, enforce_subscription=subscription_changed,
                                rules=self.reconciliation)
        except FencedMemberEpoch as e:
            raise HeartbeatError(_E.FENCED_MEMBER_EPOCH, str(e)) from None
        if updated is not before:
            self._put_member(group, updated)
            if updated.classic is None:
                if updated.state is MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, updated, now)
                else:
                    self.timers.cancel(("cg-rebalance", group.group_id, updated.member_id))
        return updated

    # ---- regular expressions -----------------------------------------------------------
    def _check_new_regex(self, group: ConsumerGroup | None, regex: str | None) -> None:
        """``throwIfRegularExpressionIsInvalid`` (Kafka 4.0): a regex no member of the group has yet
        must compile."""
        if regex and (group is None or regex not in group.subscribed_regexes):
            message = invalid_regex_message(regex)
            if message is not None:
                raise HeartbeatError(_E.INVALID_REGULAR_EXPRESSION, message)

    def update_regexes(self, group: ConsumerGroup, old: str | None, new: str | None,
                        now: int) -> tuple[bool, list[str] | None]:
        """``maybeUpdateRegularExpressions`` for a member going from regex ``old`` to ``new`` (Kafka 4.0;
        the refresh interval of 4.1, KAFKA-18961; the bump on clearing of 4.1.2/4.2, KAFKA-19891):
        (bump the group epoch now, the regexes to resolve once the heartbeat is answered, or None)."""
        bump = refresh = False
        if old != new:
            if new:
                if new not in group.subscribed_regexes:
                    self._check_new_regex(group, new)
                    refresh = True
                elif new in group.resolved_regexes:
                    bump = True          # a regex other members have, already resolved
            elif old:
                bump = True              # the member no longer has a regex
        if not refresh and not group.subscribed_regexes:
            return bump, None
        last = group.last_regex_refresh_ms()
        if last is not None and now <= last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
            return bump, None
        regexes = dict(group.subscribed_regexes)     # as they will be after this heartbeat
        if old != new:
            if old:
                regexes[old] -= 1
                if not regexes[old]:
                    del regexes[old]
            if new:
                regexes[new] = regexes.get(new, 0) + 1
        refresh = (refresh or len(regexes) != len(group.resolved_regexes)
                   or group.last_regex_version() < self.new_topics_version
                   or last is None or now > last + self.regex_refresh_interval_ms)
        return bump, (sorted(regexes) if refresh and regexes else None)

    def resolve_regexes(self, group: ConsumerGroup, regexes: list[str], now: int, describable) -> None:
        """Kafka's resolution job and ``handleRegularExpressionsResult`` (4.0): every regex against every
        topic of the image (those the principal of the heartbeat that scheduled it may DESCRIBE); a
        regex whose topics changed, or new subscription metadata, bumps the group epoch."""
        image = self._image
        found = resolve(regexes, image.topics if image is not None else (), describable)
        bump = False
        for regex, topics in found.items():
            if regex not in group.subscribed_regexes:
                continue                 # no member has it any more
            old = group.resolved_regexes.get(regex)
            if topics != (old.topics if old is not None else frozenset()):
                bump = True
            self._emit(*records.regex_record(group.group_id, regex,
                                             ResolvedRegularExpression(topics, self.metadata_version, now)))
        metadata = self.subscription_metadata(group.subscribed_topic_names())
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            self._bump(group, None, "regex_resolved", now)
            group.metadata_refresh = False
            self.update_state(group, now)

    def _check_epoch(self, member: ConsumerGroupMember, epoch: int, owned) -> None:
        """``throwIfConsumerGroupMemberEpochIsInvalid``; from Kafka 4.2 epoch 0 (a rejoin) is always
        accepted (KAFKA-19233); before, a member that has moved on is fenced."""
        if epoch == JOIN_EPOCH and self.rejoin_at_epoch_0:
            return
        if epoch > member.member_epoch:
            raise HeartbeatError(_E.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member epoch "
                                 f"({epoch}) than the one known by the group coordinator "
                                 f"({member.member_epoch}). The member must abandon all its partitions and rejoin.")
        if epoch < member.member_epoch:
            if epoch != member.previous_member_epoch or not owns_only_assigned(owned, member.assigned):
                raise HeartbeatError(_E.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member "
                                     f"epoch ({epoch}) than the one known by the group coordinator "
                                     f"({member.member_epoch}). The member must abandon all its partitions "
                                     "and rejoin.")

    def _static_member(self, group: ConsumerGroup, member_id: str, req: ConsumerGroupHeartbeatRequest,
                       joining: bool, now: int) -> tuple[ConsumerGroupMember, str | None]:
        """``getOrMaybeSubscribeStaticConsumerGroupMember``: (the member, the member id it
        replaces or None)."""
        instance_id = req.instance_id
        existing = group.static_member(instance_id)
        if joining:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id, joined_ms=now), None
            if existing.member_epoch != STATIC_LEAVE_EPOCH and existing.classic is None:
                # ``throwIfInstanceIdIsUnreleased``, whatever the member id: the same member rejoining
                # while still active waits for its session to end too (Kafka 4.1 to 4.3). (A classic
                # member's instance is taken over at once: it never sends a leave with -2.)
                raise HeartbeatError(_E.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} cannot join the group because the instance id is owned by "
                                     f"{existing.member_id} member.")
            if existing.member_id == member_id:
                return existing, None
            return replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                           joined_ms=now), existing.member_id
        if existing is None:
            raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise HeartbeatError(_E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} was fenced by member {existing.member_id}.")
        self._check_epoch(existing, req.member_epoch, req.topic_partitions)
        return existing, None

    def update_target(self, group: ConsumerGroup, updated: ConsumerGroupMember) -> None:
        """``updateTargetAssignment``: run the preferred assignor over every member."""
        meta = group.subscription_metadata
        topics = {info.topic_id: info.partitions for info in meta.values()}
        members = {}
        ids_of: dict = {}       # a subscription's topic ids, made once per distinct subscription
        for m in group.members.values():
            # the sticky start, without what no longer exists (a topic deleted, or re-created smaller
            # under the same id); a target within its topics is kept as it is, and the topic ids are
            # made once per subscription (20,000 members: 129 to 99 ms a target assignment)
            current = {}
            for t, ps in group.target.get(m.member_id, {}).items():
                n = topics.get(t)
                if n is not None:
                    current[t] = ps if ps and max(ps) < n else frozenset(p for p in ps if p < n)
            names = group.member_topics(m)
            ids = ids_of.get(names)
            if ids is None:
                ids = ids_of[names] = self._topic_ids(group, names)
            members[m.member_id] = MemberSpec(m.rack_id, m.instance_id, ids, current)
        name = group.preferred_assignor(self.default_assignor)
        try:
            result = ASSIGNORS[name].assign(GroupSpec(members, group.homogeneous()), topics)
        except Exception as e:       # PartitionAssignorError, or a failure of ours: the heartbeat fails
            kind = "" if isinstance(e, PartitionAssignorError) else f"{type(e).__name__}: "
            raise HeartbeatError(_E.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for "
                                 f"epoch {group.group_epoch}: {kind}{e}") from None
        for member_id, assignment in result.items():
            target = {t: frozenset(ps) for t, ps in assignment.items() if ps}
            if group.target.get(member_id) != target:
                self._emit(*records.target_record(group.group_id, member_id, target))
        now = self.ctx.clock()
        self._emit(*records.target_epoch_record(group.group_id, group.group_epoch,
                                                now if self.assignment_interval else 0))

    def target_due(self, group: ConsumerGroup, now: int) -> bool:
        """Whether the group's target assignment is to be computed now: its group epoch is ahead, and
        (Kafka 4.3, KIP-1263 ``canComputeNextTargetAssignment``) the group's assignment interval has
        passed since the last one (no previous time, or an interval of 0: at once)."""
        if group.group_epoch <= group.assignment_epoch:
            return False
        if not self.assignment_interval:
            return True
        last = group.assignment_timestamp
        interval = self.configs.get(group.group_id, ASSIGNMENT_INTERVAL)
        return last == 0 or interval == 0 or now >= last + interval

    # ---- leaving and fencing -----------------------------------------------------------
    def _leave(self, req: ConsumerGroupHeartbeatRequest) -> dict:
        """``consumerGroupLeave``: epoch -1 removes the member; -2 (a static member) keeps its
        partitions reserved until its session ends."""
        now = self.ctx.clock()
        group = self._group(req.group_id, False, now, missing="Group")
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                     f"{group.group_id}.")
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise HeartbeatError(_E.FENCED_INSTANCE_ID, f"Static member {req.member_id} with instance id "
                                     f"{req.instance_id} was fenced by member {member.member_id}.")
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # the member stays, at epoch -2: its partitions stay reserved, its session runs on
            left = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
            if self.epochs_by_partition:   # Kafka 4.3: its replacement holds them from epoch 0 (KIP-1251)
                left.assigned = {t: dict.fromkeys(ps, 0) for t, ps in member.assigned.items()}
            self._put_member(group, left)
            self.timers.cancel(("cg-rebalance", group.group_id, member.member_id))
            self.ctx.event(group, "consumer.member_left", now, {
                "member": member.member_id, "instance_id": member.instance_id, "static": True, "initiator": "member"})
            self.update_state(group, now)
        else:
            self._remove(group, member, now, "consumer.member_left", {
                "member": member.member_id, "instance_id": member.instance_id, "static": False, "initiator": "member"})
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member.member_id,
                "member_epoch": req.member_epoch, "heartbeat_interval_ms": 0, "assignment": None}

    def _remove(self, group: ConsumerGroup, member: ConsumerGroupMember, now: int, event: str, fields: dict) -> None:
        self.fence(group, [member], now, event, lambda m: fields)

    def fence(self, group: ConsumerGroup, members: list, now: int, event: str, fields) -> None:
        """``consumerGroupFenceMembers``: the members go, with one bump of the group epoch; or, when
        only members of the classic protocol would stay, the group becomes a classic group
        (``fields(member)``: each one's event)."""
        if self.classic.can_downgrade(group, members):
            for m in members:
                self.ctx.event(group, event, now, fields(m))
            self.classic.to_classic(group, {m.member_id for m in members}, now, True)
            return
        for m in members:
            self._remove_member(group, m.member_id)
            self.cancel_timers(group.group_id, m.member_id)
            self._drop_unused_regex(group, m.subscribed_topic_regex)
        names = group.subscribed_topic_names()
        group.subscription_metadata = self.subscription_metadata(names)
        self._bump(group, members[0].member_id if len(members) == 1 else None,
                   "member_left" if event == "consumer.member_left" else "member_fenced", now)
        for m in members:
            self.ctx.event(group, event, now, fields(m))
        self.update_state(group, now)

    def _drop_unused_regex(self, group: ConsumerGroup, regex: str | None) -> None:
        """A regex no member has any more loses its resolution (Kafka writes its tombstone)."""
        if regex and regex not in group.subscribed_regexes and regex in group.resolved_regexes:
            self._emit(*records.regex_record(group.group_id, regex, None))

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        timers = self.timers
        for kind in ("cg-session", "cg-rebalance", "cg-join", "cg-sync"):
            timers.cancel((kind, group_id, member_id))

    def schedule_session_timeout(self, group_id: str, member_id: str, now: int, timeout_ms: int | None = None) -> None:
        """The member's session timer: group.consumer.session.timeout.ms, or a classic member's own."""
        timeout = self._session_timeout(group_id) if timeout_ms is None else timeout_ms
        self.timers.schedule(("cg-session", group_id, member_id), now + timeout,
                                partial(self.timer, self._on_session_timeout, group_id, member_id))

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember, now: int) -> None:
        self.timers.schedule(("cg-rebalance", group_id, member.member_id), now + member.rebalance_timeout_ms,
                                partial(self.timer, self._on_rebalance_timeout, group_id,
                                        member.member_id, member.member_epoch))

    def on_unloaded(self, group: ConsumerGroup) -> None:
        """The group's partition moved to another coordinator: nothing of a consumer group waits
        on this one (no request is ever parked)."""

    def expire_member(self, group_id: str, member_id: str) -> None:
        """The member's session ends now, exactly as its session timer would (the admin API's and
        the faults' ``expire_member``)."""
        self.timer(self._on_session_timeout, group_id, member_id)

    def _on_session_timeout(self, group_id: str, member_id: str) -> None:
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return
        member = group.members[member_id]
        timeout = member.classic.session_timeout_ms if member.classic is not None else self._session_timeout(group_id)
        self._remove(group, member, self.ctx.clock(), "consumer.member_fenced",
                     {"member": member_id, "instance_id": member.instance_id, "reason": "session_timeout",
                      "timeout_ms": timeout})

    def _on_rebalance_timeout(self, group_id: str, member_id: str, epoch: int) -> None:
        group = self.group(group_id)
        if group is None or member_id not in group.members:
            return
        member = group.members[member_id]
        if member.member_epoch != epoch or member.state is not MemberState.UNREVOKED_PARTITIONS:
            return
        self._remove(group, member, self.ctx.clock(), "consumer.member_fenced",
                     {"member": member_id, "instance_id": member.instance_id, "reason": "rebalance_timeout",
                      "timeout_ms": member.rebalance_timeout_ms})

    def update_state(self, group: ConsumerGroup, now: int) -> None:
        state = group.compute_state()
        if state != group.state:
            previous, group.state = group.state, state
            self.ctx.event(group, "group.state_change", now, {
                "state_from": previous, "state_to": state, "duration_ms": now - group.state_timestamp,
                "reason": None})
            group.state_timestamp = now

    # ---- ConsumerGroupDescribe -------------------------------------------------------
    def describe(self, group_id: str, include_authorized_operations: bool = False) -> dict:
        group = self.group(group_id)
        if self.ctx.is_loading(group_id):
            return {"error_code": int(_E.COORDINATOR_LOAD_IN_PROGRESS), "group_id": group_id}
        if group is None:
            message = (f"Group {group_id} is not a consumer group." if group_id in self._groups
                       else f"Group {group_id} not found.")
            return {"error_code": int(_E.GROUP_ID_NOT_FOUND), "error_message": message, "group_id": group_id}
        return group.as_described_group(self.default_assignor, self.image, self.describe_pending_revocation)

