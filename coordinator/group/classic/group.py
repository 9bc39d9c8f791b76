"""Classic consumer group state: :class:`ClassicGroup` and :class:`Member`.

A plain-data model of Kafka's classic group (``ClassicGroup`` / ``ClassicGroupMember`` of
the Java coordinator), without timers or I/O; :mod:`.manager` drives it.

States are Kafka's names, which are also what DescribeGroups and ListGroups return.
Parked JoinGroup/SyncGroup requests are represented by their ``respond`` callbacks
(``Member.awaiting_join`` / ``Member.awaiting_sync``); the coordinator answers them.

Deterministic equivalents of Kafka's hash-map orders: members iterate in insertion order
(leader re-election and the leader's member list follow it), and protocol-vote ties are
broken by the leader's preference order.
"""
from __future__ import annotations

import struct
from typing import Callable, Iterator

from groupcoord.protocol.consumer import kept
from groupcoord.protocol.errors import ErrorCode

from ..context import AUTHORIZED_OPERATIONS_OMITTED

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"


class GroupState:
    """Kafka's classic group state names (``ClassicGroupState``)."""

    EMPTY = EMPTY
    PREPARING_REBALANCE = PREPARING_REBALANCE
    COMPLETING_REBALANCE = COMPLETING_REBALANCE
    STABLE = STABLE
    DEAD = DEAD
    ALL = (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD)


#: target state -> states it may be entered from.
VALID_PREVIOUS_STATES: dict[str, frozenset[str]] = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}

_CAN_REBALANCE = VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

CONSUMER_PROTOCOL_TYPE = "consumer"
EMPTY_ASSIGNMENT = b""

Protocols = list  # list[tuple[str, bytes]]: (name, metadata) in the member's preference order
Respond = Callable[[dict], None]


class IllegalStateTransition(RuntimeError):
    """A transition Kafka's ``ClassicGroupState`` does not allow."""


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def parse_subscription_topics(data: bytes) -> list[str]:
    """Topics of a ConsumerProtocolSubscription, read the way Kafka's coordinator does.

    The int16 version is read and ignored; then the v0 layout (the prefix of every version):
    the topics array and the nullable user data. Trailing bytes are ignored. Raises
    ``ValueError`` when that prefix is malformed.
    """
    try:
        n = len(data)
        if n < 6:
            raise ValueError("buffer underflow")
        (count,) = _I32.unpack_from(data, 2)
        if count < 0:
            raise ValueError("null topics")
        pos = 6
        topics = []
        for _ in range(count):
            if pos + 2 > n:
                raise ValueError("buffer underflow")
            (length,) = _I16.unpack_from(data, pos)
            pos += 2
            if length < 0 or pos + length > n:
                raise ValueError("bad topic name")
            topics.append(bytes(data[pos:pos + length]).decode("utf-8", "replace"))
            pos += length
        if pos + 4 > n:
            raise ValueError("buffer underflow")
        (ud,) = _I32.unpack_from(data, pos)
        if ud > 0 and pos + 4 + ud > n:
            raise ValueError("buffer underflow")
        return topics
    except struct.error as e:  # pragma: no cover - guarded above
        raise ValueError(str(e)) from None


# the topics of the subscriptions read so far, by their bytes (at most 4,096, emptied when full): a
# generation reads every member's, most of them alike (1% of a rolling restart's instructions)
_TOPICS_READ: dict[bytes, list[str]] = {}
_TOPICS_READ_MAX = 4096


def _subscription_topics(data: bytes) -> list[str]:
    """parse_subscription_topics(data), kept by its bytes (the list only read)."""
    return kept(_TOPICS_READ, data, lambda: parse_subscription_topics(data), _TOPICS_READ_MAX)


