"""A consumer group's records (Kafka 4.x's ``GroupCoordinatorRecordHelpers`` for consumer groups,
and ``GroupMetadataManager.replay`` of them): what each step of an operation writes, and the replay
that is the only way the group's state changes, live and at load.

The records (declared here, registered in :mod:`...records`' offsets log): the group epoch with the subscribed topics' metadata
hash (3), one member's metadata (5), the target assignment's epoch (6), one member's target (7), one
member's current assignment (8), one resolved regular expression (16). A member that goes has its
8, 7 and 5 tombstoned, in that order (its partitions are released before it is removed).
"""
from __future__ import annotations

import hashlib
from dataclasses import replace

from groupcoord.coordinator import records as _rec
from groupcoord.coordinator.storage import GroupRecordKey
from groupcoord.protocol.schema import A, F, S

from .group import (ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, MemberState, OwnershipError,
                    ResolvedRegularExpression, uuid_order)

_STATE_CODE = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
               MemberState.UNRELEASED_PARTITIONS: 2, MemberState.UNKNOWN: 127}
_STATE_OF = {code: state for state, code in _STATE_CODE.items()}


# ============================================================================ declarations
# As Kafka 4.x declares them (``ConsumerGroup*Key.json`` / ``*Value.json``): keys in the classic
# encoding, values flexible. Each is registered in the offsets logs under its kind (Kafka's apiKey).
_key, _value, _register = _rec.group_record_key, _rec.group_record_value, _rec.OFFSETS_LOG.register

_TOPIC_PARTITIONS = A(S(
    F("TopicId", "uuid"),
    F("Partitions", "[]int32"),
))
_EPOCHED_PARTITIONS = A(S(
    F("TopicId", "uuid"),
    F("Partitions", "[]int32"),
    F("AssignmentEpochs", "[]int32", nullable="0+", tag=0, default=None),    # KIP-1251 (Kafka 4.3)
))

#: the group epoch and the subscribed topics' metadata hash
EPOCH = _register(3, _key("ConsumerGroupMetadataKey"), _value("ConsumerGroupMetadataValue", [
    F("Epoch", "int32"),
    F("MetadataHash", "int64", tag=0, default=0),
]))
#: one member's metadata
MEMBER = _register(5, _key("ConsumerGroupMemberMetadataKey", "MemberId"), _value(
    "ConsumerGroupMemberMetadataValue", [
        F("InstanceId", "string", nullable="0+"),
        F("RackId", "string", nullable="0+"),
        F("ClientId", "string"),
        F("ClientHost", "string"),
        F("SubscribedTopicNames", "[]string"),
        F("SubscribedTopicRegex", "string", nullable="0+"),
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("ServerAssignor", "string", nullable="0+"),
        F("ClassicMemberMetadata", S(
            F("SessionTimeoutMs", "int32"),
            F("SupportedProtocols", A(S(
                F("Name", "string"),
                F("Metadata", "bytes"),
            ))),
        ), nullable="0+", tag=0, default=None),
    ]))
#: the target assignment's epoch
TARGET_EPOCH = _register(6, _key("ConsumerGroupTargetAssignmentMetadataKey"), _value(
    "ConsumerGroupTargetAssignmentMetadataValue", [
        F("AssignmentEpoch", "int32"),
        F("AssignmentTimestamp", "int64", tag=0, default=0),
    ]))
#: one member's target assignment
TARGET = _register(7, _key("ConsumerGroupTargetAssignmentMemberKey", "MemberId"), _value(
    "ConsumerGroupTargetAssignmentMemberValue", [
        F("TopicPartitions", _TOPIC_PARTITIONS),
    ]))
#: one member's current assignment
CURRENT = _register(8, _key("ConsumerGroupCurrentMemberAssignmentKey", "MemberId"), _value(
    "ConsumerGroupCurrentMemberAssignmentValue", [
        F("MemberEpoch", "int32"),
        F("PreviousMemberEpoch", "int32"),
        F("State", "int8"),
        F("AssignedPartitions", _EPOCHED_PARTITIONS),
        F("PartitionsPendingRevocation", _EPOCHED_PARTITIONS),
    ]))
#: one resolved regular expression
REGEX = _register(16, _key("ConsumerGroupRegularExpressionKey", "RegularExpression"), _value(
    "ConsumerGroupRegularExpressionValue", [
        F("Topics", "[]string"),
        F("Version", "int64"),
        F("Timestamp", "int64"),
    ]))
#: every kind of the consumer groups' records
KINDS = (EPOCH, MEMBER, TARGET_EPOCH, TARGET, CURRENT, REGEX)


