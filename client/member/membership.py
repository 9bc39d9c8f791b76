"""Group membership (AbstractCoordinator and ConsumerCoordinator, the classic protocol): the
rebalance's steps (onJoinPrepare, JoinGroup, the leader's assignment, SyncGroup, onJoinComplete),
LeaveGroup, and the rebalance listener's callbacks."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from groupcoord.protocol.consumer import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    flatten_partitions,
    group_partitions,
    kept,
)
from groupcoord.protocol.errors import DecodeError, ErrorCode

from ..assignors.base import (
    Assignment,
    ClusterMetadata,
    ConsumerPartitionAssignor,
    GroupSubscription,
    RebalanceProtocol,
    Subscription,
)
from ..assignors.base import TopicPartition as TP
from .actions import (
    FatalConsumerError,
    IllegalStateError,
    MemberState,
    OffsetAndMetadata,
    PartitionsLost,
    PartitionsRevoked,
)
from .completion import Completing, Completion
from .connections import COORDINATOR, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP, Request

log = logging.getLogger("groupcoord.client")

PROTOCOL_TYPE = "consumer"
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5000          # AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE

# the consumer protocol's payloads read and written so far (what is read is only read, here): in a
# rebalance the leader reads every member's subscription and writes every assignment, and each
# member writes its subscription and reads its assignment, most of them alike (the members without
# partitions). Read by their bytes, written by what they hold: 6% of a rolling restart's instructions
# (bench/README.md). A store holds at most _KEPT_MAX payloads (of a few hundred bytes each, more
# with many partitions owned)
_SUBSCRIPTIONS: dict[bytes, dict] = {}
_ASSIGNMENTS: dict[bytes, dict] = {}
_SUBSCRIPTION_BYTES: dict[tuple, bytes] = {}
_ASSIGNMENT_BYTES: dict[tuple, bytes] = {}
_KEPT_MAX = 4096


def _once(store: dict, key: bytes | tuple, make: Callable[[], object]):
    """make(), kept in ``store`` (see protocol.consumer.kept)."""
    return kept(store, key, make, _KEPT_MAX)


_E = ErrorCode
_error = ErrorCode.lookup
_COORDINATOR_ERRORS = (_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR)


def _tps(entries) -> frozenset:
    return frozenset(TP(t, p) for t, p in flatten_partitions(entries or []))


@dataclass
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


@dataclass
class Prepare:
    """onJoinPrepare in progress: the commit before the rebalance, then the listener."""
    deadline: int
    commit: int | None = None               # the commit's handle while it runs
    token: int | None = None                # the listener callback's (-1: none needed)
    giving_up: frozenset = frozenset()


@dataclass
class LeaderTask:
    """The leader waits for fresh metadata before it assigns."""
    subscriptions: dict
    topics: frozenset
    protocol: str | None
    metadata_version: int
    versions: dict                          # member id -> its subscription's version


@dataclass(kw_only=True)
class JoinCompletion(Completion):
    """onJoinComplete in progress, after a successful SyncGroup."""
    user_data: bytes | None


class Membership(Completing):
    """The member's place in the group: ``state``, ``generation``, leadership, and what of a
    rebalance is under way (``prepare``, ``leader_task``, ``completion``)."""

    def __init__(self, member):
        cfg = member.config
        self.member = member
        self.session_timeout_ms: int = cfg["session.timeout.ms"]
        self.rebalance_timeout_ms: int = cfg["max.poll.interval.ms"]
        self.retry_backoff_ms: int = cfg["retry.backoff.ms"]
        self.state = MemberState.UNJOINED
        self.generation = Generation()
        self.is_leader = False
        self.leader_id: str | None = None
        self.rejoin_needed = True
        self.rejoin_reason = "initial join"
        self.needs_prepare = True
        self.prepare: Prepare | None = None
        self.join_retry_at = 0
        self.leader_task: LeaderTask | None = None
        self.completion: JoinCompletion | None = None
        self.joined_subscription: frozenset[str] | None = None
        self.group_topics: frozenset[str] = frozenset()
        self.assignment_snapshot: dict[str, int] | None = None
        self.left_on_poll_timeout = False
        self.callbacks_pending: set[int] = set()
        self.rebalances = 0                            # successful SyncGroups (for tests and stats)

    # ---- what the other parts ask ------------------------------------------------------
    def request_rejoin(self, reason: str, *, prepare: bool = False) -> None:
        self.rejoin_needed = True
        self.rejoin_reason = reason
        if prepare:
            self.needs_prepare = True

    def reset_generation(self, reason: str, *, reset_member_id: bool) -> None:
        """AbstractCoordinator.resetStateAndGeneration."""
        log.info("%s: resetting generation%s: %s", self.member.who(), " and member id" if reset_member_id else "",
                 reason)
        self.state = MemberState.UNJOINED
        member_id = "" if reset_member_id else self.generation.member_id
        self.generation = Generation(-1, member_id, None)
        self.leader_task = None
        self.member.heartbeat.session_deadline = None
        self.prepare = None
        self.completion = None
        self.member.pending_revocation.clear()

    def lose_partitions(self) -> None:
        member = self.member
        lost = member.assignment
        member.set_assignment(frozenset())
        if lost:
            self.callback(PartitionsLost, lost)
        self.needs_prepare = True
        self.rejoin_needed = True

    def on_metadata(self, now: int) -> None:
        """The leader rejoins when the partition counts it assigned with have changed."""
        if (self.is_leader and self.assignment_snapshot is not None
                and self.state == MemberState.STABLE and self.member.closing is None):
            current = self.member.metadata.partition_counts(self.assignment_snapshot.keys())
            if current != self.assignment_snapshot:
                self.request_rejoin(f"cached metadata changed: {self.assignment_snapshot} -> {current}")

    # ---- the rebalance ------------------------------------------------------------------
    def step(self, now: int) -> None:
        member = self.member
        if not member.subscription or member.group_id is None or self.left_on_poll_timeout:
            return
        if self.completion is not None:
            self.step_completion(now)
            if self.completion is not None:
                return
        if self.state == MemberState.COMPLETING_REBALANCE:
            if self.leader_task is not None:
                self.step_leader(now)
            return
        if self.state == MemberState.PREPARING_REBALANCE:
            return
        if self.state == MemberState.STABLE and self.joined_subscription != member.subscription:
            self.request_rejoin("subscription changed")
        if not self.rejoin_needed:
            return
        if now < self.join_retry_at or not member.discovery.ready(now):
            return
        if self.needs_prepare and not self.step_prepare(now):
            return
        self.send_join(now)

    def step_prepare(self, now: int) -> bool:
        """ConsumerCoordinator.onJoinPrepare; True once done (then JoinGroup may go out)."""
        member = self.member
        commits = member.commits
        p = self.prepare
        if p is None:
            p = self.prepare = Prepare(now + self.rebalance_timeout_ms)
            offsets = member.all_consumed()
            if (commits.auto_commit and offsets and self.state == MemberState.STABLE
                    and self.generation.generation_id >= 0):
                p.commit = commits.start(offsets, "rebalance", now, retry=True,
                                         timeout_ms=self.rebalance_timeout_ms)
        if p.commit is not None:
            op = commits.op(p.commit)
            if op is not None and not op.done and now < p.deadline:
                return False
            p.commit = None
        if p.token is None:
            # the listener runs while the partitions are still assigned (positions readable);
            # they are given up once it is done, as Kafka does after invoking it
            gen = self.generation
            owned = member.assignment
            if gen.generation_id < 0 or not gen.member_id:
                # the generation was reset by an error or a timeout: what we owned is lost
                p.giving_up = owned
                p.token = self.callback(PartitionsLost, owned) if owned else -1
            elif member.protocol == RebalanceProtocol.EAGER:
                p.giving_up = owned
                p.token = self.callback(PartitionsRevoked, owned)
            else:
                p.giving_up = frozenset(tp for tp in owned if tp.topic not in member.subscription)
                p.token = self.callback(PartitionsRevoked, p.giving_up) if p.giving_up else -1
            member.pending_revocation |= p.giving_up
        if p.token in self.callbacks_pending:
            return False
        if p.giving_up:
            member.set_assignment(member.assignment - p.giving_up)
        self.prepare = None
        self.needs_prepare = False
        self.is_leader = False
        self.group_topics = frozenset()
        self.assignment_snapshot = None
        return True

    # ---- JoinGroup ------------------------------------------------------------------------
    def subscription_bytes(self, assignor: ConsumerPartitionAssignor) -> bytes:
        member = self.member
        topics = sorted(member.subscription)
        user_data = assignor.subscription_user_data(set(topics))
        generation_id, rack_id = self.generation.generation_id, member.config["client.rack"] or None
        return _once(_SUBSCRIPTION_BYTES, (tuple(topics), user_data, member.assignment, generation_id, rack_id),
                     lambda: encode_subscription({
                         "topics": topics, "user_data": user_data, "owned_partitions": group_partitions(member.assignment),
                         "generation_id": generation_id, "rack_id": rack_id}, 3))

    def send_join(self, now: int) -> None:
        member = self.member
        gen = self.generation
        instance_id = member.group_instance_id
        body = {
            "group_id": member.group_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": gen.member_id,
            "group_instance_id": instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": [{"name": a.name, "metadata": self.subscription_bytes(a)} for a in member.assignors],
            "reason": self.rejoin_reason[:255] if self.rejoin_reason else None,
        }
        timeout = max(member.net.request_timeout_ms, self.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)

        def build(v: int) -> dict:
            if v < 5 and instance_id is not None:
                # JoinGroupRequest.Builder: static membership needs JoinGroup v5
                raise FatalConsumerError(_E.UNSUPPORTED_VERSION,
                                         f"the coordinator speaks JoinGroup v{v}, which cannot carry "
                                         "group.instance.id (static membership needs v5)")
            return body
        rid = member.net.send(COORDINATOR, JOIN_GROUP, build, self.on_join, now, timeout_ms=timeout)
        if rid is None:
            return
        if log.isEnabledFor(logging.INFO):       # (its arguments: a member's every rebalance)
            log.info("%s: joining (reason: %s)", member.who(), self.rejoin_reason)
        self.joined_subscription = member.subscription
        self.state = MemberState.PREPARING_REBALANCE
        self.rejoin_needed = False

    def join_failed(self, now: int, *, backoff: bool) -> None:
        if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
            self.state = MemberState.UNJOINED
        self.rejoin_needed = True
        self.leader_task = None
        self.join_retry_at = now + self.retry_backoff_ms if backoff else now

    def on_join(self, resp: dict | None, req: Request, now: int) -> None:
        member = self.member
        if member.closing is not None or self.state != MemberState.PREPARING_REBALANCE:
            if resp is not None and _error(resp["error_code"]) == _E.NONE:
                # answered after we gave up on it (e.g. close): the join stands until we leave
                self.generation = Generation(resp["generation_id"], resp["member_id"], resp.get("protocol_name"))
                if member.closing is None:
                    self.join_failed(now, backoff=True)
            return
        if resp is None:
            self.join_failed(now, backoff=True)
            return
        code = _error(resp["error_code"])
        if code == _E.NONE:
            ptype = resp.get("protocol_type")
            if ptype is not None and ptype != PROTOCOL_TYPE:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL,
                                         f"JoinGroup answered protocol type {ptype!r}")
            self.generation = Generation(resp["generation_id"], resp["member_id"], resp.get("protocol_name"))
            self.leader_id = resp["leader"]
            self.state = MemberState.COMPLETING_REBALANCE
            hb = member.heartbeat
            hb.session_deadline = now + hb.session_timeout_ms
            hb.next = now + hb.interval_ms
            if resp["leader"] == resp["member_id"]:
                self.on_leader_elected(resp, now)
            else:
                self.send_sync(now, [])
            return
        if code == _E.MEMBER_ID_REQUIRED:
            self.generation = Generation(-1, resp["member_id"], None)
            self.request_rejoin("need to re-join with the given member id")
            self.join_failed(now, backoff=False)
        elif code == _E.UNKNOWN_MEMBER_ID:
            self.reset_generation("JoinGroup: UNKNOWN_MEMBER_ID", reset_member_id=True)
            self.request_rejoin("JoinGroup: UNKNOWN_MEMBER_ID", prepare=True)
            self.join_failed(now, backoff=False)
        elif code == _E.REBALANCE_IN_PROGRESS:
            self.request_rejoin("JoinGroup: REBALANCE_IN_PROGRESS")
            self.join_failed(now, backoff=False)
        elif code in _COORDINATOR_ERRORS:
            member.discovery.unknown(now, f"JoinGroup: {code.name}")
            self.join_failed(now, backoff=True)
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            self.join_failed(now, backoff=True)
        elif code == _E.FENCED_INSTANCE_ID:
            raise FatalConsumerError(code, f"static member {member.group_instance_id} was fenced by another "
                                           "member with the same group.instance.id")
        elif code in (_E.INCONSISTENT_GROUP_PROTOCOL, _E.INVALID_SESSION_TIMEOUT, _E.INVALID_GROUP_ID,
                      _E.GROUP_AUTHORIZATION_FAILED, _E.GROUP_MAX_SIZE_REACHED, _E.UNSUPPORTED_VERSION):
            raise FatalConsumerError(code, f"JoinGroup failed: {code.message}")
        else:
            raise FatalConsumerError(code, f"unexpected error in JoinGroup response: {code}")

    # ---- the leader -----------------------------------------------------------------------
    def on_leader_elected(self, resp: dict, now: int) -> None:
        subscriptions: dict[str, Subscription] = {}
        versions: dict[str, int] = {}
        for m in resp["members"]:
            try:
                data = m["metadata"]
                s = _once(_SUBSCRIPTIONS, data, lambda: decode_subscription(data))
            except DecodeError as e:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL,
                                         f"cannot read the subscription of member {m['member_id']}: {e}") from e
            owned = [TP(t, p) for t, p in flatten_partitions(s.get("owned_partitions") or [])]
            subscriptions[m["member_id"]] = Subscription(
                list(s["topics"]), s.get("user_data"), owned, s.get("generation_id", -1),
                s.get("rack_id"), m.get("group_instance_id"))
            versions[m["member_id"]] = s["version"]
        topics = frozenset(t for s in subscriptions.values() for t in s.topics)
        self.is_leader = True
        self.group_topics = topics
        metadata = self.member.metadata
        if resp.get("skip_assignment"):
            # KIP-814: a static leader rejoined without a rebalance; it must not assign
            self.assignment_snapshot = metadata.partition_counts(topics)
            self.send_sync(now, [])
            return
        self.leader_task = LeaderTask(subscriptions, topics, resp.get("protocol_name"), metadata.version, versions)
        metadata.requested = True        # ensureFreshMetadata
        self.step_leader(now)

    def step_leader(self, now: int) -> None:
        member = self.member
        metadata = member.metadata
        task = self.leader_task
        if task.metadata_version == metadata.version or not task.topics <= metadata.topics:
            if not metadata.in_flight:
                metadata.requested = True
                task.metadata_version = metadata.version
            metadata.step(now)
            return
        self.leader_task = None
        assignor = next((a for a in member.assignors if a.name == task.protocol), None)
        if assignor is None:
            raise IllegalStateError(f"the coordinator selected protocol {task.protocol!r}, which this "
                                    "member did not offer")
        counts = metadata.partition_counts(task.topics)
        racks = metadata.racks(counts)
        cluster = ClusterMetadata(counts, racks or None)
        result = assignor.assign(cluster, GroupSubscription(dict(task.subscriptions)))
        assignments = result.assignments
        if member.protocol == RebalanceProtocol.COOPERATIVE:
            self.validate_cooperative(task.subscriptions, assignments)
        self.assignment_snapshot = counts
        out = []
        for member_id, a in assignments.items():
            version = min(3, task.versions.get(member_id, 3))
            data = _once(_ASSIGNMENT_BYTES, (tuple(a.partitions), a.user_data, version),
                         lambda: encode_assignment({"assigned_partitions": group_partitions(a.partitions),
                                                    "user_data": a.user_data}, version))
            out.append({"member_id": member_id, "assignment": data})
        if log.isEnabledFor(logging.INFO):       # (its arguments: a sort a member)
            log.info("%s: leader assigned %s with %s", member.who(),
                     {m: sorted(a.partitions) for m, a in assignments.items()}, assignor.name)
        self.send_sync(now, out)

    @staticmethod
    def validate_cooperative(subscriptions: dict[str, Subscription], assignments: dict[str, Assignment]) -> None:
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
    def send_sync(self, now: int, assignments: list[dict]) -> None:
        member = self.member
        gen = self.generation
        body = {"group_id": member.group_id, "generation_id": gen.generation_id, "member_id": gen.member_id,
                "group_instance_id": member.group_instance_id, "protocol_type": PROTOCOL_TYPE,
                "protocol_name": gen.protocol_name, "assignments": assignments}
        rid = member.net.send(COORDINATOR, SYNC_GROUP, body, self.on_sync, now,
                              ctx=(gen.generation_id, gen.member_id))
        if rid is None:
            # the coordinator connection went away between JoinGroup and SyncGroup
            self.join_failed(now, backoff=True)
            return

    def on_sync(self, resp: dict | None, req: Request, now: int) -> None:
        member = self.member
        if member.closing is not None:
            return
        if resp is None:
            if self.state == MemberState.COMPLETING_REBALANCE:
                self.join_failed(now, backoff=True)
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
                self.join_failed(now, backoff=True)
                return
            self.state = MemberState.STABLE
            hb = member.heartbeat
            hb.session_deadline = now + hb.session_timeout_ms
            self.rebalances += 1
            self.on_join_complete(resp["assignment"], now)
            return
        if code == _E.REBALANCE_IN_PROGRESS:
            self.request_rejoin("SyncGroup: REBALANCE_IN_PROGRESS")
            self.join_failed(now, backoff=False)
        elif code in (_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION):
            self.reset_generation(f"SyncGroup: {code.name}", reset_member_id=code == _E.UNKNOWN_MEMBER_ID)
            self.request_rejoin(f"SyncGroup: {code.name}", prepare=True)
            self.join_failed(now, backoff=False)
        elif code in _COORDINATOR_ERRORS:
            member.discovery.unknown(now, f"SyncGroup: {code.name}")
            self.join_failed(now, backoff=True)
        elif code == _E.COORDINATOR_LOAD_IN_PROGRESS:
            self.join_failed(now, backoff=True)
        elif code == _E.FENCED_INSTANCE_ID:
            raise FatalConsumerError(code, f"static member {member.group_instance_id} was fenced")
        elif code == _E.GROUP_AUTHORIZATION_FAILED:
            raise FatalConsumerError(code, f"not authorized to group {member.group_id}")
        else:
            raise FatalConsumerError(code, f"unexpected error in SyncGroup response: {code}")

    # ---- onJoinComplete -----------------------------------------------------------------
    def on_join_complete(self, data: bytes, now: int) -> None:
        member = self.member
        if data:
            try:
                a = _once(_ASSIGNMENTS, data, lambda: decode_assignment(data))
            except DecodeError as e:
                raise FatalConsumerError(_E.INCONSISTENT_GROUP_PROTOCOL, f"cannot read the assignment: {e}") from e
            assigned = _tps(a["assigned_partitions"])
            user_data = a.get("user_data")
        else:
            assigned, user_data = frozenset(), None
        if any(tp.topic not in member.subscription for tp in assigned):
            # SubscriptionState.checkAssignmentMatchedSubscription
            log.warning("%s: assignment %s does not match the subscription %s; rejoining",
                        member.who(), sorted(assigned), sorted(member.subscription))
            self.request_rejoin("received an assignment that does not match the subscription")
            return
        owned = member.assignment
        if member.protocol == RebalanceProtocol.COOPERATIVE:
            added, revoked = assigned - owned, owned - assigned
        else:
            added, revoked = assigned, frozenset()
        self.completion = JoinCompletion(assigned, added, revoked, now + self.rebalance_timeout_ms, user_data=user_data)
        self.step_completion(now)

    def completion_offsets(self, c: JoinCompletion) -> dict:
        """The positions of the partitions revoked (none: no commit)."""
        positions = self.member.positions
        return {tp: OffsetAndMetadata(positions[tp]) for tp in sorted(c.revoked) if tp in positions}

    def assigning(self, c: JoinCompletion, now: int) -> None:
        """The protocol's assignor hears of the assignment, the auto-commit timer restarts."""
        member = self.member
        for a in member.assignors:
            if a.name == self.generation.protocol_name:
                a.on_assignment(Assignment(sorted(c.assigned), c.user_data), member.group_metadata())
        member.commits.next_auto_commit = now + member.commits.auto_commit_interval_ms
        if log.isEnabledFor(logging.INFO):       # (its arguments: three sorts a member's rebalance)
            log.info("%s: generation %s assignment %s (added %s, revoked %s)", member.who(),
                     self.generation.generation_id, sorted(c.assigned), sorted(c.added), sorted(c.revoked))

    def completed(self, c: JoinCompletion, now: int) -> None:
        """The next rebalance prepares again; a cooperative one that revoked rejoins at once."""
        self.needs_prepare = True
        if c.revoked:
            self.request_rejoin("need to revoke partitions and re-join")

    # ---- leaving --------------------------------------------------------------------------
    def maybe_leave(self, now: int, reason: str) -> None:
        """AbstractCoordinator.maybeLeaveGroup: LeaveGroup for dynamic members, then reset."""
        member = self.member
        gen = self.generation
        if (not member.is_static and member.discovery.coordinator is not None
                and self.state != MemberState.UNJOINED and gen.member_id):
            member_id = gen.member_id
            group_id = member.group_id

            def build(v: int) -> dict:
                if v >= 3:
                    return {"group_id": group_id,
                            "members": [{"member_id": member_id, "group_instance_id": None, "reason": reason}]}
                return {"group_id": group_id, "member_id": member_id}
            rid = member.net.send(COORDINATOR, LEAVE_GROUP, build, self.on_leave, now)
            if rid is not None and member.closing is not None:
                member.closing.leave = rid
        self.reset_generation(f"leaving the group: {reason}", reset_member_id=True)
        self.request_rejoin(reason, prepare=True)

    def on_leave(self, resp: dict | None, req: Request, now: int) -> None:
        closing = self.member.closing
        if closing is not None and closing.leave == req.request_id:
            closing.leave = None
        if resp is not None:
            code = _error(resp["error_code"])
            if code != _E.NONE:
                log.info("%s: LeaveGroup failed: %s", self.member.who(), code)

    def deadline(self, now: int, best: int) -> int:
        """The rebalance's deadlines: a back-off before the next JoinGroup, the commit and the
        listener of onJoinPrepare and onJoinComplete."""
        d = self.join_retry_at
        if now < d < best:
            best = d
        if self.prepare is not None:
            d = self.prepare.deadline
            if now < d < best:
                best = d
        if self.completion is not None:
            d = self.completion.deadline
            if now < d < best:
                best = d
        return best
