"""The classic protocol (Kafka's ``GroupMetadataManager`` for classic groups): JoinGroup,
SyncGroup, Heartbeat, LeaveGroup and DescribeGroups of classic groups, every timer of a classic
group, and the classic group's record (:mod:`.records`).

Purity: no sockets, no asyncio, no wall clock. Time comes only from ``ctx.clock()`` (ms); delays go
through the keyed timers, which the driver advances. Group metadata "writes" always succeed at once,
so callbacks Kafka runs after a log append run immediately.

Calling convention: every request method takes ``respond`` first, then one typed request object
(:mod:`.requests`) the handler has checked with its ``error()``, as Kafka's API layer does; the
runtime (:mod:`..runtime`) routes a request here when its group is a classic group or none. The
response is a dict in the field names of the API's latest version, queued with ``ctx.reply`` now or
later (parked JoinGroup/SyncGroup).

Timer keys: ``("hb", group, member)`` (session / new-member / KIP-394 pending timers share it,
as in Kafka), ``("join", group)`` (join phase and initial delay), ``("sync", group)``
(pending sync).
"""
from __future__ import annotations

from functools import partial
from typing import Callable

from groupcoord.protocol.errors import ErrorCode

from ..context import GroupContext, entry, leave_initiator
from .group import (
    COMPLETING_REBALANCE, DEAD, EMPTY, EMPTY_ASSIGNMENT, PREPARING_REBALANCE, STABLE, ClassicGroup, GroupState, Member,
)
from ...storage import GroupMetadataKey
from . import view
from .records import MAX_FRAME, group_record, group_record_size, group_tombstone, replay
from .requests import (
    HeartbeatRequest, JoinGroupRequest, SyncGroupRequest, join_error, sync_error,
)

#: Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

_NONE = 0
_E = ErrorCode


