"""The consumer group of Kafka's new group protocol (KIP-848): :class:`ConsumerGroup`,
:class:`ConsumerGroupMember`, and the member reconciliation of :func:`reconcile`.

A plain-data model of Kafka 4.x's ``ConsumerGroup`` / ``ConsumerGroupMember`` (package
``modern.consumer`` of the group-coordinator module) and of its ``CurrentAssignmentBuilder``,
without timers or I/O; :mod:`.manager` drives it.

Assignments map topic ids (``uuid.UUID``) to ``{partition: assignment epoch}`` as Kafka's
trunk does (KIP-1251 keeps the epoch at which each partition was assigned); a target
assignment maps topic ids to frozensets of partitions.

A member subscribes to topic names and/or one regular expression (``subscribed_topic_regex``);
the group keeps how many members subscribe to each regex (``subscribed_regexes``) and what each
regex resolved to (``resolved_regexes``, :class:`ResolvedRegularExpression`): a member's topics
are its names and its regex's resolved topics (:meth:`ConsumerGroup.member_topics`).

The group keeps each owned partition's epoch (the epoch of the member that owns it, or is
still revoking it): adding a partition that has one, or removing one at another epoch, raises
:class:`OwnershipError`, Kafka's IllegalStateException. No partition can be owned twice.
"""
from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from groupcoord.protocol.errors import ErrorCode

from ...releases import at_least
from ..context import AUTHORIZED_OPERATIONS_OMITTED

# ConsumerGroupState (what ListGroups, ConsumerGroupDescribe and the events name them)
EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"
#: Kafka's ``ConsumerGroupState``, every one
STATES = (EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD)

#: MemberEpoch values of a ConsumerGroupHeartbeat with a meaning of their own.
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2

Assigned = dict          # uuid.UUID -> dict[int, int]: partition -> the epoch it was assigned at
Target = Mapping         # uuid.UUID -> frozenset[int]


class MemberState(enum.Enum):
    """Kafka's ``MemberState`` (the reconciliation state of a member)."""
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    UNKNOWN = "unknown"


class OwnershipError(RuntimeError):
    """A partition would be owned by two members at once (Kafka's IllegalStateException)."""


class FencedMemberEpoch(Exception):
    """The member must give up its partitions and rejoin (FENCED_MEMBER_EPOCH)."""


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member of the classic protocol inside a consumer group brought in its JoinGroup
    (``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``): its session timeout and its
    protocols as [(name, ConsumerProtocolSubscription bytes)], in its order of preference."""
    session_timeout_ms: int
    protocols: tuple


@dataclass(slots=True)
class ConsumerGroupMember:
    """One member (``ConsumerGroupMember``). ``assigned``: what it owns now, per topic id and
    partition the epoch it got it at; ``pending_revocation``: what it must still give up."""
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Assigned = field(default_factory=dict)
    pending_revocation: Assigned = field(default_factory=dict)
    joined_ms: int = 0
    classic: ClassicMemberMetadata | None = None      # a member of the classic protocol (JoinGroup)

    def assigned_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        return {t: frozenset(ps) for t, ps in self.assigned.items()}

    def reconciled_to(self, epoch: int) -> bool:
        """``isReconciledTo``: stable at that epoch."""
        return self.state is MemberState.STABLE and self.member_epoch == epoch


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """``ResolvedRegularExpression`` (Kafka 4.0): the topics a regex matched, the version of the
    metadata it was resolved against and when (ms). What Kafka's ConsumerGroupRegularExpression
    record holds (key: group id and the regex; value: Topics, Version, Timestamp)."""
    topics: frozenset
    version: int
    timestamp_ms: int


@dataclass(slots=True)
class TopicInfo:
    """A subscribed topic as the group saw it last (subscription metadata)."""
    topic_id: uuid.UUID
    name: str
    partitions: int


def owns_any(owned: Iterable | None, partitions: Assigned) -> bool:
    """Whether the owned TopicPartitions of a heartbeat (None: unchanged, so all of them) still
    hold any of ``partitions``."""
    if owned is None:
        return True
    for topic_id, ps in owned:
        pending = partitions.get(topic_id)
        if pending and any(p in pending for p in ps):
            return True
    return False


def owns_only_assigned(owned: Iterable | None, assigned: Assigned) -> bool:
    """Whether the owned TopicPartitions of a heartbeat (None: not given) are all assigned to the
    member."""
    if owned is None:
        return False
    for topic_id, ps in owned:
        have = assigned.get(topic_id, {})
        for p in ps:
            if p not in have:
                return False
    return True


def assignment_response(parts: dict, topic_name=None) -> dict:
    """An Assignment of the heartbeat or of ConsumerGroupDescribe (with ``topic_name(topic id)``):
    topics in Kafka's Uuid order, partitions ascending."""
    out = []
    for t, ps in sorted(parts.items(), key=lambda kv: uuid_order(kv[0])):
        entry = {"topic_id": t, "partitions": sorted(ps)}
        if topic_name is not None:
            entry["topic_name"] = topic_name(t)
        out.append(entry)
    return {"topic_partitions": out}


