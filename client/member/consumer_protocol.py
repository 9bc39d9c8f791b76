"""The consumer group protocol (KIP-848, ``group.protocol=consumer``) on the member's side.

Two parts take the places of ``membership`` and ``heartbeat`` (the classic protocol's) when the
member's config asks for that protocol; the other parts (connections, metadata, discovery,
commits, positions, fetching) and the façade are shared. They follow Kafka 4's client:

- :class:`ConsumerMembership` is ``ConsumerMembershipManager`` with ``AbstractMembershipManager``:
  the member's state (UNSUBSCRIBED, JOINING, RECONCILING, ACKNOWLEDGING, STABLE, FENCED,
  LEAVING), its member id (a Uuid the client makes, kept for its life, ConsumerGroupHeartbeat
  v1 / KIP-1082) and epoch, the target assignment received and its reconciliation (the
  auto-commit of every consumed offset first, ``onPartitionsRevoked`` with what is no longer
  assigned, then the new assignment and ``onPartitionsAssigned`` with what was added, empty or
  not), fencing (``onPartitionsLost``, then a rejoin with epoch 0 and the same member id) and
  leaving (epoch -1, or -2 for a static member);
- :class:`ConsumerHeartbeat` is ``ConsumerHeartbeatRequestManager`` with its ``HeartbeatState``:
  one heartbeat in flight, at the interval the coordinator gives, at once when joining or
  acknowledging; the fields sent only when they changed since the last request (all of them
  when joining or after an error).

The façade's states map onto this protocol's: UNJOINED (not in the group: unsubscribed,
fenced, left), COMPLETING_REBALANCE (joining: epoch 0 sent, no epoch yet) and STABLE (an
epoch; a reconciliation in progress is ``completion``), so that the façade's guards, the
commits (which carry the member id and epoch, OffsetCommit v9) and close() work unchanged.

Regex subscriptions (``Member.subscribe_pattern``, Kafka's ``subscribe(SubscriptionPattern)``):
the member names no topic (SubscribedTopicNames empty) and sends SubscribedTopicRegex when joining
with one and when it changed (``""`` when dropped); its assignment comes by topic ids, whose names
metadata learns by asking for those ids (ConsumerMetadata's ``forTopicIds``). A target is
reconciled for the part whose topic ids metadata names; the rest waits for metadata (asked for)
and is reconciled when it comes (``findResolvableAssignmentAndTriggerMetadataUpdate``). While
JOINING, a heartbeat goes out as soon as none is in flight (``shouldHeartbeatNow``): after a join
answered without an assignment or failed with a retriable error, at once, neither at the interval
nor after a backoff.

Deviations: a member changes between names and a pattern directly (Kafka's SubscriptionState
refuses that without an ``unsubscribe()`` between: "Subscription to topics, partitions and pattern
are mutually exclusive"; there is no unsubscribe here); Metadata is asked for the target's topic
ids only when subscribed to a pattern (a broker without Metadata v12: for every topic), and the
names learnt are kept (Kafka's ``assignedTopicNamesCache`` keeps those of the assigned topics);
reconciliations start from heartbeat answers and metadata answers, not from every poll.
"""
from __future__ import annotations

import base64
import enum
import logging
import uuid
from dataclasses import dataclass

from groupcoord.protocol.errors import ErrorCode

from ..assignors.base import TopicPartition as TP
from .actions import FatalConsumerError, MemberState, PartitionsLost
from .completion import Completing, Completion
from .connections import CONSUMER_GROUP_HEARTBEAT, COORDINATOR, Request
from .membership import Generation

log = logging.getLogger("groupcoord.client")

_E = ErrorCode
_error = ErrorCode.lookup
_COORDINATOR_ERRORS = (_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR)
_FATAL = (_E.UNRELEASED_INSTANCE_ID, _E.FENCED_INSTANCE_ID, _E.GROUP_MAX_SIZE_REACHED, _E.UNSUPPORTED_ASSIGNOR,
          _E.INVALID_REQUEST, _E.UNSUPPORTED_VERSION, _E.GROUP_AUTHORIZATION_FAILED)

JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2


