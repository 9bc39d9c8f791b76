"""The records of groupcoord's logs, declared as Kafka declares its stored records (the
``*Key.json`` / ``*Value.json`` schemas of its group coordinator) and read and written by the
message codec (:mod:`groupcoord.protocol.schema`).

A record's payload is its key (an int16 kind, Kafka's key version, then the key's fields), an int8
(1: a value follows; 0: a tombstone) and the value (an int16 version, 0, then its fields). The
offsets logs hold OffsetCommit (kind 1) and GroupMetadata (kind 2) records, the transactional offset
commits (TxnOffsetCommit, kind 1000) and their transactions' markers (TxnMarker, kind 1001), and the
records each other group type registers (:meth:`Log.register`; the consumer groups' kinds 3, 5 to 8 and 16, Kafka's,
their values flexible as Kafka's), the cluster metadata log Topic (kind 1), EndOffset (kind 2) and
Config (kind 3) records, the share state log ShareSnapshot (kind 0) records. The classes of :mod:`.storage` are what the rest of
the coordinator uses; these declarations fix their bytes.
"""
from __future__ import annotations

import struct

from groupcoord.protocol.errors import DecodeError, EncodeError
from groupcoord.protocol.schema import A, F, MessageSpec, S, snake


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

def group_record_value(name: str, fields: list) -> MessageSpec:
    """The value of a record of a group type beyond the classic one, as Kafka 4 declares them:
    flexible (compact strings, tagged fields); its key is a :func:`group_record_key`."""
    return MessageSpec(name, fields, valid="0", flexible="0+")


def group_record_key(name: str, name_field: str | None = None) -> MessageSpec:
    """The key of a record of a group type beyond the classic one: the group id, then the name of
    what the record tells of in the group (a member id, say), if it tells of one."""
    fields = [F("GroupId", "string")]
    if name_field is not None:
        fields.append(F(name_field, "string"))
    return _record(name, fields)


class Log(dict):
    """The records of one kind of log: key kind -> (key, value). A group type registers its own
    records (:meth:`register`) when its package is imported."""

    def __init__(self, name: str, records: dict) -> None:
        super().__init__(records)
        self.name = name
        #: kind -> the key field naming what a registered record tells of (its key's second field), or None
        self.name_fields: dict[int, str | None] = {}

    def register(self, kind: int, key: MessageSpec, value: MessageSpec) -> int:
        """Add the record of that kind (Kafka's apiKey of the record); returns the kind."""
        if self.get(kind, (key, value)) != (key, value):
            raise ValueError(f"{self.name} log: record kind {kind} is {self[kind][0].name} already")
        self[kind] = (key, value)
        self.name_fields[kind] = snake(key.fields[1].name) if len(key.fields) > 1 else None
        return kind


# transactional offset commits (KIP-447). Kafka writes a TxnOffsetCommit's offsets as OffsetCommit records in
# a transactional batch (its producer id and epoch), and the transaction's end as a control batch
# (EndTxnMarker); the offsets logs here are frames, not batches, so both are records of their own, of
# kinds outside Kafka's CoordinatorRecordType range: a pending offset by (producer id, group, topic,
# partition), and the marker by producer id (what compaction keeps: its latest). ``Superseded``: an
# offset a later commit of the partition has overtaken (Kafka compares the records' log offsets in
# OffsetMetadataManager.replayEndTransactionMarker; kept in the record, so compaction keeps it)
TXN_OFFSET_COMMIT_KEY = _record("TxnOffsetCommitKey", [
    F("ProducerId", "int64"),
    F("Group", "string", nullable=_N),
    F("Topic", "string", nullable=_N),
    F("Partition", "int32"),
])
TXN_OFFSET_COMMIT_VALUE = _record("TxnOffsetCommitValue", [
    F("ProducerEpoch", "int16"),
    F("Offset", "int64"),
    F("LeaderEpoch", "int32"),
    F("Metadata", "string", nullable=_N),
    F("CommitTimestamp", "int64"),
    F("ExpireTimestamp", "int64"),
    F("Superseded", "bool"),
])
TXN_MARKER_KEY = _record("TxnMarkerKey", [
    F("ProducerId", "int64"),
])
TXN_MARKER_VALUE = _record("TxnMarkerValue", [      # Kafka's EndTxnMarker: ControlType 0 abort, 1 commit
    F("ProducerEpoch", "int16"),
    F("ControlType", "int16"),
    F("CoordinatorEpoch", "int32"),
])

#: the offsets logs: offset commits, transactional offset commits and their markers and the classic
#: groups' records here, the other group types' records registered by their packages
OFFSETS_LOG = Log("offsets", {
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    1000: (TXN_OFFSET_COMMIT_KEY, TXN_OFFSET_COMMIT_VALUE),
    1001: (TXN_MARKER_KEY, TXN_MARKER_VALUE),
})
# a dynamic config of a resource (a group's, set with IncrementalAlterConfigs): Kafka keeps them in its
# metadata log as ConfigRecord (ResourceType, ResourceName, Name, Value); here the key names the config,
# a tombstone deletes it
CONFIG_KEY = _record("ConfigKey", [
    F("ResourceType", "int8"),
    F("ResourceName", "string", nullable=_N),
    F("Name", "string", nullable=_N),
])
CONFIG_VALUE = _record("ConfigValue", [
    F("Value", "string", nullable=_N),
])
# the producer ids handed out (Kafka's ProducerIdsRecord of its metadata log): ids below NextProducerId
# are taken, so a restart never hands one out again
PRODUCER_IDS_KEY = _record("ProducerIdsKey", [])
PRODUCER_IDS_VALUE = _record("ProducerIdsValue", [
    F("BrokerId", "int32"),
    F("BrokerEpoch", "int64"),
    F("NextProducerId", "int64"),
])
METADATA_LOG = Log("metadata", {1: (TOPIC_KEY, TOPIC_VALUE), 2: (END_OFFSET_KEY, END_OFFSET_VALUE),
                                3: (CONFIG_KEY, CONFIG_VALUE), 4: (PRODUCER_IDS_KEY, PRODUCER_IDS_VALUE)})

# the share coordinator's log (Kafka's __share_group_state): a share-partition's whole state, as Kafka's
# ShareSnapshotKey/ShareSnapshotValue (record type 0) declare it; groupcoord writes a snapshot at each
# change (no ShareUpdate records), so the latest record of a key is its state and compaction keeps it
SHARE_SNAPSHOT_KEY = _record("ShareSnapshotKey", [
    F("GroupId", "string"),
    F("TopicId", "uuid"),
    F("Partition", "int32"),
])
SHARE_SNAPSHOT_VALUE = group_record_value("ShareSnapshotValue", [
    F("SnapshotEpoch", "int32"),
    F("StateEpoch", "int32"),
    F("LeaderEpoch", "int32"),
    F("StartOffset", "int64"),
    F("DeliveryCompleteCount", "int32", tag=0, default=-1),
    F("CreateTimestamp", "int64"),
    F("WriteTimestamp", "int64"),
    F("StateBatches", A(S(
        F("FirstOffset", "int64"),
        F("LastOffset", "int64"),
        F("DeliveryState", "int8"),
        F("DeliveryCount", "int16"),
    ))),
])
SHARE_STATE_LOG = Log("share state", {0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE)})

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