@dataclass(frozen=True)
class Reconciliation:
    """How ``CurrentAssignmentBuilder`` reconciles in the emulated release.

    ``subscription_aware`` (4.2, KAFKA-19431): topics the member no longer subscribes to count as
    targeting nothing, and a subscription change drops them from its current assignment at once
    (``updateCurrentAssignment``); 4.1 waits for the new target. ``bump_after_revocation`` (4.1, up to
    KAFKA-19974 in 4.2): a member leaving UNREVOKED_PARTITIONS for more revocations goes to epoch + 1.
    ``epoch_on_unsubscribe`` (4.3, "Update previous member epoch when members unsubscribe"): dropping
    unsubscribed topics makes the current epoch the previous one."""
    subscription_aware: bool = True
    bump_after_revocation: bool = False
    epoch_on_unsubscribe: bool = True

    @classmethod
    def of(cls, release: str) -> "Reconciliation":
        return cls(subscription_aware=at_least(release, "4.2"), bump_after_revocation=not at_least(release, "4.2"),
                   epoch_on_unsubscribe=at_least(release, "4.3"))


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Target,
              partition_epoch, subscribed: frozenset, owned: list | None,
              enforce_subscription: bool = False, rules: Reconciliation = Reconciliation()) -> ConsumerGroupMember:
    """``CurrentAssignmentBuilder.build``: the member's next state towards the target
    (``target_epoch``, ``target``), or the member itself when it cannot move yet; ``rules``: the
    emulated release's (:class:`Reconciliation`).

    ``partition_epoch(topic_id, partition)``: the epoch of the partition's owner, -1 if free.
    ``subscribed``: the topic ids the member subscribes to now (a topic outside counts as
    target nothing). ``owned``: the heartbeat's TopicPartitions as [(topic id, [partitions])],
    None when unchanged. ``enforce_subscription``: the subscription changed in this heartbeat:
    drop unsubscribed topics from the current assignment at once (``updateCurrentAssignment``).
    Raises :class:`FencedMemberEpoch` for a member in the UNKNOWN state that still owns some.
    """
    if not rules.subscription_aware:
        subscribed, enforce_subscription = None, False
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch,
                                    subscribed, owned)
        if enforce_subscription:
            return _update_current(member, subscribed, owned, rules)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return _update_current(member, subscribed, owned, rules) if enforce_subscription else member
        epoch = member.member_epoch + 1 if rules.bump_after_revocation else member.member_epoch
        return _next_assignment(member, epoch, target_epoch, target, partition_epoch, subscribed, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, partition_epoch,
                                subscribed, owned)
    if owned is None or owned:
        raise FencedMemberEpoch("The consumer group member is in a unknown state. "
                                "The member must abandon all its partitions and rejoin.")
    return _next_assignment(member, target_epoch, target_epoch, target, partition_epoch, subscribed, owned)


def _update_current(member: ConsumerGroupMember, subscribed: frozenset, owned,
                    rules: Reconciliation) -> ConsumerGroupMember:
    """Move the partitions of topics no longer subscribed to pending revocation."""
    if not subscribed and not member.pending_revocation:
        assigned, pending = {}, dict(member.assigned)
    else:
        gone = [t for t in member.assigned if t not in subscribed]
        if not gone:
            return member
        assigned = {t: ps for t, ps in member.assigned.items() if t in subscribed}
        pending = {t: dict(ps) for t, ps in member.pending_revocation.items()}
        for t in gone:
            pending.setdefault(t, {}).update(member.assigned[t])
    if not assigned and not member.assigned:
        return member
    previous = member.member_epoch if rules.epoch_on_unsubscribe else member.previous_member_epoch
    if pending and owns_any(owned, pending):
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, previous_member_epoch=previous,
                       assigned=assigned, pending_revocation=pending)
    return replace(member, previous_member_epoch=previous, assigned=assigned)