def new_member_id(rng=None) -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: a random (version 4) UUID in URL-safe base64
    without padding, never the zero id nor one starting with '-'. ``rng``: a random.Random for
    reproducible ids, else the system's randomness."""
    while True:
        u = uuid.UUID(int=rng.getrandbits(128), version=4) if rng is not None else uuid.uuid4()
        text = base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class CState(enum.Enum):
    """Kafka's MemberState (the consumer protocol's)."""
    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    LEAVING = "LEAVING"


_FACADE_STATE = {
    CState.UNSUBSCRIBED: MemberState.UNJOINED, CState.FENCED: MemberState.UNJOINED,
    CState.LEAVING: MemberState.UNJOINED, CState.JOINING: MemberState.COMPLETING_REBALANCE,
    CState.RECONCILING: MemberState.STABLE, CState.ACKNOWLEDGING: MemberState.STABLE,
    CState.STABLE: MemberState.STABLE,
}


@dataclass(kw_only=True)
class Reconciliation(Completion):
    """AbstractMembershipManager.maybeReconcile in progress: commit, revoke, assign."""
    local_epoch: int                        # the target's local epoch being reconciled
    ids: dict                               # topic id -> frozenset of partitions


class ConsumerMembership(Completing):
    """The member in a consumer group (ConsumerMembershipManager). ``cstate``: Kafka's state;
    ``state``: the façade's view of it; ``generation``: (member epoch, member id)."""

    def __init__(self, member, rng=None):
        cfg = member.config
        self.member = member
        self.rebalance_timeout_ms: int = cfg["max.poll.interval.ms"]
        self.session_timeout_ms: int = -1            # the coordinator's (group.consumer.session.timeout.ms)
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.server_assignor: str | None = cfg["group.remote.assignor"]
        self.member_id = new_member_id(rng)
        self.epoch = JOIN_EPOCH
        self.cstate = CState.UNSUBSCRIBED
        self.state = MemberState.UNJOINED
        self.generation = Generation(JOIN_EPOCH, self.member_id, None)
        # the target assignment received (topic id -> partitions) and its local epoch, bumped
        # when it changes (AbstractMembershipManager.LocalAssignment); the assignment reconciled
        self.target: dict | None = None
        self.target_local_epoch = 0
        self.current_ids: dict = {}
        self.current_local_epoch = 0
        self.fence_token: int | None = None
        self.stale_commits: list = []                # commits waiting for the next heartbeat
        # what the façade and the other parts read (the classic part's names)
        self.completion: Reconciliation | None = None
        self.prepare = None
        self.leader_task = None
        self.needs_prepare = False
        self.rejoin_needed = False
        self.joined_subscription: frozenset[str] | None = None
        self.join_retry_at = 0
        self.is_leader = False
        self.leader_id: str | None = None
        self.group_topics: frozenset[str] = frozenset()
        self.left_on_poll_timeout = False
        self.callbacks_pending: set[int] = set()
        self.rebalances = 0                          # reconciliations completed (for tests and stats)

    # ---- states ---------------------------------------------------------------------------
    def _to(self, cstate: CState) -> None:
        if cstate is not self.cstate:
            log.debug("%s: %s -> %s", self.member.who(), self.cstate.name, cstate.name)
        self.cstate = cstate
        self.state = _FACADE_STATE[cstate]
        self._tell()

    def _set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.generation = Generation(epoch, self.member_id, None)
        self._tell()

    def _tell(self) -> None:
        """The façade's ``state_listener`` (the fleets' event recorder) hears of every state and
        epoch, changed or not."""
        listener = self.member.state_listener
        if listener is not None:
            listener(self.cstate.value, self.epoch)

    def _clear_target(self) -> None:
        self.target = None
        self.target_local_epoch = self.current_local_epoch = 0
        self.current_ids = {}
        self.completion = None

    def _join(self, now: int, reason: str) -> None:
        """AbstractMembershipManager.transitionToJoining: epoch 0, the same member id, a full
        heartbeat at once."""
        log.info("%s: joining (reason: %s)", self.member.who(), reason)
        self._set_epoch(JOIN_EPOCH)
        self._clear_target()
        self._to(CState.JOINING)
        hb = self.member.heartbeat
        hb.reset()
        hb.next = now

    # ---- what the other parts ask -------------------------------------------------------
    def request_rejoin(self, reason: str, *, prepare: bool = False) -> None:
        """A subscription change, a rejoin after the poll timeout, a commit error: the next step
        joins (when out of the group) or heartbeats at once (when in it)."""
        self.rejoin_needed = True

    def reset_generation(self, reason: str, *, reset_member_id: bool) -> None:
        """Commit errors (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) do not touch the membership with
        this protocol (CommitRequestManager): the heartbeat's response decides."""
        log.info("%s: %s; the next heartbeat decides", self.member.who(), reason)

    def lose_partitions(self) -> None:
        self.fenced(self.member._now, "the membership was lost")

    def on_metadata(self, now: int) -> None:
        """A target naming topic ids unknown until now may be reconciled."""
        if self.target is not None and self.completion is None:
            self.maybe_reconcile(now)

    def fenced(self, now: int, reason: str) -> None:
        """AbstractMembershipManager.transitionToFenced: drop the reconciliation, hand the
        listener onPartitionsLost with what is owned, then (step) clear it and rejoin with
        epoch 0 and the same member id."""
        if self.cstate in (CState.UNSUBSCRIBED, CState.FENCED, CState.LEAVING):
            return
        log.warning("%s: fenced (%s); its partitions are lost, rejoining", self.member.who(), reason)
        member = self.member
        self._clear_target()
        self._set_epoch(JOIN_EPOCH)
        self._to(CState.FENCED)
        owned = member.assignment
        member.pending_revocation |= owned
        self.fence_token = self.callback(PartitionsLost, owned) if owned else -1
        self.rejoin_needed = True

    # ---- the step --------------------------------------------------------------------------
    def step(self, now: int) -> None:
        member = self.member
        if self.completion is not None:
            self.step_completion(now)
        cs = self.cstate
        if cs is CState.FENCED:
            if self.fence_token in self.callbacks_pending:
                return
            self.fence_token = None
            member.set_assignment(frozenset())
            self._to(CState.UNSUBSCRIBED)
            cs = self.cstate
        if cs is CState.UNSUBSCRIBED or cs is CState.LEAVING:
            if ((member.subscription or member.subscription_pattern is not None)
                    and member.group_id is not None and not self.left_on_poll_timeout
                    and member.closing is None and now >= self.join_retry_at and member.discovery.ready(now)):
                self.rejoin_needed = False
                self._join(now, self.member_rejoin_reason())
            return
        if self.rejoin_needed or self.joined_subscription != member.subscription:
            # a new subscription goes out with the next heartbeat, at once (Kafka's
            # SubscriptionChangeEvent makes the heartbeat manager send it without waiting)
            self.rejoin_needed = False
            self.joined_subscription = member.subscription
            self._heartbeat_now(now)

    def _heartbeat_now(self, now: int) -> None:
        """The next heartbeat goes out at once (joining, acknowledging, a new subscription)."""
        hb = self.member.heartbeat
        if hb.next > now:
            hb.next = now

    def member_rejoin_reason(self) -> str:
        return "initial join" if self.rebalances == 0 and not self.current_ids else "rejoining"

    # ---- the heartbeat's answers ---------------------------------------------------------
    def on_heartbeat_success(self, resp: dict, now: int) -> None:
        """AbstractMembershipManager.onHeartbeatSuccess."""
        cs = self.cstate
        if cs is CState.UNSUBSCRIBED or cs is CState.FENCED or cs is CState.LEAVING:
            return                                   # answered after we left or were fenced: ignored
        if resp.get("member_id"):
            self.member_id = resp["member_id"]
        self._set_epoch(resp["member_epoch"])
        if self.stale_commits:
            # CommitRequestManager retries STALE_MEMBER_EPOCH with the epoch just received
            for op in self.stale_commits:
                op.next_try = now
            self.stale_commits.clear()
        a = resp.get("assignment")
        if cs is CState.JOINING:
            if a is None:
                # processAssignmentReceived only runs with an assignment: without one the member
                # stays JOINING and its next heartbeat carries every field again (Kafka's brokers
                # always answer a join with one; librdkafka's mock cluster answers a member that
                # joins a running group with epoch 0 and none, and takes a heartbeat of epoch 0
                # without the subscription as an invalid request)
                return
            self._to(CState.STABLE)
        if a is not None:
            new = {t["topic_id"]: frozenset(t["partitions"]) for t in a["topic_partitions"] if t["partitions"]}
            if new != self.target:
                self.target = new
                self.target_local_epoch += 1
            if self.cstate is CState.RECONCILING and self.completion is None and self.reconciled():
                self._to(CState.STABLE)              # (the unresolved topics were dropped from the target)
        self.maybe_reconcile(now)

    def reconciled(self) -> bool:
        """AbstractMembershipManager.targetAssignmentReconciled: the current assignment (its local
        epoch and partitions) is the target."""
        return self.current_local_epoch == self.target_local_epoch and self.current_ids == self.target

    def maybe_reconcile(self, now: int) -> None:
        """AbstractMembershipManager.maybeReconcile: start reconciling a target not reconciled yet
        (one reconciliation at a time; none while acknowledging the last one). Only the part of
        the target whose topic ids metadata names is reconciled (findResolvableAssignmentAnd-
        TriggerMetadataUpdate); metadata is asked for the others, and the target is reconciled
        again when it answers. A resolvable part that is already the current assignment is
        acknowledged under the target's local epoch, without callbacks."""
        target = self.target
        cs = self.cstate
        if (self.completion is not None or target is None
                or (cs is not CState.STABLE and cs is not CState.RECONCILING) or self.reconciled()):
            return
        member = self.member
        names = member.metadata.topic_names
        resolved = {tid: ps for tid, ps in target.items() if tid in names}
        if len(resolved) < len(target):
            member.metadata.requested = True         # the others, once metadata knows their ids
            log.debug("%s: topic ids %s of the target are not in the metadata yet", member.who(),
                      sorted(str(tid) for tid in target if tid not in resolved))
        if self.current_local_epoch and resolved == self.current_ids:
            if self.current_local_epoch == self.target_local_epoch:
                self._to(CState.RECONCILING)         # nothing more resolvable yet
                return
            self.current_ids = resolved              # the owned part is all that is resolvable: ack it
            self.current_local_epoch = self.target_local_epoch
            self._to(CState.ACKNOWLEDGING)
            self._heartbeat_now(now)
            return
        assigned = frozenset(TP(names[tid], p) for tid, ps in resolved.items() for p in ps)
        owned = member.assignment
        added, revoked = assigned - owned, owned - assigned
        self._to(CState.RECONCILING)
        log.info("%s: reconciling epoch %s: assigned %s (added %s, revoked %s)", member.who(), self.epoch,
                 sorted(assigned), sorted(added), sorted(revoked))
        # markPendingRevocationToPauseFetching, before the commit (the classic protocol's pauses at
        # the revocation, where the shared stage marks them again)
        member.pending_revocation |= revoked
        self.completion = Reconciliation(assigned, added, revoked, now + self.rebalance_timeout_ms,
                                         local_epoch=self.target_local_epoch, ids=resolved)
        self.step_completion(now)

    def completion_offsets(self, c: Reconciliation) -> dict:
        """Every consumed offset (Kafka's auto-commit before a reconciliation's revocation, even
        when nothing is revoked)."""
        return self.member.all_consumed()

    def completed(self, c: Reconciliation, now: int) -> None:
        """The target reconciled becomes the current assignment, acknowledged by a heartbeat at once."""
        self.current_ids = c.ids
        self.current_local_epoch = c.local_epoch
        self.rebalances += 1
        self._to(CState.ACKNOWLEDGING)
        self._heartbeat_now(now)

    def on_heartbeat_sent(self) -> None:
        """ConsumerMembershipManager.onHeartbeatRequestGenerated: acknowledging ends with the
        heartbeat that carries the new assignment."""
        if self.cstate is CState.ACKNOWLEDGING:
            self._to(CState.STABLE if self.reconciled() else CState.RECONCILING)

    def after_acknowledged(self, now: int) -> None:
        if self.cstate is CState.RECONCILING and self.completion is None:
            self.maybe_reconcile(now)

    # ---- leaving ---------------------------------------------------------------------------
    def maybe_leave(self, now: int, reason: str) -> None:
        """AbstractMembershipManager.leaveGroup: a heartbeat with epoch -1 (-2 for a static
        member, whose partitions the coordinator keeps for its return), unless not in the group."""
        member = self.member
        if (self.cstate not in (CState.UNSUBSCRIBED, CState.FENCED, CState.LEAVING)
                and member.discovery.coordinator is not None):
            epoch = STATIC_LEAVE_EPOCH if member.group_instance_id is not None else LEAVE_EPOCH
            body = {"group_id": member.group_id, "member_id": self.member_id, "member_epoch": epoch,
                    "instance_id": member.group_instance_id}
            rid = member.net.send(COORDINATOR, CONSUMER_GROUP_HEARTBEAT, body, self.on_leave, now)
            log.info("%s: leaving the group with epoch %s: %s", member.who(), epoch, reason)
            if rid is not None and member.closing is not None:
                member.closing.leave = rid
            self._set_epoch(epoch)
        self._clear_target()
        self._to(CState.UNSUBSCRIBED)
        self.rejoin_needed = True

    def on_leave(self, resp: dict | None, req: Request, now: int) -> None:
        closing = self.member.closing
        if closing is not None and closing.leave == req.request_id:
            closing.leave = None
        if resp is not None and resp["error_code"]:
            log.info("%s: the leave heartbeat failed: %s", self.member.who(), _error(resp["error_code"]))

    def deadline(self, now: int, best: int) -> int:
        d = self.join_retry_at
        if now < d < best:
            best = d
        if self.completion is not None:
            d = self.completion.deadline
            if now < d < best:
                best = d
        return best