class Member:
    """A classic group member (``ClassicGroupMember``)."""

    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
                 "session_timeout_ms", "protocol_type", "protocols", "assignment", "awaiting_join",
                 "awaiting_sync", "is_new", "joined_ms", "timer_key", "timer_callback")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 protocols: Protocols, assignment: bytes = EMPTY_ASSIGNMENT, joined_ms: int = 0):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.awaiting_join: Respond | None = None
        self.awaiting_sync: Respond | None = None
        self.is_new = False
        self.joined_ms = joined_ms
        # the coordinator's session-timer key and callback, cached for the heartbeat path
        self.timer_key = None
        self.timer_callback = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def instance_id(self) -> str | None:
        """The group instance id (the name every group type's member answers to)."""
        return self.group_instance_id

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol_name:
                return data
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name}")

    def matches(self, protocols: Protocols) -> bool:
        """Same protocol names and metadata bytes, in the same order."""
        return self.protocols == protocols

    def vote(self, candidates) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise KeyError(f"member {self.member_id} supports none of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        if self.is_new:
            return False      # a new member's parked JoinGroup can expire
        return self.awaiting_join is not None or self.awaiting_sync is not None

    def __repr__(self) -> str:
        return (f"Member({self.member_id!r}, instance={self.group_instance_id!r}, "
                f"protocols={self.protocol_names}, new={self.is_new})")


class ClassicGroup:
    """A classic group: state machine, members and protocol bookkeeping (its offsets are the
    offset manager's)."""

    __slots__ = ("group_id", "state", "previous_state", "current_state_timestamp", "protocol_type",
                 "protocol_name", "generation_id", "leader_id", "members", "static_members",
                 "pending_join_members", "num_members_awaiting_join", "supported_protocols",
                 "pending_sync_members", "subscribed_topics", "new_member_added",
                 "rebalance_started_ms", "rebalance_rounds")

    def __init__(self, group_id: str, now_ms: int, state: str = EMPTY):
        self.group_id = group_id
        self.state = state
        self.previous_state = DEAD
        self.current_state_timestamp: int | None = now_ms
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join_members: dict[str, None] = {}   # insertion-ordered set
        self.num_members_awaiting_join = 0
        self.supported_protocols: dict[str, int] = {}
        self.pending_sync_members: set[str] = set()
        self.subscribed_topics: frozenset[str] | None = None
        self.new_member_added = False
        self.rebalance_started_ms: int | None = None
        self.rebalance_rounds = 0

    # ---- state -------------------------------------------------------------
    def transition_to(self, target: str, now_ms: int) -> str:
        """Move to ``target``; returns the state left. Raises on an illegal transition."""
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(
                f"group {self.group_id} should be in one of {sorted(VALID_PREVIOUS_STATES[target])} "
                f"before moving to {target}, but is in {self.state}")
        previous = self.state
        self.previous_state = previous
        self.state = target
        self.current_state_timestamp = now_ms
        return previous

    def can_rebalance(self) -> bool:
        return self.state in _CAN_REBALANCE

    def is_simple_group(self) -> bool:
        return self.protocol_type is None and self.state == EMPTY and not self.pending_join_members

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # ---- members -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[Member]:
        return iter(self.members.values())

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise RuntimeError(f"pending member {member_id} is already a member of {self.group_id}")
        self.pending_join_members[member_id] = None

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        """The group rebalance timeout: the largest of the members' (0 without members)."""
        best = 0
        for m in self.members.values():
            if m.rebalance_timeout_ms > best:
                best = m.rebalance_timeout_ms
        return best

    def add(self, member: Member, respond: Respond | None = None) -> None:
        instance_id = member.group_instance_id
        if instance_id is not None:
            if instance_id in self.static_members:
                raise RuntimeError(f"static member {instance_id} is already a member of {self.group_id}")
            self.static_members[instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member.protocols, 1)
        member.awaiting_join = respond
        if respond is not None:
            self.num_members_awaiting_join += 1
        self.pending_join_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member or pending id; a removed leader is replaced by the next member in order.

        Parked requests of the removed member are *not* answered here (Kafka neither)."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member.protocols, -1)
            if member.awaiting_join is not None:
                self.num_members_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id is not None and self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: Member, protocols: Protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, respond: Respond | None) -> None:
        self._count_protocols(member.protocols, -1)
        member.protocols = protocols
        self._count_protocols(protocols, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if respond is not None and member.awaiting_join is None:
            self.num_members_awaiting_join += 1
        elif respond is None and member.awaiting_join is not None:
            self.num_members_awaiting_join -= 1
        member.awaiting_join = respond

    def take_join_callback(self, member: Member) -> Respond | None:
        """Un-park the member's JoinGroup; returns its callback (None if not parked)."""
        respond = member.awaiting_join
        if respond is not None:
            member.awaiting_join = None
            self.num_members_awaiting_join -= 1
        return respond

    @staticmethod
    def take_sync_callback(member: Member) -> Respond | None:
        respond = member.awaiting_sync
        member.awaiting_sync = None
        return respond

    def replace_static_member(self, instance_id: str, old_member_id: str,
                              new_member_id: str) -> tuple[Member, Member]:
        """Re-key a static member (KIP-345); returns (new member, old member).

        The old member's parked callbacks stay on the returned old member (taken off the
        group's join counter) for the caller to fence; the new member keeps protocols,
        timeouts and assignment; the leader moves with it."""
        old = self.members.pop(old_member_id, None)
        if old is None:
            raise KeyError(f"cannot replace unknown member {old_member_id}")
        if old.awaiting_join is not None:
            self.num_members_awaiting_join -= 1
        new = Member(new_member_id, old.group_instance_id, old.client_id, old.client_host,
                     old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                     old.protocols, old.assignment, old.joined_ms)
        self.members[new_member_id] = new
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        return new, old

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick the first parked member; False if none."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """``validateMember``: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, or None when valid."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # ---- protocols -----------------------------------------------------------
    def _count_protocols(self, protocols: Protocols, delta: int) -> None:
        counts = self.supported_protocols
        for name, _ in protocols:
            counts[name] = counts.get(name, 0) + delta

    def supports_protocols(self, protocol_type: str, protocols: Protocols) -> bool:
        if self.state == EMPTY:
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type is None or self.protocol_type != protocol_type:
            return False
        n = len(self.members)
        counts = self.supported_protocols
        for name, _ in protocols:
            if counts.get(name, 0) == n:
                return True
        return False

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """The vote: every member votes its first candidate; most votes wins; ties go to the
        protocol the leader prefers."""
        if not self.members:
            raise RuntimeError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best = max(votes.values())
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is not None:
            for name, _ in leader.protocols:
                if votes.get(name) == best:
                    return name
        for name, count in votes.items():
            if count == best:
                return name
        raise AssertionError("unreachable")

    # ---- generations -----------------------------------------------------------
    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Union of the members' subscribed topics (consumer protocol only); None = unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(_subscription_topics(member.metadata(self.protocol_name)))
        except (ValueError, KeyError):
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol()
        return topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> str:
        """Bump the generation; CompletingRebalance with members, Empty without. Returns the state left."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            previous = self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            previous = self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()
        return previous

    def current_member_list(self) -> list[dict]:
        """The leader's JoinGroup ``members``: every member's metadata for the selected protocol."""
        protocol = self.protocol_name
        return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata(protocol)} for m in self.members.values()]

    def as_described_group(self) -> dict:
        """DescribeGroups' entry of the group (its members' metadata and assignments once Stable)."""
        stable = self.state == STABLE
        protocol = self.protocol_name
        return {"error_code": 0, "error_message": None, "group_id": self.group_id, "group_state": self.state,
                "protocol_type": self.protocol_type or "", "protocol_data": protocol if stable else "",
                "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "member_metadata": m.metadata(protocol) if stable else b"",
                             "member_assignment": m.assignment} for m in self.members.values()],
                "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED}

    # ---- what the runtime and the offset manager ask of a group ---------------------
    type = "classic"

    def is_empty(self) -> bool:
        return self.state == EMPTY

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_id: int,
                               v9: bool = False, topics=None, topic_id=None, *,
                               transactional: bool = False) -> ErrorCode | None:
        """``ClassicGroup.validateOffsetCommit``: the error of a commit, or None. ``transactional``
        (TxnOffsetCommit, KIP-447): without a member id, generation or instance id (v0-2) the commit is
        accepted whatever the state, and the group's state is not enforced (no REBALANCE_IN_PROGRESS)."""
        state = self.state
        if state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and state == EMPTY:
            return None   # admin / manual assignment commits to an empty group
        if generation_id >= 0 or member_id or instance_id is not None:
            error = self.validate_member(member_id, instance_id)
            if error is not None:
                return error
            if generation_id != self.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif state != EMPTY and not transactional:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if state == COMPLETING_REBALANCE and not transactional:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """A classic group checks no member on a fetch."""
        return None

    def validate_offset_delete(self) -> ErrorCode | None:
        """``ClassicGroup.validateOffsetDelete``: only an Empty group, or one of the consumer protocol."""
        if self.state != EMPTY and not self.uses_consumer_protocol():
            return ErrorCode.NON_EMPTY_GROUP
        return None

    def offset_expiration_condition(self):
        """Kafka's ``ClassicGroup.offsetExpirationCondition``: a function giving the time an offset's
        retention counts from, or None when the group's offsets do not expire now. A group of a
        protocol type: Empty, from when it became Empty; Stable with the consumer protocol and known
        subscriptions, from each commit; otherwise never. A simple group: from each commit."""
        if self.protocol_type is not None:
            if self.state == EMPTY:
                since = self.current_state_timestamp
                return lambda offset: since
            if self.uses_consumer_protocol() and self.subscribed_topics is not None and self.state == STABLE:
                return _commit_time
            return None
        return _commit_time

    def __repr__(self) -> str:
        return (f"ClassicGroup({self.group_id!r}, state={self.state}, generation={self.generation_id}, "
                f"protocol_type={self.protocol_type!r}, protocol={self.protocol_name!r}, "
                f"leader={self.leader_id!r}, members={list(self.members)})")


def _commit_time(offset) -> int:
    return offset.commit_timestamp