def _next_assignment(member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Target,
                     partition_epoch, subscribed: frozenset | None, owned) -> ConsumerGroupMember:
    """``computeNextAssignment`` (``subscribed`` None: every topic of the target counts, as before 4.2)."""
    unreleased = False
    assigned: Assigned = {}
    revoking: Assigned = {}
    adding: dict = {}
    own_pending = member.pending_revocation
    for topic_id in _topic_order(target, member.assigned):
        wanted = target.get(topic_id, frozenset()) if subscribed is None or topic_id in subscribed else frozenset()
        current = member.assigned.get(topic_id, {})
        keep = {p: e for p, e in current.items() if p in wanted}
        revoke = {p: e for p, e in current.items() if p not in keep}
        mine = own_pending.get(topic_id, {})
        add = []
        for p in sorted(wanted):
            if p in keep:
                continue
            if partition_epoch(topic_id, p) != -1 and p not in mine:
                unreleased = True
                continue
            add.append(p)
        if keep:
            assigned[topic_id] = keep
        if revoke:
            revoking[topic_id] = revoke
        if add:
            adding[topic_id] = add
    if revoking and owns_any(owned, revoking):
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, member_epoch=epoch,
                       previous_member_epoch=_previous(member, epoch), assigned=assigned,
                       pending_revocation=revoking)
    for topic_id, ps in adding.items():
        topic = assigned.setdefault(topic_id, {})
        for p in ps:
            topic[p] = target_epoch
    new_state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member, state=new_state, member_epoch=target_epoch,
                   previous_member_epoch=_previous(member, target_epoch), assigned=assigned,
                   pending_revocation={})


def _previous(member: ConsumerGroupMember, new_epoch: int) -> int:
    """``Builder.updateMemberEpoch``: the previous epoch becomes the current one (even when the
    epoch stays)."""
    return member.member_epoch


def _topic_order(target: Target, assigned: Assigned) -> list:
    """The topics of the target and of the assignment, in a fixed order (Kafka iterates a hash
    set; the result does not depend on the order)."""
    return sorted(set(target) | set(assigned), key=uuid_order)