def metadata_hash(subscription_metadata: dict) -> int:
    """A signed 64-bit hash of the subscribed topics' metadata (KIP-1101's MetadataHash, Kafka
    4.1+: it tells at load whether a topic changed while the coordinator was away). Kafka hashes
    with Murmur3 over its own layout; this one is ours, compared only with itself."""
    if not subscription_metadata:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name, info in sorted(subscription_metadata.items()):
        h.update(f"{name}\0{info.topic_id}\0{info.partitions}\n".encode())
    return int.from_bytes(h.digest(), "big", signed=True)


# ============================================================================ the records
def member_metadata(m: ConsumerGroupMember) -> tuple:
    """What record 5 holds of a member (compared to know whether to write it)."""
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
            m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic)


def member_current(m: ConsumerGroupMember) -> tuple:
    """What record 8 holds of a member."""
    return m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation


def member_metadata_value(m: ConsumerGroupMember) -> dict:
    return {"instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor, "classic_member_metadata": None if m.classic is None else {
                "session_timeout_ms": m.classic.session_timeout_ms,
                "supported_protocols": [{"name": n, "metadata": d} for n, d in m.classic.protocols]}}


def _epoched(parts: dict) -> list[dict]:
    out = []
    for topic_id, ps in sorted(parts.items(), key=lambda kv: uuid_order(kv[0])):
        order = sorted(ps)
        out.append({"topic_id": topic_id, "partitions": order, "assignment_epochs": [ps[p] for p in order]})
    return out


def current_assignment_value(m: ConsumerGroupMember) -> dict:
    return {"member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch,
            "state": _STATE_CODE[m.state], "assigned_partitions": _epoched(m.assigned),
            "partitions_pending_revocation": _epoched(m.pending_revocation)}


def target_value(target: dict) -> dict:
    return {"topic_partitions": [{"topic_id": t, "partitions": sorted(ps)}
                                 for t, ps in sorted(target.items(), key=lambda kv: uuid_order(kv[0]))]}


def epoch_record(group_id: str, epoch: int, digest: int) -> tuple:
    return GroupRecordKey(EPOCH, group_id), {"epoch": epoch, "metadata_hash": digest}


def target_epoch_record(group_id: str, epoch: int, timestamp: int = 0) -> tuple:
    """The target assignment's epoch, and when it was computed (Kafka 4.3's AssignmentTimestamp, KIP-1263;
    0: unknown, or before 4.3)."""
    return GroupRecordKey(TARGET_EPOCH, group_id), {"assignment_epoch": epoch, "assignment_timestamp": timestamp}


def target_record(group_id: str, member_id: str, target: dict) -> tuple:
    return GroupRecordKey(TARGET, group_id, member_id), target_value(target)


def regex_record(group_id: str, regex: str, resolved: ResolvedRegularExpression | None) -> tuple:
    value = None if resolved is None else {"topics": sorted(resolved.topics), "version": resolved.version,
                                           "timestamp": resolved.timestamp_ms}
    return GroupRecordKey(REGEX, group_id, regex), value


