"""The records of groupcoord's logs, declared as Kafka declares its stored records (the
``*Key.json`` / ``*Value.json`` schemas of its group coordinator) and read and written by the
message codec (:mod:`groupcoord.protocol.schema`).

A record's payload is its key (an int16 kind, Kafka's key version, then the key's fields), an int8
(1: a value follows; 0: a tombstone) and the value (an int16 version, 0, then its fields). The
offsets logs hold OffsetCommit (kind 1) and GroupMetadata (kind 2) records and the consumer groups'
records (kinds 3, 5 to 8 and 16, Kafka's: their values flexible as Kafka's), the cluster metadata log
Topic (kind 1) and EndOffset (kind 2) records. The classes of :mod:`.storage` are what the rest of
the coordinator uses; these declarations fix their bytes.
"""
from __future__ import annotations

import struct

from groupcoord.protocol.errors import DecodeError, EncodeError
from groupcoord.protocol.schema import A, F, MessageSpec, S


def _record(name: str, fields: list) -> MessageSpec:
    return MessageSpec(name, fields, valid="0", flexible=None)


_N = "0+"       # nullable: the earlier hand-written encoder wrote any string as null (-1) when None

OFFSET_COMMIT_KEY = _record("OffsetCommitKey", [
    F("Group", "string", nullable=_N),
    F("Topic", "string", nullable=_N),
    F("Partition", "int32"),
])
OFFSET_COMMIT_VALUE = _record("OffsetCommitValue", [
    F("Offset", "int64"),
    F("LeaderEpoch", "int32"),
    F("Metadata", "string", nullable=_N),
    F("CommitTimestamp", "int64"),
    F("ExpireTimestamp", "int64"),
])
GROUP_METADATA_KEY = _record("GroupMetadataKey", [
    F("Group", "string", nullable=_N),
])
GROUP_METADATA_VALUE = _record("GroupMetadataValue", [
    F("ProtocolType", "string", nullable=_N),
    F("Generation", "int32"),
    F("ProtocolName", "string", nullable=_N),
    F("Leader", "string", nullable=_N),
    F("CurrentStateTimestamp", "int64"),
    F("Members", A(S(
        F("MemberId", "string", nullable=_N),
        F("GroupInstanceId", "string", nullable=_N),
        F("ClientId", "string", nullable=_N),
        F("ClientHost", "string", nullable=_N),
        F("RebalanceTimeoutMs", "int32"),
        F("SessionTimeoutMs", "int32"),
        F("Subscription", "bytes", nullable=_N),
        F("Assignment", "bytes", nullable=_N),
    ))),
])
TOPIC_KEY = _record("TopicKey", [
    F("Name", "string", nullable=_N),
])
TOPIC_VALUE = _record("TopicValue", [
    F("TopicId", "uuid"),
    F("Partitions", "int32"),
    F("ReplicationFactor", "int16"),
    F("Configs", A(S(
        F("Name", "string", nullable=_N),
        F("Value", "string", nullable=_N),
    ))),
])
END_OFFSET_KEY = _record("EndOffsetKey", [
    F("TopicId", "uuid"),
    F("Partition", "int32"),
])
END_OFFSET_VALUE = _record("EndOffsetValue", [
    F("EndOffset", "int64"),
])

# The consumer groups' records (KIP-848), as Kafka 4.x declares them: keys in the classic encoding,
# values flexible (compact strings, tagged fields). Key kinds are Kafka's apiKeys of the records.
def _value(name: str, fields: list) -> MessageSpec:
    return MessageSpec(name, fields, valid="0", flexible="0+")