def uuid_order(u: uuid.UUID) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo``: the most, then the least significant 64 bits, as signed longs."""
    n = u.int
    hi, lo = n >> 64, n & ((1 << 64) - 1)
    return (hi - (1 << 64) if hi >> 63 else hi, lo - (1 << 64) if lo >> 63 else lo)


class ConsumerGroup:
    """A consumer group (``ConsumerGroup``): epochs, members, the target assignment and the
    epochs of owned partitions.

    ``group_epoch`` is bumped by every change of membership or of what the members subscribe
    to; ``assignment_epoch`` is the group epoch the target assignment was computed at."""

    def __init__(self, group_id: str, now: int):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0       # when the target was last computed (Kafka 4.3; 0: unknown)
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}          # instance id -> member id
        self.target: dict[str, dict[uuid.UUID, frozenset[int]]] = {}   # member id -> target
        self.partition_epochs: dict[uuid.UUID, dict[int, int]] = {}
        self.subscription_metadata: dict[str, TopicInfo] = {}   # topic name -> what the group saw
        self.metadata_refresh = False       # a subscribed topic changed: recompute at the next heartbeat
        self.subscribed_regexes: dict[str, int] = {}     # regex -> how many members subscribe to it
        self.resolved_regexes: dict[str, ResolvedRegularExpression] = {}
        self.state = EMPTY
        self.state_timestamp = now
        #: the metadata hash of the last group epoch record (None: no epoch record yet)
        self.metadata_hash: int | None = None
        # Kept by update_member and remove_member (through which every change of ``members`` goes), so
        # that a heartbeat does not walk the members (a 50,000-member group: bench/big_group.py):
        self._name_counts: dict[str, int] = {}      # topic name -> members subscribing to it by name
        self._unreconciled: set[str] = set()        # members not reconciled to _unreconciled_epoch
        self._unreconciled_epoch: int | None = None     # None: not counted since the last change of it

    # ---- the type's questions (shared with ClassicGroup) ------------------------------
    type = "consumer"
    protocol_type = "consumer"

    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_pending_member(self, member_id: str) -> bool:
        return False        # (a member of the consumer protocol joins in one heartbeat)

    def offset_expiration_condition(self):
        """``ConsumerGroup.offsetExpirationCondition``: an offset's retention counts from its commit."""
        return _commit_time

    @property
    def generation_id(self) -> int:
        """The group epoch (what events and the classic side call the generation)."""
        return self.group_epoch

    def uses_consumer_protocol(self) -> bool:
        return True

    def is_subscribed_to_topic(self, name: str) -> bool:
        """By name or through a regex (``isSubscribedToTopic``)."""
        if any(name in r.topics for r in self.resolved_regexes.values()):
            return True
        return name in self._name_counts

    def validate_offset_commit(self, member_id: str, instance_id: str | None, member_epoch: int,
                               v9: bool, topics=None, topic_id=None, *, transactional: bool = False) -> int | None:
        """``ConsumerGroup.validateOffsetCommit``: the error code of a commit, or None. Without
        ``topics``, Kafka 4.0's strict rule: the member's epoch and no other. With them (the commit's
        [{"name", "partitions": [{"partition_index"}]}], ``topic_id(name)`` resolving names: Kafka
        4.3, KIP-1251), an older epoch is accepted for partitions assigned to the member, or pending
        revocation, at that epoch or before; one partition that is not fails the whole commit.
        ``transactional`` (TxnOffsetCommit, KIP-447): a commit without member id, epoch and instance id
        is accepted, and any version may commit for a member of this protocol."""
        if member_epoch < 0 and not self.members:
            return None                   # an admin or manual commit to an empty group
        if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
            return None                   # (TxnOffsetCommit v0-2 carry none of them)
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        classic = member.classic is not None
        if not v9 and not classic and not transactional:
            return ErrorCode.UNSUPPORTED_VERSION     # OffsetCommit v9+ for members of this protocol
        if member_epoch == member.member_epoch:
            return None
        # a classic member's generation is its member epoch
        stale = ErrorCode.ILLEGAL_GENERATION if classic else ErrorCode.STALE_MEMBER_EPOCH
        if topics is None or member_epoch > member.member_epoch:
            return stale
        for t in topics:                      # (createAssignmentEpochValidator)
            tid = topic_id(t["name"])
            assigned, pending = member.assigned.get(tid, {}), member.pending_revocation.get(tid, {})
            for p in t["partitions"]:
                index = p["partition_index"]
                epoch = assigned.get(index, pending.get(index))
                if epoch is None or member_epoch < epoch:
                    return stale
        return None

    def validate_offset_delete(self) -> int | None:
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """``ConsumerGroup.validateOffsetFetch``: no check without a member (librdkafka asks so)."""
        if member_epoch < 0 and member_id is None:
            return None
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION if member.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
        return None

    # ---- partition epochs -------------------------------------------------------------
    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        topic = self.partition_epochs.get(topic_id)
        if topic is None:
            return -1
        return topic.get(partition, -1)

    def _add_epochs(self, partitions: Assigned, epoch: int) -> None:
        for topic_id, ps in partitions.items():
            topic = self.partition_epochs.setdefault(topic_id, {})
            for p in ps:
                held = topic.get(p)
                if held is not None:
                    raise OwnershipError(f"group {self.group_id}: partition {p} of topic {topic_id} is "
                                         f"owned at epoch {held}, cannot be given at epoch {epoch}")
                topic[p] = epoch

    def _remove_epochs(self, partitions: Assigned, epoch: int) -> None:
        for topic_id, ps in partitions.items():
            topic = self.partition_epochs.get(topic_id, {})
            for p in ps:
                held = topic.get(p)
                if held != epoch:
                    raise OwnershipError(f"group {self.group_id}: partition {p} of topic {topic_id} is "
                                         f"owned at epoch {held}, not {epoch}")
                del topic[p]
            if not topic:
                self.partition_epochs.pop(topic_id, None)

    # ---- members ------------------------------------------------------------------------
    def update_member(self, new: ConsumerGroupMember) -> None:
        """Put the member (``updateMember``): its old partitions' epochs go, its new ones come.
        Raises :class:`OwnershipError`, changing nothing, if a partition it would own is another's."""
        old = self.members.get(new.member_id)
        mine = set()
        if old is not None:
            for parts in (old.assigned, old.pending_revocation):
                mine.update((t, p) for t, ps in parts.items() for p in ps)
        for parts in (new.assigned, new.pending_revocation):
            for topic_id, ps in parts.items():
                topic = self.partition_epochs.get(topic_id)
                if topic is None:
                    continue
                for p in ps:
                    held = topic.get(p)
                    if held is not None and (topic_id, p) not in mine:
                        raise OwnershipError(f"group {self.group_id}: partition {p} of topic {topic_id} is "
                                             f"owned at epoch {held}; member {new.member_id} cannot have it")
        if old is not None:
            self._remove_epochs(old.assigned, old.member_epoch)
            self._remove_epochs(old.pending_revocation, old.member_epoch)
        self.members[new.member_id] = new
        if new.subscribed_topic_regex != (old.subscribed_topic_regex if old is not None else None):
            self._count_regex(old.subscribed_topic_regex if old is not None else None, -1)
            self._count_regex(new.subscribed_topic_regex, 1)
        if old is None or new.subscribed_topic_names != old.subscribed_topic_names:
            if old is not None:
                self._count_names(old.subscribed_topic_names, -1)
            self._count_names(new.subscribed_topic_names, 1)
        if self._unreconciled_epoch is not None:
            if new.reconciled_to(self._unreconciled_epoch):
                self._unreconciled.discard(new.member_id)
            else:
                self._unreconciled.add(new.member_id)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self._add_epochs(new.assigned, new.member_epoch)
        self._add_epochs(new.pending_revocation, new.member_epoch)

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        old = self.members.pop(member_id, None)
        if old is None:
            return None
        self._remove_epochs(old.assigned, old.member_epoch)
        self._remove_epochs(old.pending_revocation, old.member_epoch)
        self._count_regex(old.subscribed_topic_regex, -1)
        self._count_names(old.subscribed_topic_names, -1)
        self._unreconciled.discard(member_id)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.target.pop(member_id, None)
        return old

    def _count_names(self, names, delta: int) -> None:
        counts = self._name_counts
        for name in names:
            count = counts.get(name, 0) + delta
            if count > 0:
                counts[name] = count
            else:
                counts.pop(name, None)

    def _count_regex(self, regex: str | None, delta: int) -> None:
        """``maybeUpdateSubscribedRegularExpression``: the members subscribing to each regex. A
        resolution outlives its last subscriber until the manager drops it (Kafka's tombstone)."""
        if not regex:
            return
        count = self.subscribed_regexes.get(regex, 0) + delta
        if count > 0:
            self.subscribed_regexes[regex] = count
        else:
            self.subscribed_regexes.pop(regex, None)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    # ---- state --------------------------------------------------------------------------
    def compute_state(self) -> str:
        """``maybeUpdateGroupState``."""
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        epoch = self.assignment_epoch
        if self._unreconciled_epoch != epoch:
            # the members are walked once per assignment epoch, then kept count of by update_member
            self._unreconciled = {m.member_id for m in self.members.values() if not m.reconciled_to(epoch)}
            self._unreconciled_epoch = epoch
        return RECONCILING if self._unreconciled else STABLE

    def member_topics(self, member: ConsumerGroupMember):
        """The topic names a member subscribes to: its names and what its regex resolved to
        (nothing while the regex is unresolved)."""
        regex = member.subscribed_topic_regex
        if regex:
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None and resolved.topics:
                return resolved.topics.union(member.subscribed_topic_names)
        return member.subscribed_topic_names

    def subscribed_topic_names(self, without: Iterable[str] = ()) -> set[str]:
        """Every topic some member subscribes to, by name or through a regex; ``without``: but the
        members of these ids (what the others subscribe to)."""
        counts, regexes = self._name_counts, self.subscribed_regexes
        gone = [self.members[m] for m in set(without) if m in self.members]
        if gone:
            counts, regexes = dict(counts), dict(regexes)
            for m in gone:
                for name in m.subscribed_topic_names:
                    counts[name] -= 1
                if m.subscribed_topic_regex:
                    regexes[m.subscribed_topic_regex] = regexes.get(m.subscribed_topic_regex, 0) - 1
        names = {name for name, count in counts.items() if count > 0}
        for regex, resolved in self.resolved_regexes.items():
            if regexes.get(regex, 0) > 0:
                names.update(resolved.topics)
        return names

    # ---- members of the classic protocol -------------------------------------------------
    def supports_classic_protocols(self, protocol_type: str | None, names) -> bool:
        """``supportsClassicProtocols``: a JoinGroup's protocol type is ``consumer`` and one of its
        protocol names is one every classic member supports (any, in a group without them)."""
        if protocol_type != "consumer":
            return False
        names = set(names)
        if not self.members:
            return bool(names)
        classic = [m for m in self.members.values() if m.classic is not None]
        return any(all(any(n == name for n, _ in m.classic.protocols) for m in classic) for name in names)

    def all_classic_except(self, leaving) -> bool:
        """``allMembersUseClassicProtocolExcept``: every member but ``leaving`` (member ids) uses the
        classic protocol, and at least one of ``leaving`` does not."""
        others = [m for m in self.members.values() if m.member_id not in leaving]
        gone = [self.members[m] for m in leaving if m in self.members]
        return all(m.classic is not None for m in others) and any(m.classic is None for m in gone)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """``waitingOnUnreleasedPartition``: a partition of its target still owned by another."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, ps in self.target.get(member.member_id, {}).items():
            mine = member.assigned.get(topic_id, {})
            for p in ps:
                if p not in mine and self.partition_epoch(topic_id, p) != -1:
                    return True
        return False

    def last_regex_refresh_ms(self) -> int | None:
        """``lastResolvedRegularExpressionRefreshTimeMs``: when the regexes were last resolved (all
        together: the first one's time), None if none is."""
        for resolved in self.resolved_regexes.values():
            return resolved.timestamp_ms
        return None

    def last_regex_version(self) -> int:
        """``lastResolvedRegularExpressionVersion``: the metadata version of that resolution, 0 if none."""
        for resolved in self.resolved_regexes.values():
            return resolved.version
        return 0

    def homogeneous(self) -> bool:
        """``ConsumerGroup.subscriptionType`` (Kafka 4.0) is HOMOGENEOUS: without regexes, every member
        subscribes to the same names; with regexes, every member subscribes to one and the same regex
        and none to names."""
        if self.subscribed_regexes:
            if len(self.subscribed_regexes) > 1 or next(iter(self.subscribed_regexes.values())) != len(self.members):
                return False
            return not any(m.subscribed_topic_names for m in self.members.values())
        first = None
        for m in self.members.values():
            subs = frozenset(m.subscribed_topic_names)
            if first is None:
                first = subs
            elif subs != first:
                return False
        return True

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties: the first asked in member order),
        else the default."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return max(counts, key=lambda name: counts[name])

    def as_described_group(self, default_assignor: str, image, with_pending_revocation: bool = False) -> dict:
        """ConsumerGroupDescribe's entry of the group (Kafka's ``asDescribedGroup``); topic names
        from the subscribed topics' metadata, else from ``image`` (the cluster's topics).
        ``with_pending_revocation`` (Kafka 4.3, KAFKA-20431): a member's assignment includes the
        partitions it has still to revoke, merged per topic."""
        names = {info.topic_id: name for name, info in self.subscription_metadata.items()}

        def topic_name(topic_id):
            if topic_id in names:
                return names[topic_id]
            topic = image.topics_by_id.get(topic_id) if image is not None else None
            return topic.name if topic is not None else ""

        members = []
        for m in self.members.values():
            members.append({
                "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_topic_names),
                "subscribed_topic_regex": m.subscribed_topic_regex or "",     # (Kafka's member: "" for none)
                "assignment": assignment_response(_with_pending(m) if with_pending_revocation else m.assigned,
                                                  topic_name),
                "target_assignment": assignment_response(self.target.get(m.member_id, {}), topic_name),
                "member_type": 0 if m.classic is not None else 1})
        return {"error_code": 0, "error_message": None, "group_id": self.group_id, "group_state": self.state,
                "group_epoch": self.group_epoch, "assignment_epoch": self.assignment_epoch,
                "assignor_name": self.preferred_assignor(default_assignor), "members": members,
                "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}


def _with_pending(member: ConsumerGroupMember) -> dict:
    """The member's assigned partitions and those pending revocation, per topic."""
    out = {topic_id: dict(ps) for topic_id, ps in member.assigned.items()}
    for topic_id, ps in member.pending_revocation.items():
        out.setdefault(topic_id, {}).update(ps)
    return out


def _commit_time(offset) -> int:
    return offset.commit_timestamp