def member_records(group_id: str, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> list[tuple]:
    """The records that put ``new`` in place of ``old`` (None: a new member): its metadata (5) and
    its current assignment (8), each only when it changed (``hasMemberSubscriptionChanged``, and
    the reconciliation's ``newConsumerGroupCurrentAssignmentRecord``)."""
    out = []
    if old is None or member_metadata(old) != member_metadata(new):
        out.append((GroupRecordKey(MEMBER, group_id, new.member_id), member_metadata_value(new)))
    if old is None or member_current(old) != member_current(new):
        out.append((GroupRecordKey(CURRENT, group_id, new.member_id), current_assignment_value(new)))
    return out


def member_tombstones(group_id: str, member_id: str) -> list[tuple]:
    """A member goes: its current assignment, target and metadata, tombstoned in that order."""
    return [(GroupRecordKey(CURRENT, group_id, member_id), None),
            (GroupRecordKey(TARGET, group_id, member_id), None),
            (GroupRecordKey(MEMBER, group_id, member_id), None)]


def creation_records(group: ConsumerGroup) -> list[tuple]:
    """Every record of a group made whole (``createConsumerGroupRecords``: a conversion)."""
    gid = group.group_id
    out = [(GroupRecordKey(MEMBER, gid, m.member_id), member_metadata_value(m)) for m in group.members.values()]
    out.append(epoch_record(gid, group.group_epoch, metadata_hash(group.subscription_metadata)))
    out += [target_record(gid, mid, t) for mid, t in group.target.items()]
    out.append(target_epoch_record(gid, group.assignment_epoch))
    out += [(GroupRecordKey(CURRENT, gid, m.member_id), current_assignment_value(m)) for m in group.members.values()]
    out += [regex_record(gid, r, v) for r, v in sorted(group.resolved_regexes.items())]
    return out


def tombstones(group: ConsumerGroup) -> list[tuple]:
    """The tombstones of every record of the group (``createGroupTombstoneRecords``)."""
    gid = group.group_id
    out = []
    for member_id in sorted(set(group.members) | set(group.target)):
        out += member_tombstones(gid, member_id)
    out += [regex_record(gid, regex, None) for regex in sorted(group.resolved_regexes)]
    out.append((GroupRecordKey(TARGET_EPOCH, gid), None))
    out.append((GroupRecordKey(EPOCH, gid), None))
    return out


# ============================================================================ replay
def _classic(value: dict | None) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    return ClassicMemberMetadata(value["session_timeout_ms"],
                                 tuple((p["name"], p["metadata"]) for p in value["supported_protocols"]))


def _targets(entries) -> dict:
    return {e["topic_id"]: frozenset(e["partitions"]) for e in entries if e["partitions"]}


def _epoched_parts(entries, default_epoch: int) -> dict:
    """Partitions with their assignment epochs; a record written before KIP-1251 has none, and the
    member's epoch stands in for them."""
    out = {}
    for e in entries:
        ps = e["partitions"]
        if ps:
            epochs = e.get("assignment_epochs")
            if epochs is None or len(epochs) != len(ps):
                epochs = [default_epoch] * len(ps)
            out[e["topic_id"]] = dict(zip(ps, epochs))
    return out


def replay(groups: dict, key: GroupRecordKey, value: dict | None, now: int, problems: list | None = None) -> None:
    """Apply one record to the consumer group of its key in ``groups`` (the registry), as Kafka's
    ``GroupMetadataManager.replay`` of these records; any record but a tombstone brings the group
    (``getOrMaybeCreatePersistedConsumerGroup``). ``problems``: at load, where a current assignment
    that gives a partition owned by another member (a log written by something else) is reported,
    the member kept without partitions in the UNKNOWN state; live, that raises OwnershipError."""
    group = groups.get(key.group)
    if group is not None and group.type != "consumer":
        group = None
    kind = key.kind
    if group is None:
        if value is None:
            return
        group = groups[key.group] = ConsumerGroup(key.group, now)
    if kind == EPOCH:
        if value is None:
            del groups[key.group]
        else:
            group.group_epoch = value["epoch"]
            group.metadata_hash = value["metadata_hash"]
    elif kind == MEMBER:
        member_id = key.name
        if value is None:
            group.remove_member(member_id)
            return
        old = group.members.get(member_id) or ConsumerGroupMember(member_id, joined_ms=now)
        group.update_member(replace(
            old, instance_id=value["instance_id"], rack_id=value["rack_id"], client_id=value["client_id"],
            client_host=value["client_host"],
            subscribed_topic_names=tuple(sorted(set(value["subscribed_topic_names"]))),
            subscribed_topic_regex=value["subscribed_topic_regex"],
            rebalance_timeout_ms=value["rebalance_timeout_ms"], server_assignor=value["server_assignor"],
            classic=_classic(value["classic_member_metadata"])))
    elif kind == CURRENT:
        old = group.members.get(key.name)
        if value is None:
            if old is not None:       # the partitions are released (Kafka: epoch -1, nothing owned)
                group.update_member(replace(old, member_epoch=-1, previous_member_epoch=-1, assigned={},
                                            pending_revocation={}))
            return
        if old is None:
            old = ConsumerGroupMember(key.name, joined_ms=now)
        epoch = value["member_epoch"]
        new = replace(old, member_epoch=epoch, previous_member_epoch=value["previous_member_epoch"],
                      state=_STATE_OF.get(value["state"], MemberState.UNKNOWN),
                      assigned=_epoched_parts(value["assigned_partitions"], epoch),
                      pending_revocation=_epoched_parts(value["partitions_pending_revocation"], epoch))
        try:
            group.update_member(new)
        except OwnershipError as e:
            if problems is None:
                raise
            problems.append((key.name, f"member {key.name}: {e}; loaded without partitions"))
            group.update_member(replace(new, assigned={}, pending_revocation={}, state=MemberState.UNKNOWN))
    elif kind == TARGET:
        if value is None:
            group.target.pop(key.name, None)
        else:
            group.target[key.name] = _targets(value["topic_partitions"])
    elif kind == TARGET_EPOCH:
        if value is not None:
            group.assignment_epoch = value["assignment_epoch"]
            group.assignment_timestamp = value.get("assignment_timestamp", 0)
    elif kind == REGEX:
        if value is None:
            group.resolved_regexes.pop(key.name, None)
        else:
            group.resolved_regexes[key.name] = ResolvedRegularExpression(
                frozenset(value["topics"]), value["version"], value["timestamp"])