class ClassicGroupManager:
    """The classic groups of a coordinator, in virtual time (``ctx``: :class:`~..context.GroupContext`).

    ``config`` (a BrokerConfig) is read once: group.min/max.session.timeout.ms,
    group.initial.rebalance.delay.ms, group.max.size and the offsets topic's message.max.bytes."""

    type = "classic"
    states = GroupState.ALL         # (what the metrics count groups by)
    view = view                     # the admin API's view of its groups

    def __init__(self, ctx: GroupContext) -> None:
        config = ctx.config
        self.ctx = ctx
        self.timers = ctx.timers
        self._groups = ctx.groups
        self._loading = ctx.loading         # (the set itself: the hot path reads it without a hop)
        self._clock = ctx.clock
        self._reply = ctx.reply
        self._event = ctx.event
        self.image = None                   # the cluster's topics (unused: a classic group's members assign)
        self.min_session_timeout_ms = int(config["group.min.session.timeout.ms"])
        self.max_session_timeout_ms = int(config["group.max.session.timeout.ms"])
        self.initial_rebalance_delay_ms = int(config["group.initial.rebalance.delay.ms"])
        self.group_max_size = int(config["group.max.size"])
        self.new_member_join_timeout_ms = NEW_MEMBER_JOIN_TIMEOUT_MS
        # the offsets topic's max.message.bytes; never above what the log can read back
        self.max_message_bytes = min(int(config["message.max.bytes"]), MAX_FRAME - 4)
        ctx.replayers[GroupMetadataKey.kind] = self.replay

    def replay(self, key: GroupMetadataKey, value) -> None:
        """The classic group's record (:func:`.records.replay`): at load (classic operations write
        it without replaying it, as Kafka's)."""
        replay(self._groups, key, value, self._clock())

    def group(self, group_id: str) -> ClassicGroup | None:
        group = self._groups.get(group_id)
        return group if group is not None and group.type == "classic" else None

    # ==================================================================== the group's record
    def _persist_group(self, group: ClassicGroup) -> None:
        """Append the group metadata record (Stable: members and assignments; Empty: none). Built
        from the group, not replayed, as Kafka's classic operations (``replayRecords`` false); only
        when something keeps it."""
        if self.ctx.persist:
            self.ctx.append(group.group_id, [group_record(group)])

    def _group_record_too_large(self, group: ClassicGroup) -> bool:
        """Whether the group's metadata record exceeds message.max.bytes, the offsets topic's limit:
        Kafka's append fails (RecordTooLargeException) and nothing is written. Checked whether or
        not this service persists, so that a group behaves as on Kafka either way."""
        return group_record_size(group) > self.max_message_bytes

    def create_group(self, group_id: str, now: int, cause: str) -> ClassicGroup:
        group = ClassicGroup(group_id, now)
        self._groups[group_id] = group
        self._event(group, "group.created", now, {"protocol_type": None, "cause": cause})
        return group

    def stop(self, group: ClassicGroup) -> None:
        """The group gives way to a group of another type: its waiting JoinGroups and SyncGroups
        are answered REBALANCE_IN_PROGRESS, its timers stop (the runtime takes it out of the
        registry)."""
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

    def retire(self, group: ClassicGroup) -> list:
        """An empty group gives way to a group of another type: :meth:`stop`, and its tombstone."""
        self.stop(group)
        return [group_tombstone(group.group_id)]

    def loaded(self, group: ClassicGroup, now: int) -> bool:
        """A group its record rebuilt at load: its members' session timers start now. (Its one
        record is the whole group: always complete.)"""
        for member in group.members.values():
            self._schedule_heartbeat(group.group_id, member.member_id, member.session_timeout_ms, now)
        return True

    def adopt(self, group: ClassicGroup, now: int, rebalance: bool) -> None:
        """A group a consumer group became (a downgrade): its members' session timers start now,
        then it rebalances when asked."""
        self.loaded(group, now)
        if rebalance:
            self._prepare_rebalance(group, now, "downgrade")

    def member_committed(self, group: ClassicGroup, member_id: str, now: int) -> None:
        """A member's offset commit counts as its heartbeat (Stable or PreparingRebalance)."""
        state = group.state
        if state == STABLE or state == PREPARING_REBALANCE:
            self._rearm_session(group.group_id, group.members[member_id], now)

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
    def join_group(self, respond: Callable[[dict], None], req: JoinGroupRequest, group: ClassicGroup | None) -> None:
        """JoinGroup of a request the API layer validated (:meth:`JoinGroupRequest.error`), to the
        classic group of its id or to none."""
        group_id, member_id = req.group_id, req.member_id
        req.respond = respond
        now = self._clock()
        if group is None:
            if member_id:
                self._reply(respond, join_error(member_id, _E.UNKNOWN_MEMBER_ID))
                return
            group = self.create_group(group_id, now, "join_group")
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
        new_id = self.ctx.new_member_id(instance_id if instance_id is not None else req.client_id)
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

    @entry
    def _on_initial_rebalance_timer(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        group = self.group(group_id)
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

    @entry
    def _on_join_timer(self, group_id: str) -> None:
        group = self.group(group_id)
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

    @entry
    def _on_sync_timer(self, group_id: str, generation_id: int) -> None:
        group = self.group(group_id)
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

    def topics_changed(self, names) -> None:
        """Topics changed: nothing of a classic group depends on them (its members assign)."""

    @staticmethod
    def _answer_parked(group: ClassicGroup, member: Member, member_id: str, error: ErrorCode) -> None:
        """The member's parked JoinGroup or SyncGroup is answered ``error`` now (``member_id``: the
        JoinGroup response's): at once, not through the response queue, so for calls from outside
        the core (the faults, a partition moving away)."""
        respond = group.take_join_callback(member)
        if respond is not None:
            respond(join_error(member_id, error))
        respond = group.take_sync_callback(member)
        if respond is not None:
            respond(sync_error(error))

    def on_unloaded(self, group: ClassicGroup) -> None:
        """The group's partition moved to another coordinator: its parked JoinGroup and SyncGroup
        requests are answered NOT_COORDINATOR, as Kafka's ``onGroupUnloaded`` does; the members
        rejoin at the new one."""
        for m in list(group.members.values()):
            self._answer_parked(group, m, m.member_id, _E.NOT_COORDINATOR)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """End a member's session now, as if its session timeout had passed without a heartbeat
        (``member.expired``), whatever it is waiting for: a parked JoinGroup or SyncGroup is
        answered UNKNOWN_MEMBER_ID (the faults' ``expire_member``)."""
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is not None:
            self._answer_parked(group, member, "", _E.UNKNOWN_MEMBER_ID)
            member.is_new = False
        self._on_heartbeat_timer(group_id, member_id)
        self.timers.cancel(("hb", group_id, member_id))

    @entry
    def _on_heartbeat_timer(self, group_id: str, member_id: str) -> None:
        group = self.group(group_id)
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
    def sync_group(self, respond: Callable[[dict], None], req: SyncGroupRequest, group: ClassicGroup | None) -> None:
        """SyncGroup of a request the API layer validated (:meth:`SyncGroupRequest.error`), to the
        classic group of its id or to none."""
        generation_id, member_id = req.generation_id, req.member_id
        group_instance_id, protocol_type, protocol_name = req.group_instance_id, req.protocol_type, req.protocol_name
        assignments = req.assignments
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
    def heartbeat_error(self, req: HeartbeatRequest) -> int:
        """A validated heartbeat, answered at once: its error code (hot path: no events, no queued
        responses). The Heartbeat API is the classic protocol's: this looks the group up itself and
        hands one of another type to the runtime (``ctx.other_heartbeat``)."""
        group_id = req.group_id
        if self._loading and self.ctx.is_loading(group_id):
            return _NONE   # Kafka: a heartbeat to a loading coordinator succeeds
        group = self._groups.get(group_id)
        if group is None:
            return int(_E.UNKNOWN_MEMBER_ID)
        if type(group) is not ClassicGroup:
            return self.ctx.other_heartbeat(req, group)
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
    def leave(self, group: ClassicGroup | None, group_id: str, idents: list, initiator: str) -> dict:
        """The members of a validated LeaveGroup (``idents``: [(member_id, group_instance_id, reason)])
        leave the classic group of that id (or none); ``initiator``: "member" or "admin"."""
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
                                                        "reason": reason, "pending": True,
                                                        "initiator": leave_initiator(member_id, reason, initiator)})
            else:
                e = group.validate_member(member_id, instance_id)
                if e is None:
                    self._remove_current_member(group, member_id, reason, now,
                                                leave_initiator(member_id, reason, initiator))
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

    def delete(self, group: ClassicGroup, now: int, reason: str) -> list:
        """The group is deleted (DeleteGroups, or retention found it Empty without offsets): its
        timers stop, it goes Dead; returns its tombstone (the runtime drops it from the registry)."""
        self.timers.cancel(("join", group.group_id))
        self.timers.cancel(("sync", group.group_id))
        for member_id in group.pending_join_members:
            self._cancel_heartbeat(group.group_id, member_id)
        group.pending_join_members.clear()
        self._transition(group, DEAD, now, reason)
        return [group_tombstone(group.group_id)]