_TOPIC_PARTITIONS = A(S(
    F("TopicId", "uuid"),
    F("Partitions", "[]int32"),
))
CONSUMER_GROUP_METADATA_KEY = _record("ConsumerGroupMetadataKey", [
    F("GroupId", "string"),
])
CONSUMER_GROUP_METADATA_VALUE = _value("ConsumerGroupMetadataValue", [
    F("Epoch", "int32"),
    F("MetadataHash", "int64", tag=0, default=0),
])
CONSUMER_GROUP_MEMBER_METADATA_KEY = _record("ConsumerGroupMemberMetadataKey", [
    F("GroupId", "string"),
    F("MemberId", "string"),
])
CONSUMER_GROUP_MEMBER_METADATA_VALUE = _value("ConsumerGroupMemberMetadataValue", [
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
])
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _record("ConsumerGroupTargetAssignmentMetadataKey", [
    F("GroupId", "string"),
])
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value("ConsumerGroupTargetAssignmentMetadataValue", [
    F("AssignmentEpoch", "int32"),
    F("AssignmentTimestamp", "int64", tag=0, default=0),
])
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _record("ConsumerGroupTargetAssignmentMemberKey", [
    F("GroupId", "string"),
    F("MemberId", "string"),
])
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value("ConsumerGroupTargetAssignmentMemberValue", [
    F("TopicPartitions", _TOPIC_PARTITIONS),
])
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _record("ConsumerGroupCurrentMemberAssignmentKey", [
    F("GroupId", "string"),
    F("MemberId", "string"),
])
_EPOCHED_PARTITIONS = A(S(
    F("TopicId", "uuid"),
    F("Partitions", "[]int32"),
    F("AssignmentEpochs", "[]int32", nullable="0+", tag=0, default=None),    # KIP-1251 (Kafka 4.3)
))
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value("ConsumerGroupCurrentMemberAssignmentValue", [
    F("MemberEpoch", "int32"),
    F("PreviousMemberEpoch", "int32"),
    F("State", "int8"),
    F("AssignedPartitions", _EPOCHED_PARTITIONS),
    F("PartitionsPendingRevocation", _EPOCHED_PARTITIONS),
])
CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = _record("ConsumerGroupRegularExpressionKey", [
    F("GroupId", "string"),
    F("RegularExpression", "string"),
])
CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = _value("ConsumerGroupRegularExpressionValue", [
    F("Topics", "[]string"),
    F("Version", "int64"),
    F("Timestamp", "int64"),
])

#: the consumer groups' record kinds (Kafka's apiKey of each record)
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16


class Log(dict):
    """The records of one kind of log: key kind -> (key, value)."""

    def __init__(self, name: str, records: dict) -> None:
        super().__init__(records)
        self.name = name


OFFSETS_LOG = Log("offsets", {
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    CONSUMER_GROUP_METADATA: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    CONSUMER_GROUP_MEMBER_METADATA: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
                                                CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
                                              CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
                                               CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    CONSUMER_GROUP_REGULAR_EXPRESSION: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
})
METADATA_LOG = Log("metadata", {1: (TOPIC_KEY, TOPIC_VALUE), 2: (END_OFFSET_KEY, END_OFFSET_VALUE)})

_KIND = struct.Struct(">h")
_VALUE_HEADER = struct.Struct(">bh")       # a value follows, its version
_TOMBSTONE = b"\x00"


def encode(log: Log, kind: int, key: dict, value: dict | None) -> tuple[bytes, bytes]:
    """(the key's bytes, the whole payload) of a record of ``log``. Raises ValueError for fields
    the record cannot hold."""
    key_spec, value_spec = log[kind]
    try:
        key_bytes = _KIND.pack(kind) + key_spec.codec(0).encode(key)
        if value is None:
            return key_bytes, key_bytes + _TOMBSTONE
        return key_bytes, key_bytes + _VALUE_HEADER.pack(1, 0) + value_spec.codec(0).encode(value)
    except EncodeError as exc:
        raise ValueError(f"{log.name} log record: {exc}") from None


def decode(log: Log, payload) -> tuple[int, dict, dict | None, int]:
    """(kind, key, value or None, length of the key's bytes) of a payload of ``log``. Raises
    ValueError when it is not one (an unknown kind, a field cut short, trailing bytes)."""
    data = bytes(payload)
    try:
        (kind,) = _KIND.unpack_from(data, 0)
        specs = log.get(kind)
        if specs is None:
            raise ValueError(f"unknown {log.name} key version {kind}")
        key, pos = specs[0].codec(0).decode_from(data, 2)
        key_len = pos
        value = None
        if data[pos:pos + 1] != _TOMBSTONE:       # any other marker: a value follows, of any version
            value, pos = specs[1].codec(0).decode_from(data, pos + _VALUE_HEADER.size)
        else:
            pos += 1
    except (DecodeError, struct.error) as exc:
        raise ValueError(str(exc)) from None
    if pos != len(data):
        raise ValueError("trailing bytes in record")
    return kind, key, value, key_len
