"""A share group's records (Kafka's ``GroupCoordinatorRecordHelpers`` for share groups, and
``GroupMetadataManager.replay`` of them): what each step of an operation writes, and the replay that
is the only way the group's state changes, live and at load.

The records, as Kafka 4.1 to 4.3 declare them (``ShareGroup*Key.json`` / ``*Value.json``: keys in
the classic encoding, values flexible; the key version is the record type), registered in
:mod:`...records`' offsets log: one member's metadata (10), the group epoch with the subscribed
topics' metadata hash (11), the target assignment's epoch (12; its AssignmentTimestamp, a tagged
field, came with 4.3), one member's target (13), one member's current assignment (14), and the
group's share-partition state metadata (15: the topics whose share-partition state is being
initialized, is initialized, is being deleted). A member that goes has its 14, 13 and 10 tombstoned,
in that order; a deleted group 14 and 13 of each member, 12, 10 of each member, 15 and 11
(``ShareGroup.createGroupTombstoneRecords``).
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace

from groupcoord.coordinator import records as _rec
from groupcoord.coordinator.storage import GroupRecordKey
from groupcoord.protocol.schema import A, F, S

from ..assignors.spec import uuid_key
from .group import InitMapValue, ShareGroup, ShareGroupMember

# ============================================================================ declarations
_key, _value, _register = _rec.group_record_key, _rec.group_record_value, _rec.OFFSETS_LOG.register

_TOPIC_PARTITIONS = A(S(
    F("TopicId", "uuid"),
    F("Partitions", "[]int32"),
))
_TOPIC_PARTITIONS_INFO = A(S(
    F("TopicId", "uuid"),
    F("TopicName", "string"),
    F("Partitions", "[]int32"),
))

#: one member's metadata
MEMBER = _register(10, _key("ShareGroupMemberMetadataKey", "MemberId"), _value("ShareGroupMemberMetadataValue", [
    F("RackId", "string", nullable="0+"),
    F("ClientId", "string"),
    F("ClientHost", "string"),
    F("SubscribedTopicNames", "[]string"),
]))
#: the group epoch and the subscribed topics' metadata hash
EPOCH = _register(11, _key("ShareGroupMetadataKey"), _value("ShareGroupMetadataValue", [
    F("Epoch", "int32"),
    F("MetadataHash", "int64"),
]))
#: the target assignment's epoch
TARGET_EPOCH = _register(12, _key("ShareGroupTargetAssignmentMetadataKey"), _value(
    "ShareGroupTargetAssignmentMetadataValue", [
        F("AssignmentEpoch", "int32"),
        F("AssignmentTimestamp", "int64", tag=0, default=0),        # Kafka 4.3 (KIP-1263)
    ]))
#: one member's target assignment
TARGET = _register(13, _key("ShareGroupTargetAssignmentMemberKey", "MemberId"), _value(
    "ShareGroupTargetAssignmentMemberValue", [
        F("TopicPartitions", _TOPIC_PARTITIONS),
    ]))
#: one member's current assignment
CURRENT = _register(14, _key("ShareGroupCurrentMemberAssignmentKey", "MemberId"), _value(
    "ShareGroupCurrentMemberAssignmentValue", [
        F("MemberEpoch", "int32"),
        F("PreviousMemberEpoch", "int32"),
        F("State", "int8"),
        F("AssignedPartitions", _TOPIC_PARTITIONS),
    ]))
#: the share-partition state metadata of the group: initializing, initialized, deleting
STATE_PARTITIONS = _register(15, _key("ShareGroupStatePartitionMetadataKey"), _value(
    "ShareGroupStatePartitionMetadataValue", [
        F("InitializingTopics", _TOPIC_PARTITIONS_INFO),
        F("InitializedTopics", _TOPIC_PARTITIONS_INFO),
        F("DeletingTopics", A(S(
            F("TopicId", "uuid"),
            F("TopicName", "string"),
        ))),
    ]))
#: every kind of the share groups' records
KINDS = (MEMBER, EPOCH, TARGET_EPOCH, TARGET, CURRENT, STATE_PARTITIONS)


def metadata_hash(topics: dict[str, tuple[uuid.UUID, int]]) -> int:
    """A signed 64-bit hash of the subscribed topics' metadata (name -> (topic id, partitions)):
    KIP-1101's MetadataHash, which tells a share group that a subscribed topic was created, deleted
    or grew. Kafka hashes with Murmur3 over its own layout; this one is ours, compared only with
    itself."""
    if not topics:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name, (topic_id, partitions) in sorted(topics.items()):
        h.update(f"{name}\0{topic_id}\0{partitions}\n".encode())
    return int.from_bytes(h.digest(), "big", signed=True)


# ============================================================================ the records
def _topic_partitions(parts: dict) -> list[dict]:
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in sorted(parts.items(), key=lambda kv: uuid_key(kv[0]))]


def member_metadata(m: ShareGroupMember) -> tuple:
    """What record 10 holds of a member (compared to know whether to write it)."""
    return m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names


def member_current(m: ShareGroupMember) -> tuple:
    """What record 14 holds of a member."""
    return m.member_epoch, m.previous_member_epoch, m.state, m.assigned


def member_record(group_id: str, m: ShareGroupMember) -> tuple:
    return GroupRecordKey(MEMBER, group_id, m.member_id), {
        "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names)}


def current_record(group_id: str, m: ShareGroupMember) -> tuple:
    return GroupRecordKey(CURRENT, group_id, m.member_id), {
        "member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch, "state": m.state,
        "assigned_partitions": _topic_partitions(m.assigned)}


def epoch_record(group_id: str, epoch: int, digest: int) -> tuple:
    return GroupRecordKey(EPOCH, group_id), {"epoch": epoch, "metadata_hash": digest}


def target_epoch_record(group_id: str, epoch: int, timestamp: int = 0) -> tuple:
    """The target assignment's epoch and when it was computed (Kafka 4.3's AssignmentTimestamp; 0:
    unknown, or before 4.3)."""
    return GroupRecordKey(TARGET_EPOCH, group_id), {"assignment_epoch": epoch, "assignment_timestamp": timestamp}


def target_record(group_id: str, member_id: str, target: dict) -> tuple:
    return GroupRecordKey(TARGET, group_id, member_id), {"topic_partitions": _topic_partitions(target)}


def state_partitions_record(group_id: str, initializing: dict, initialized: dict, deleting: dict) -> tuple:
    """Record 15: ``initializing`` and ``initialized``: topic id -> InitMapValue; ``deleting``: topic
    id -> topic name."""
    def infos(topics: dict) -> list[dict]:
        return [{"topic_id": t, "topic_name": v.name, "partitions": sorted(v.partitions)}
                for t, v in sorted(topics.items(), key=lambda kv: uuid_key(kv[0]))]
    return GroupRecordKey(STATE_PARTITIONS, group_id), {
        "initializing_topics": infos(initializing), "initialized_topics": infos(initialized),
        "deleting_topics": [{"topic_id": t, "topic_name": name}
                            for t, name in sorted(deleting.items(), key=lambda kv: uuid_key(kv[0]))]}


def member_tombstones(group_id: str, member_id: str) -> list[tuple]:
    """A member goes: its current assignment, target and metadata, tombstoned in that order."""
    return [(GroupRecordKey(CURRENT, group_id, member_id), None),
            (GroupRecordKey(TARGET, group_id, member_id), None),
            (GroupRecordKey(MEMBER, group_id, member_id), None)]


def tombstones(group: ShareGroup) -> list[tuple]:
    """The tombstones of every record of the group (``ShareGroup.createGroupTombstoneRecords``)."""
    gid = group.group_id
    members = list(group.members)
    out = [(GroupRecordKey(CURRENT, gid, m), None) for m in members]
    out += [(GroupRecordKey(TARGET, gid, m), None) for m in members]
    out.append((GroupRecordKey(TARGET_EPOCH, gid), None))
    out += [(GroupRecordKey(MEMBER, gid, m), None) for m in members]
    out.append((GroupRecordKey(STATE_PARTITIONS, gid), None))
    out.append((GroupRecordKey(EPOCH, gid), None))
    return out


# ============================================================================ replay
def _parts(entries) -> dict:
    return {e["topic_id"]: frozenset(e["partitions"]) for e in entries if e["partitions"]}


def _init_map(entries, now: int) -> dict:
    return {e["topic_id"]: InitMapValue(e["topic_name"], frozenset(e["partitions"]), now) for e in entries}


def replay(groups: dict, key: GroupRecordKey, value: dict | None, now: int) -> None:
    """Apply one of a share group's records to the group of its key in ``groups`` (the registry), as
    Kafka's ``GroupMetadataManager.replay`` of them: any record but a tombstone brings the group
    (``getOrMaybeCreatePersistedShareGroup``); a tombstone of what is not there is ignored. The
    state-partition metadata's entries are stamped with ``now`` (Kafka: the replay's time)."""
    group = groups.get(key.group)
    if group is not None and group.type != "share":
        group = None
    if group is None:
        if value is None:
            return
        group = groups[key.group] = ShareGroup(key.group, now)
    kind = key.kind
    if kind == EPOCH:
        if value is None:
            del groups[key.group]
        else:
            group.group_epoch = value["epoch"]
            group.metadata_hash = value["metadata_hash"]
    elif kind == MEMBER:
        if value is None:
            group.remove_member(key.name)
            return
        old = group.members.get(key.name) or ShareGroupMember(key.name)
        group.put_member(replace(old, rack_id=value["rack_id"], client_id=value["client_id"],
                                 client_host=value["client_host"],
                                 subscribed_topic_names=tuple(sorted(set(value["subscribed_topic_names"])))))
    elif kind == CURRENT:
        old = group.members.get(key.name)
        if value is None:
            if old is not None:          # its partitions are released (Kafka: epoch -1, nothing assigned)
                group.put_member(replace(old, member_epoch=-1, previous_member_epoch=-1, assigned={}))
            return
        if old is None:
            old = ShareGroupMember(key.name)
        group.put_member(replace(old, member_epoch=value["member_epoch"],
                                 previous_member_epoch=value["previous_member_epoch"], state=value["state"],
                                 assigned=_parts(value["assigned_partitions"])))
    elif kind == TARGET:
        if value is None:
            group.target.pop(key.name, None)
        else:
            group.target[key.name] = _parts(value["topic_partitions"])
    elif kind == TARGET_EPOCH:
        if value is None:
            group.assignment_epoch, group.assignment_timestamp = -1, 0
        else:
            group.assignment_epoch = value["assignment_epoch"]
            group.assignment_timestamp = value.get("assignment_timestamp", 0)
    elif kind == STATE_PARTITIONS:
        group.state_metadata = value is not None
        if value is None:
            group.initializing, group.initialized, group.deleting = {}, {}, set()
        else:
            group.initializing = _init_map(value["initializing_topics"], now)
            group.initialized = _init_map(value["initialized_topics"], now)
            group.deleting = {e["topic_id"] for e in value["deleting_topics"]}
