"""The share group of KIP-932: :class:`ShareGroup`, :class:`ShareGroupMember`, and the member
reconciliation of :func:`reconcile`.

A plain-data model of Kafka 4.x's ``ShareGroup`` / ``ShareGroupMember`` (package ``modern.share``
of the group-coordinator module) and of its ``ShareGroupAssignmentBuilder``, without timers or I/O;
:mod:`.manager` drives it.

Unlike a consumer group, a partition may be assigned to several members at once, and a member is
never asked to give partitions up: there is no revocation, a member goes straight to the target
assignment's epoch and partitions (its ``previous_member_epoch`` tolerating one lost response). The
group is Empty without members and Stable with some (Kafka's ``ShareGroupState``; Dead once deleted).

Assignments map topic ids (``uuid.UUID``) to frozensets of partitions. The group also keeps its
share-partition state metadata (Kafka keeps it beside the group, in ``GroupMetadataManager``): the
topics whose share-partition state is being initialized (``initializing``), is initialized
(``initialized``: only these partitions are assigned) and is being deleted (``deleting``).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from groupcoord.protocol.errors import ErrorCode

from ..assignors.spec import uuid_key
from ..context import AUTHORIZED_OPERATIONS_OMITTED

# ShareGroupState (what ListGroups, ShareGroupDescribe and the events name them; Kafka's Unknown is
# never a group's)
EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
STATES = (EMPTY, STABLE, DEAD)

#: MemberEpoch values of a ShareGroupHeartbeat with a meaning of their own.
JOIN_EPOCH, LEAVE_EPOCH = 0, -1

#: Kafka's ``MemberState.STABLE``, the state of every share group member (record 14's State)
MEMBER_STABLE = 0


class InitMapValue(NamedTuple):
    """A topic of the share-partition state metadata (Kafka's ``InitMapValue``): its name, the
    partitions and when they entered this state (ms)."""
    name: str
    partitions: frozenset
    timestamp: int


@dataclass(slots=True)
class ShareGroupMember:
    """One member (``ShareGroupMember``). ``assigned``: its partitions, per topic id."""
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = MEMBER_STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple = ()
    assigned: dict = field(default_factory=dict)

    @property
    def instance_id(self) -> None:
        """Share group members are never static (what every group's members answer)."""
        return None

    def reconciled_to(self, epoch: int) -> bool:
        """``isReconciledTo``: stable at that epoch."""
        return self.state == MEMBER_STABLE and self.member_epoch == epoch


class FencedMemberEpoch(Exception):
    """FENCED_MEMBER_EPOCH, with Kafka's message."""


def check_member_epoch(member: ShareGroupMember, epoch: int, rejoin_at_epoch_0: bool = True) -> None:
    """``throwIfShareGroupMemberEpochIsInvalid``: epoch 0 (a rejoin) always from Kafka 4.2 (KAFKA-19233,
    ``rejoin_at_epoch_0``; before, as any smaller epoch); a greater epoch never; a smaller one only when
    it is the previous one (the response with the new epoch was lost)."""
    if epoch == JOIN_EPOCH and rejoin_at_epoch_0:
        return
    if epoch > member.member_epoch:
        raise FencedMemberEpoch(f"The share group member has a greater member epoch ({epoch}) than the one known by "
                                f"the group coordinator ({member.member_epoch}). The member must abandon all its "
                                "partitions and rejoin.")
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        raise FencedMemberEpoch(f"The share group member has a smaller member epoch ({epoch}) than the one known by "
                                f"the group coordinator ({member.member_epoch}), and it does not match the previous "
                                f"member epoch ({member.previous_member_epoch}). The member must abandon all its "
                                "partitions and rejoin.")


def reconcile(member: ShareGroupMember, target_epoch: int, target: dict, subscribed: frozenset | None,
              subscription_changed: bool) -> ShareGroupMember:
    """``ShareGroupAssignmentBuilder.build``: a member whose epoch is not the target's goes to it,
    with the target's partitions; one whose subscription changed in this heartbeat (Kafka 4.2+) gets
    the target's partitions again. ``subscribed``: the ids of the topics the member subscribes to,
    which the partitions are filtered by (Kafka 4.2+); None: not filtered (4.1)."""
    if not subscription_changed and member.reconciled_to(target_epoch):
        return member
    if target_epoch != member.member_epoch:
        return replace(member, state=MEMBER_STABLE, assigned=_filtered(target, subscribed),
                       member_epoch=target_epoch, previous_member_epoch=member.member_epoch)
    if subscription_changed and subscribed is not None:
        return replace(member, assigned=_filtered(target, subscribed))
    return member


def _filtered(target: dict, subscribed: frozenset | None) -> dict:
    if subscribed is None:
        return dict(target)
    return {t: ps for t, ps in target.items() if t in subscribed}


def assignment_response(parts: dict, topic_name=None) -> dict:
    """An Assignment of the heartbeat, or of ShareGroupDescribe (with ``topic_name(topic id)``: a
    topic it does not know, deleted, is left out, as Kafka's ``topicPartitionsFromMap``); topics in
    Kafka's Uuid order, partitions ascending."""
    out = []
    for topic_id, ps in sorted(parts.items(), key=lambda kv: uuid_key(kv[0])):
        entry = {"topic_id": topic_id, "partitions": sorted(ps)}
        if topic_name is not None:
            name = topic_name(topic_id)
            if name is None:
                continue
            entry["topic_name"] = name
        out.append(entry)
    return {"topic_partitions": out}


class ShareGroup:
    """A share group (``ShareGroup``): epochs, members, the target assignment and the share-partition
    state metadata.

    ``group_epoch`` is bumped by every change of membership or of what the members subscribe to (and
    of the subscribed topics, and when initialized partitions wait to be assigned);
    ``assignment_epoch`` is the group epoch the target assignment was computed at."""

    type = "share"
    protocol_type = "share"

    def __init__(self, group_id: str, now: int):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0       # when the target was last computed (Kafka 4.3; 0: unknown)
        self.metadata_hash: int | None = None     # None until the group's epoch record
        self.members: dict[str, ShareGroupMember] = {}
        self.static_members: dict[str, str] = {}  # (share group members are never static)
        self.target: dict[str, dict[uuid.UUID, frozenset[int]]] = {}   # member id -> target
        self.initializing: dict[uuid.UUID, InitMapValue] = {}
        self.initialized: dict[uuid.UUID, InitMapValue] = {}
        self.deleting: set[uuid.UUID] = set()
        #: whether the group has a share-partition state metadata record (Kafka's
        #: ``shareGroupStatePartitionMetadata`` has an entry for it), even one naming no topic
        self.state_metadata = False
        #: a subscribed topic changed (or the group was just loaded): the metadata hash is computed
        #: again at the next heartbeat (Kafka's ``requestMetadataRefresh``)
        self.metadata_refresh = False
        self.state = EMPTY
        self.state_timestamp = now

    # ---- the type's questions (what the runtime, the offsets and the admin API ask) ------------
    @property
    def generation_id(self) -> int:
        """The group epoch (what the events and the metrics call the generation)."""
        return self.group_epoch

    def is_empty(self) -> bool:
        return not self.members

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_pending_member(self, member_id: str) -> bool:
        return False

    def is_subscribed_to_topic(self, name: str) -> bool:
        return any(name in m.subscribed_topic_names for m in self.members.values())

    def should_expire(self) -> bool:
        """``ShareGroup.shouldExpire``: the offset retention sweep never deletes a share group."""
        return False

    def offset_expiration_condition(self):
        return None

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_id: int,
                               v9: bool, topics=None, topic_id=None, *, transactional: bool = False) -> int | None:
        """``ShareGroup.validateOffsetCommit``: a share group commits no offsets, transactional or not
        ("Group G is not a consumer group.")."""
        return ErrorCode.GROUP_ID_NOT_FOUND

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """``ShareGroup.validateOffsetFetch`` refuses, and Kafka's ``fetchOffsets`` answers that as a
        group without offsets: every partition asked for at -1, no error (a share group has none)."""
        return None

    def validate_offset_delete(self) -> int | None:
        """``ShareGroup.validateOffsetDelete``: GROUP_ID_NOT_FOUND."""
        return ErrorCode.GROUP_ID_NOT_FOUND

    # ---- members --------------------------------------------------------------------------
    def put_member(self, member: ShareGroupMember) -> None:
        """``updateMember``: a new member, or a new state of one."""
        self.members[member.member_id] = member

    def remove_member(self, member_id: str) -> ShareGroupMember | None:
        return self.members.pop(member_id, None)

    def compute_state(self) -> str:
        """``maybeUpdateGroupState``: Stable with members, else Empty (the manager sets ``state``
        from it once an operation's records are replayed, and tells of the change)."""
        return STABLE if self.members else EMPTY

    def subscribed_topic_names(self) -> set[str]:
        """Every topic some member subscribes to."""
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
        return names

    def homogeneous(self) -> bool:
        """``subscriptionType`` is HOMOGENEOUS: every member subscribes to the same topics."""
        first = None
        for m in self.members.values():
            if first is None:
                first = m.subscribed_topic_names
            elif m.subscribed_topic_names != first:
                return False
        return True

    # ---- the share-partition state metadata -----------------------------------------------
    def initialized_partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        """The partitions whose share-partition state is initialized (Kafka's
        ``initializedShareGroupPartitions``): what may be assigned."""
        return {topic_id: value.partitions for topic_id, value in self.initialized.items()}

    def as_described_group(self, assignor: str, topic_name) -> dict:
        """ShareGroupDescribe's entry of the group (Kafka's ``asDescribedGroup``); topic names by
        ``topic_name(topic id)`` (None: the topic is gone, and left out)."""
        members = [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "assignment": assignment_response(m.assigned, topic_name)} for m in self.members.values()]
        return {"error_code": 0, "error_message": None, "group_id": self.group_id, "group_state": self.state,
                "group_epoch": self.group_epoch, "assignment_epoch": self.assignment_epoch, "assignor_name": assignor,
                "members": members, "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}
