"""The classic group's record (Kafka's ``GroupMetadataKey`` / ``GroupMetadataValue``): what a
classic group writes to its offsets partition's log, and its replay.

As in Kafka, a classic operation builds the record from the group (Stable: its members and
assignments; Empty: none) and does not replay it (``CoordinatorResult.replayRecords`` false in
Kafka's ``GroupMetadataManager``); the replay builds the group at load.
"""
from __future__ import annotations

from ... import storage as _st
from ...storage import MAX_FRAME, GroupMetadataKey, GroupMetadataValue, MemberMetadata
from .group import DEAD, EMPTY, STABLE, ClassicGroup, Member

__all__ = ["MAX_FRAME", "group_record", "group_record_size", "group_tombstone", "replay"]


def group_record(group: ClassicGroup) -> tuple:
    protocol = group.protocol_name
    members = ()
    if group.state != EMPTY:
        members = tuple(MemberMetadata(
            m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.session_timeout_ms, m.metadata(protocol) if protocol is not None else b"", m.assignment)
            for m in group.members.values())
    ts = group.current_state_timestamp
    value = GroupMetadataValue(group.protocol_type, group.generation_id, protocol,
                               group.leader_id if members else None, -1 if ts is None else ts, members)
    return GroupMetadataKey(group.group_id), value


def group_record_size(group: ClassicGroup) -> int:
    """The size of the group's record in the log (what message.max.bytes limits)."""
    return _st.payload_size(*group_record(group))


def group_tombstone(group_id: str) -> tuple:
    return GroupMetadataKey(group_id), None


def replay(groups: dict, key: GroupMetadataKey, value: GroupMetadataValue | None, now: int) -> None:
    """Kafka's ``replay(GroupMetadataKey, GroupMetadataValue)``: the group the record describes
    replaces any group of its id (Stable with its members, Empty without); a tombstone removes the
    classic group of that id."""
    group_id = key.group
    if value is None:
        group = groups.get(group_id)
        if group is not None and group.type == "classic":
            del groups[group_id]
        return
    ts = value.current_state_timestamp
    group = ClassicGroup(group_id, now if ts == -1 else ts)
    group.protocol_type = value.protocol_type
    group.generation_id = value.generation
    group.protocol_name = value.protocol_name
    for m in value.members:
        group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                         m.session_timeout_ms, value.protocol_type or "", [(value.protocol_name or "", m.subscription)],
                         m.assignment, joined_ms=now))
    group.protocol_type = value.protocol_type
    group.leader_id = value.leader if value.members else None
    group.state = STABLE if value.members else EMPTY
    group.previous_state = DEAD
    group.subscribed_topics = group.compute_subscribed_topics()
    groups[group_id] = group