class ConsumerHeartbeat:
    """ConsumerHeartbeatRequestManager with its HeartbeatState (``sent_*``: the fields of the
    last request). ``session_deadline`` is always None: the coordinator alone enforces the
    session with this protocol."""

    def __init__(self, member, now: int):
        cfg = member.config
        self.member = member
        self.net = member.net
        self.discovery = member.discovery
        self.group: ConsumerMembership = member.membership
        self.in_flight = False
        self.next = 0
        self.sent_at = 0
        self.interval_ms = 0                         # the coordinator's, from its last response
        self.session_deadline: int | None = None
        self.last_app_poll = now
        self.max_poll_interval_ms: int = cfg["max.poll.interval.ms"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.rack: str | None = cfg["client.rack"] or None
        self.reset()

    def reset(self) -> None:
        """HeartbeatState.reset: the next heartbeat carries every field."""
        self.sent_rebalance_timeout = -1
        self.sent_topics: frozenset | None = None
        self.sent_pattern: str | None = None
        self.sent_assignor: str | None = None
        self.sent_local_epoch: int | None = None
        self.sent_ids: dict | None = None

    # ---- the timers -------------------------------------------------------------------
    def check_session(self, now: int) -> None:
        return None

    def check_poll_timeout(self, now: int) -> None:
        """The application did not poll within max.poll.interval.ms: the member gives its
        partitions up as lost and leaves (AbstractMembershipManager.transitionToSendingLeaveGroup
        with the poll timer expired); it rejoins at the next application poll."""
        group = self.group
        member = self.member
        if member.closing is not None or now - self.last_app_poll < self.max_poll_interval_ms:
            return
        if group.cstate in (CState.UNSUBSCRIBED, CState.FENCED, CState.LEAVING):
            return
        log.warning("%s: the application did not poll within max.poll.interval.ms; leaving the group",
                    member.who())
        owned = member.assignment
        member.set_assignment(frozenset())
        if owned:
            group.callback(PartitionsLost, owned)
        group.maybe_leave(now, "consumer poll timeout has expired")
        group.left_on_poll_timeout = True

    # ---- the heartbeat ------------------------------------------------------------------
    def build(self) -> dict:
        """HeartbeatState.buildRequestData."""
        member = self.member
        group = self.group
        send_all = group.cstate is CState.JOINING
        body = {"group_id": member.group_id, "member_id": group.member_id, "member_epoch": group.epoch,
                "instance_id": member.group_instance_id}
        rto = group.rebalance_timeout_ms
        if send_all or self.sent_rebalance_timeout != rto:
            body["rebalance_timeout_ms"] = self.sent_rebalance_timeout = rto
        topics = member.subscription
        if send_all or topics != self.sent_topics:
            body["subscribed_topic_names"] = sorted(topics)
            self.sent_topics = topics
            group.joined_subscription = topics
        # the regex: when joining with one, or when it changed ("" when it was dropped)
        pattern = member.subscription_pattern
        if (send_all and pattern is not None) or pattern != self.sent_pattern:
            body["subscribed_topic_regex"] = pattern if pattern is not None else ""
            self.sent_pattern = pattern
        assignor = group.server_assignor
        if assignor is not None and (send_all or assignor != self.sent_assignor):
            body["server_assignor"] = self.sent_assignor = assignor
        ids = group.current_ids
        if send_all or group.current_local_epoch != self.sent_local_epoch or ids is not self.sent_ids:
            body["topic_partitions"] = [{"topic_id": t, "partitions": sorted(ps)}
                                        for t, ps in sorted(ids.items(), key=lambda kv: str(kv[0]))]
            self.sent_local_epoch = group.current_local_epoch
            self.sent_ids = ids
        if send_all:
            body["rack_id"] = self.rack
        return body

    def step(self, now: int) -> bool:
        """A heartbeat is due (the member's guard: joining or in the group, none in flight, its
        time come); True if it went out."""
        conn = self.discovery.conn(now)
        if conn is None:
            return False
        group = self.group
        if group.cstate is CState.FENCED or group.cstate is CState.UNSUBSCRIBED:
            return False
        body = self.build()
        if self.net.send(COORDINATOR, CONSUMER_GROUP_HEARTBEAT, body, self.on_heartbeat, now,
                         ctx=(group.epoch, group.member_id), conn=conn) is None:
            self.reset()
            return False
        self.in_flight = True
        self.sent_at = now
        self.next = now + (self.interval_ms or self.retry_backoff_ms)
        group.on_heartbeat_sent()
        return True

    def on_heartbeat(self, resp: dict | None, req: Request, now: int) -> bool | None:
        """ConsumerHeartbeatRequestManager.onResponse / onErrorResponse / onFailure."""
        self.in_flight = False
        group = self.group
        if resp is None:
            self.reset()
            self.next = now if group.cstate is CState.JOINING else now + self.retry_backoff_ms
            return None
        code = resp["error_code"]
        if not code:
            interval = resp["heartbeat_interval_ms"]
            if interval > 0 and interval != self.interval_ms:
                self.interval_ms = interval
                self.next = self.sent_at + interval
            group.on_heartbeat_success(resp, now)
            group.after_acknowledged(now)
            if group.cstate is CState.JOINING:
                self.next = now                      # still joining (no assignment): again at once
            return None
        code = _error(code)
        self.reset()
        # JOINING heartbeats go out at once, backoff or not (shouldHeartbeatNow)
        self.next = now if group.cstate is CState.JOINING else now + self.retry_backoff_ms
        message = resp.get("error_message") or code.message
        if group.cstate is CState.LEAVING or group.cstate is CState.UNSUBSCRIBED:
            return None                              # after a leave: nothing to do
        if code in _COORDINATOR_ERRORS:
            self.discovery.unknown(now, f"ConsumerGroupHeartbeat: {code.name}")
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            pass
        elif code in (_E.FENCED_MEMBER_EPOCH, _E.UNKNOWN_MEMBER_ID):
            if req.ctx == (group.epoch, group.member_id):
                group.fenced(now, f"ConsumerGroupHeartbeat: {code.name}: {message}")
        elif code == _E.INVALID_REGULAR_EXPRESSION:
            raise FatalConsumerError(code, "Invalid RE2J SubscriptionPattern provided in the call to subscribe. "
                                     + message)
        elif code in _FATAL:
            raise FatalConsumerError(code, f"ConsumerGroupHeartbeat failed: {message}")
        else:
            raise FatalConsumerError(code, f"unexpected error in ConsumerGroupHeartbeat response: {code}: {message}")
        return None
