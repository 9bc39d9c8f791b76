"""Durable coordinator state: one append-only log per offsets-topic partition ("state as a log"),
and one for the cluster's topics.

As Kafka's group coordinator, every change to committed offsets and group metadata is a
record appended to the log of the group's ``__consumer_offsets`` partition
(``abs(javaHash(group_id)) % offsets.topic.num.partitions``); at start the logs are replayed
to rebuild groups and offsets. The core (:mod:`.group.runtime`) only sees the
:class:`Store` interface (``append(partition, records)``); :class:`MemoryStore` (the default)
drops everything, :class:`LogStore` writes files. The cluster (:mod:`.cluster`) writes its topic
changes and end offsets to a :class:`LogStore`'s ``put_topic``, ``delete_topic`` and
``put_end_offset`` when it has one.

File layout: ``DIR/__consumer_offsets-<partition>.log``, a sequence of frames::

    frame   := length:int32  crc:uint32  payload[length - 4]
               (length counts crc + payload; crc is CRC-32C (Castagnoli) of payload)
    payload := key_version:int16  key  has_value:int8  [value]

All integers are big-endian; ``string`` is int16 length + UTF-8 (length -1 = null);
``bytes`` is int32 length + data. Key versions follow Kafka's ``__consumer_offsets`` keys:

* 1 - offset commit. key: group string, topic string, partition int32.
  value: version int16 (=0), offset int64, leader_epoch int32 (-1 none), metadata string,
  commit_timestamp int64, expire_timestamp int64 (-1 none).
* 2 - group metadata. key: group string.
  value: version int16 (=0), protocol_type string?, generation int32, protocol_name string?,
  leader string?, current_state_timestamp int64 (-1 none), members int32 count, each:
  member_id string, group_instance_id string?, client_id string, client_host string,
  rebalance_timeout_ms int32, session_timeout_ms int32, subscription bytes, assignment bytes.

* above 2 - the records of the other group types, as Kafka 4.x writes them, each declared and
  registered by its group type's package (:class:`GroupRecordKey`; the values in Kafka's flexible
  encoding: compact strings and arrays, tagged fields). A consumer group's (KIP-848,
  ``group/consumer/records.py``): the group epoch (3), one member's metadata (5), the target
  assignment's epoch (6), one member's target (7), one member's current assignment (8), one
  resolved regular expression (16). Keys: the group id, plus the member id or the regular
  expression.

* 1000 - transactional offset commit (KIP-447), pending in a producer's transaction. key: producer_id
  int64, group string, topic string, partition int32. value: version int16 (=0), producer_epoch int16,
  then the offset commit's fields (offset int64, leader_epoch int32, metadata string,
  commit_timestamp int64, expire_timestamp int64), superseded int8 (1: a later commit of the
  partition overtook it: the transaction's commit leaves it out).
* 1001 - transaction marker (Kafka's EndTxnMarker control record) of a producer in this partition.
  key: producer_id int64. value: version int16 (=0), producer_epoch int16, control_type int16
  (0 abort, 1 commit), coordinator_epoch int32.

  Kafka writes a TxnOffsetCommit's offsets as OffsetCommit records in a transactional batch and
  the transaction's end as a control batch; these frames carry no batches, hence the two kinds
  (outside Kafka's record types). A transaction's end is one append: the marker, then (commit) an
  offset commit record (1) per offset it made visible, then a tombstone of each of its pending
  offsets (1000), so that compaction (the latest frame of each key) keeps the same state. An
  offset commit tombstone (1) of a partition comes with the tombstones of its pending offsets.

``has_value`` 0 is a tombstone: an offset deleted or expired, a group deleted. A group
metadata value with members is a Stable group; without members, an Empty one.

Topics: ``DIR/__cluster_metadata.log`` holds the cluster's topics in the same frames, with key
versions of its own (a small cousin of KRaft's ``__cluster_metadata`` log); ``uuid`` is 16 bytes:

* 1 - topic. key: name string. value: version int16 (=0), topic_id uuid,
  partitions int32, replication_factor int16, configs int32 count, each: name string, value string?.
  A tombstone: the topic was deleted.
* 2 - partition end offset. key: topic_id uuid, partition int32. value: version int16 (=0),
  end_offset int64. Written at each produce before it is acknowledged; a deleted topic's
  partitions get tombstones. fsynced by :meth:`LogStore.sync`, and with ``fsync="always"`` also
  before any offset commit is written (so an end offset on disk is never below a commit on
  disk), not at each produce.

* 4 - the producer ids handed out (Kafka's ProducerIdsRecord). key: none. value: version int16 (=0),
  broker_id int32, broker_epoch int64, next_producer_id int64: the ids below it are taken. Written and
  fsynced before the first id of a block is handed out.

The data plane's records are kept in segment files (:mod:`.segments`, ``DIR/<topic>-<partition>/``),
the share-partitions' states in ``DIR/__share_group_state.log`` (Kafka's ShareSnapshot records, in
these frames; the latest of each share-partition is its state), and the transactional ids' states in
``DIR/__transaction_state.log`` (Kafka's TransactionLogKey/Value, :mod:`.txn.records`; the latest of each
id is its state, a tombstone its expiry).

Recovery: frames are read in order. A frame is good when its length is plausible (4 to
``MAX_FRAME``), it lies whole within the file, its CRC matches and its payload decodes. At a bad
frame the reader resyncs: it scans forward byte by byte for the next position that holds a good
frame, and goes on from there. So damage in the middle of a log costs only the bytes it hit:

* a torn tail (the last frame is incomplete: its header is cut, or its length runs past the end
  of the file, and no good frame follows; what a crash mid-write leaves; or the file ends in zero
  bytes after its last good frame, what a power loss leaves on ext4 or XFS) is truncated with a
  warning, as a crash is expected to leave it;
* any other damage (bytes skipped before a good frame, or a complete but bad last frame) keeps
  the file as it was beside the log, under a new name that never replaces an earlier one
  (``<log>.damaged-<n>``), logs every skipped byte range at warning level,
  and rewrites the log with its good frames only (temporary file, fsync, rename), so the next
  start is clean.

Compaction: a :class:`LogStore` keeps the latest frame of every live key; when a log grows past
``compact_ratio`` times its live bytes (and at least ``compact_min_bytes``), it is rewritten with
only those frames (tombstones dropped) into a temporary file, fsynced and renamed over the log.
"""
from __future__ import annotations

import os
import struct
import time
import uuid
from dataclasses import dataclass, field
from typing import ClassVar, Iterable, NamedTuple, Protocol

import crc32c as _crc32c
import structlog

from . import records
from .segments import SegmentFiles
from .share.partition import PersisterStateBatch, ShareSnapshot

log = structlog.get_logger("groupcoord.storage")

OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2
TXN_OFFSET_COMMIT_KEY = 1000
TXN_MARKER_KEY = 1001

_HDR = struct.Struct(">iI")
_I32 = struct.Struct(">i")
MAX_FRAME = 64 * 1024 * 1024


# ============================================================================ records
# (the offset commit's key and value are named tuples: every commit makes one of each per partition,
# and a tuple is built at a fraction of a frozen dataclass's cost)
class OffsetCommitKey(NamedTuple):
    group: str
    topic: str
    partition: int

    kind = 1        # (each key's record kind: what the group runtime replays it by)


class OffsetCommitValue(NamedTuple):
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1


class TxnOffsetCommitKey(NamedTuple):
    """A transactional offset commit (KIP-447) pending in the producer's transaction."""
    producer_id: int
    group: str
    topic: str
    partition: int

    kind = TXN_OFFSET_COMMIT_KEY


class TxnOffsetCommitValue(NamedTuple):
    """The offset pending (the OffsetCommitValue fields), with the producer's epoch; ``superseded``:
    a later commit of the partition overtook it, the transaction's commit will not make it visible."""
    producer_epoch: int
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1
    superseded: bool = False


class TxnMarkerKey(NamedTuple):
    """The end of a producer's transaction in this offsets partition (Kafka's EndTxnMarker control
    record): the latest of each producer is kept."""
    producer_id: int

    kind = TXN_MARKER_KEY


class TxnMarkerValue(NamedTuple):
    producer_epoch: int
    control_type: int           # 0 abort, 1 commit (Kafka's ControlRecordType)
    coordinator_epoch: int = 0


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str

    kind: ClassVar[int] = 2


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str | None
    generation: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class TopicKey:
    name: str


@dataclass(frozen=True, slots=True)
class TopicValue:
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class EndOffsetKey:
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class EndOffsetValue:
    end_offset: int


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """A dynamic config of a resource (ConfigResource.Type, its name, the config's name)."""
    resource_type: int
    resource_name: str
    name: str


@dataclass(frozen=True, slots=True)
class ConfigValue:
    value: str


@dataclass(frozen=True, slots=True)
class ProducerIdsKey:
    """The block of producer ids handed out (Kafka's ProducerIdsRecord): one record, its latest the state."""


@dataclass(frozen=True, slots=True)
class ProducerIdsValue:
    next_producer_id: int           # the first id not handed out
    broker_id: int = 0
    broker_epoch: int = 0


@dataclass(frozen=True, slots=True)
class GroupRecordKey:
    """The key of a record of a group type beyond the classic one (Kafka 4.x's ``ConsumerGroup*Key``
    and the like): ``kind`` is the record's kind, registered by the type's package in
    :data:`records.OFFSETS_LOG`; ``name`` what the record tells of in the group (a member id, a
    regular expression), None for the group's own records. Its value is the record's fields as a
    dict (snake_case names, as the codec decodes them)."""
    kind: int
    group: str
    name: str | None = None


Key = OffsetCommitKey | GroupMetadataKey | GroupRecordKey | TxnOffsetCommitKey | TxnMarkerKey
#: an offset commit's value is any (offset, leader epoch, metadata, commit timestamp, expire timestamp)
#: tuple: the log's OffsetCommitValue (expire -1: none) or the offset manager's OffsetAndMetadata
#: (expire None), which it appends as it keeps it
Value = OffsetCommitValue | tuple | GroupMetadataValue | dict | None
Record = tuple  # (Key, Value | None)


# ============================================================================ codec (records.py)
def _offsets_fields(key: Key, value: Value) -> tuple[int, dict, dict | None]:
    if isinstance(key, TxnOffsetCommitKey):
        k = {"producer_id": key.producer_id, "group": key.group, "topic": key.topic, "partition": key.partition}
        if value is None:
            return TXN_OFFSET_COMMIT_KEY, k, None
        if not isinstance(value, TxnOffsetCommitValue):
            raise TypeError(f"not a transactional offset commit value: {value!r}")
        return TXN_OFFSET_COMMIT_KEY, k, value._asdict()
    if isinstance(key, TxnMarkerKey):
        if value is not None and not isinstance(value, TxnMarkerValue):
            raise TypeError(f"not a transaction marker value: {value!r}")
        return TXN_MARKER_KEY, {"producer_id": key.producer_id}, None if value is None else value._asdict()
    if isinstance(key, OffsetCommitKey):
        kind, k = OFFSET_COMMIT_KEY, {"group": key.group, "topic": key.topic, "partition": key.partition}
        # (the offset manager's OffsetAndMetadata, whose expire timestamp None is -1, is taken as is)
        if value is not None and not (isinstance(value, tuple) and len(value) == 5):
            raise TypeError(f"not an offset commit value: {value!r}")
    elif isinstance(key, GroupMetadataKey):
        kind, k = GROUP_METADATA_KEY, {"group": key.group}
        if value is not None and not isinstance(value, GroupMetadataValue):
            raise TypeError(f"not a group metadata value: {value!r}")
    elif isinstance(key, GroupRecordKey) and key.kind in records.OFFSETS_LOG and key.kind > GROUP_METADATA_KEY:
        k = {"group_id": key.group}
        field_name = records.OFFSETS_LOG.name_fields[key.kind]
        if field_name is not None:
            k[field_name] = key.name
        if value is not None and not isinstance(value, dict):
            raise TypeError(f"not a group record value: {value!r}")
        return key.kind, k, value
    else:
        raise TypeError(f"not a record key: {key!r}")
    if value is None:
        return kind, k, None
    if kind == OFFSET_COMMIT_KEY:
        offset, leader_epoch, metadata, commit_timestamp, expire_timestamp = value
        return kind, k, {"offset": offset, "leader_epoch": leader_epoch, "metadata": metadata,
                         "commit_timestamp": commit_timestamp,
                         "expire_timestamp": -1 if expire_timestamp is None else expire_timestamp}
    return kind, k, {
        "protocol_type": value.protocol_type, "generation": value.generation, "protocol_name": value.protocol_name,
        "leader": value.leader, "current_state_timestamp": value.current_state_timestamp,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                     "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
                     "session_timeout_ms": m.session_timeout_ms, "subscription": m.subscription,
                     "assignment": m.assignment} for m in value.members]}


def encode_record(key: Key, value: Value) -> tuple[bytes, bytes]:
    """(the key's bytes, the payload) of an offsets-log record."""
    return records.encode(records.OFFSETS_LOG, *_offsets_fields(key, value))


def encode_key(key: Key) -> bytes:
    return encode_record(key, None)[0]


def encode_payload(key: Key, value: Value) -> bytes:
    return encode_record(key, value)[1]


def payload_size(key: Key, value: Value) -> int:
    """len(encode_payload(key, value)), without building a group record's bytes."""
    if not isinstance(value, GroupMetadataValue):
        return len(encode_payload(key, value))

    def string(s: str | None) -> int:
        return 2 + (len(s.encode("utf-8")) if s is not None else 0)
    size = len(encode_key(key)) + 1 + 2 + string(value.protocol_type) + 4 + string(value.protocol_name) \
        + string(value.leader) + 8 + 4
    for m in value.members:
        size += (string(m.member_id) + string(m.group_instance_id) + string(m.client_id) + string(m.client_host)
                 + 4 + 4 + 4 + len(m.subscription or b"") + 4 + len(m.assignment or b""))
    return size


def decode_payload(payload) -> tuple[Key, Value, int]:
    """(key, value, length of the key's bytes). Raises ValueError when malformed."""
    kind, k, v, key_len = records.decode(records.OFFSETS_LOG, payload)
    if kind == TXN_OFFSET_COMMIT_KEY:
        return (TxnOffsetCommitKey(k["producer_id"], k["group"], k["topic"], k["partition"]),
                None if v is None else TxnOffsetCommitValue(**v), key_len)
    if kind == TXN_MARKER_KEY:
        return TxnMarkerKey(k["producer_id"]), None if v is None else TxnMarkerValue(**v), key_len
    if kind > GROUP_METADATA_KEY:
        field_name = records.OFFSETS_LOG.name_fields.get(kind)
        return GroupRecordKey(kind, k["group_id"], k[field_name] if field_name else None), v, key_len
    if kind == OFFSET_COMMIT_KEY:
        key = OffsetCommitKey(k["group"], k["topic"], k["partition"])
        value = None if v is None else OffsetCommitValue(v["offset"], v["leader_epoch"], v["metadata"],
                                                         v["commit_timestamp"], v["expire_timestamp"])
        return key, value, key_len
    value = None
    if v is not None:
        value = GroupMetadataValue(v["protocol_type"], v["generation"], v["protocol_name"], v["leader"],
                                   v["current_state_timestamp"], tuple(
                                       MemberMetadata(m["member_id"], m["group_instance_id"], m["client_id"],
                                                      m["client_host"], m["rebalance_timeout_ms"],
                                                      m["session_timeout_ms"], m["subscription"], m["assignment"])
                                       for m in v["members"]))
    return GroupMetadataKey(k["group"]), value, key_len


TOPIC_KEY = 1
END_OFFSET_KEY = 2
CONFIG_KEY = 3
PRODUCER_IDS_KEY = 4


def _metadata_fields(key, value) -> tuple[int, dict, dict | None]:
    if isinstance(key, TopicKey):
        kind, k = TOPIC_KEY, {"name": key.name}
    elif isinstance(key, EndOffsetKey):
        kind, k = END_OFFSET_KEY, {"topic_id": key.topic_id, "partition": key.partition}
    elif isinstance(key, ConfigKey):
        kind, k = CONFIG_KEY, {"resource_type": key.resource_type, "resource_name": key.resource_name,
                               "name": key.name}
    elif isinstance(key, ProducerIdsKey):
        kind, k = PRODUCER_IDS_KEY, {}
    else:
        raise TypeError(f"not a metadata record key: {key!r}")
    if value is None:
        return kind, k, None
    if isinstance(value, TopicValue) and kind == TOPIC_KEY:
        return kind, k, {"topic_id": value.topic_id, "partitions": value.partitions,
                         "replication_factor": value.replication_factor,
                         "configs": [{"name": n, "value": c} for n, c in value.configs]}
    if isinstance(value, EndOffsetValue) and kind == END_OFFSET_KEY:
        return kind, k, {"end_offset": value.end_offset}
    if isinstance(value, ConfigValue) and kind == CONFIG_KEY:
        return kind, k, {"value": value.value}
    if isinstance(value, ProducerIdsValue) and kind == PRODUCER_IDS_KEY:
        return kind, k, {"broker_id": value.broker_id, "broker_epoch": value.broker_epoch,
                         "next_producer_id": value.next_producer_id}
    raise TypeError(f"not a metadata record value: {value!r}")


def encode_metadata_record(key, value) -> tuple[bytes, bytes]:
    """(the key's bytes, the payload) of a cluster metadata record."""
    return records.encode(records.METADATA_LOG, *_metadata_fields(key, value))


def encode_metadata_payload(key: TopicKey | EndOffsetKey, value: TopicValue | EndOffsetValue | None) -> bytes:
    """A record of the cluster metadata log (topics and end offsets)."""
    return records.encode(records.METADATA_LOG, *_metadata_fields(key, value))[1]


def decode_metadata_payload(payload) -> tuple:
    """(key, value, length of the key's bytes) of a cluster metadata record. Raises
    ValueError when malformed."""
    kind, k, v, key_len = records.decode(records.METADATA_LOG, payload)
    if kind == TOPIC_KEY:
        key = TopicKey(k["name"])
        if key.name is None:
            raise ValueError("null topic name")
        value = None
        if v is not None:
            if any(c["name"] is None for c in v["configs"]):
                raise ValueError("null config name")
            value = TopicValue(v["topic_id"], v["partitions"], v["replication_factor"],
                               tuple((c["name"], c["value"]) for c in v["configs"]))
    elif kind == CONFIG_KEY:
        if k["resource_name"] is None or k["name"] is None:
            raise ValueError("null config resource or name")
        key = ConfigKey(k["resource_type"], k["resource_name"], k["name"])
        value = None if v is None else ConfigValue(v["value"])
    elif kind == PRODUCER_IDS_KEY:
        key = ProducerIdsKey()
        value = None if v is None else ProducerIdsValue(v["next_producer_id"], v["broker_id"], v["broker_epoch"])
    else:
        key = EndOffsetKey(k["topic_id"], k["partition"])
        value = None if v is None else EndOffsetValue(v["end_offset"])
    return key, value, key_len


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    """A share-partition of the share state log: (group id, topic id, partition)."""
    group: str
    topic_id: uuid.UUID
    partition: int


def _share_state_fields(key: ShareStateKey, value) -> tuple[int, dict, dict | None]:
    k = {"group_id": key.group, "topic_id": key.topic_id, "partition": key.partition}
    if value is None:
        return 0, k, None
    return 0, k, {"snapshot_epoch": value.snapshot_epoch, "state_epoch": value.state_epoch,
                  "leader_epoch": value.leader_epoch, "start_offset": value.start_offset,
                  "delivery_complete_count": value.delivery_complete_count,
                  "create_timestamp": value.create_timestamp, "write_timestamp": value.write_timestamp,
                  "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                                     "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                                    for b in value.state_batches]}


def encode_share_state_record(key: ShareStateKey, value) -> tuple[bytes, bytes]:
    """(the key's bytes, the payload) of a share state record (value: a share.partition.ShareSnapshot)."""
    return records.encode(records.SHARE_STATE_LOG, *_share_state_fields(key, value))


def decode_share_state_payload(payload) -> tuple:
    """(key, ShareSnapshot or None, length of the key's bytes). Raises ValueError when malformed."""
    _, k, v, key_len = records.decode(records.SHARE_STATE_LOG, payload)
    key = ShareStateKey(k["group_id"], k["topic_id"], k["partition"])
    if v is None:
        return key, None, key_len
    return key, ShareSnapshot(
        state_epoch=v["state_epoch"], start_offset=v["start_offset"],
        state_batches=tuple(PersisterStateBatch(b["first_offset"], b["last_offset"], b["delivery_state"],
                                                b["delivery_count"]) for b in v["state_batches"]),
        leader_epoch=v["leader_epoch"], delivery_complete_count=v["delivery_complete_count"],
        snapshot_epoch=v["snapshot_epoch"], create_timestamp=v["create_timestamp"],
        write_timestamp=v["write_timestamp"]), key_len


def encode_frame(key: Key, value: Value) -> bytes:
    payload = encode_payload(key, value)
    return _HDR.pack(len(payload) + 4, _crc32c.crc32c(payload)) + payload


TORN_HEADER = "torn frame header"      # why-nots of an incomplete frame: a torn write if nothing follows
TORN_FRAME = "torn frame"


def _frame_at(mv: memoryview, pos: int, decode) -> tuple[tuple | None, str | None]:
    """The good frame at ``pos`` as ((key, value, key bytes, frame bytes), None), or (None, why not)."""
    n = len(mv)
    if pos + 8 > n:
        return None, TORN_HEADER
    length, crc = _HDR.unpack_from(mv, pos)
    if length < 4 or length > MAX_FRAME:
        return None, f"bad frame length {length}"
    end = pos + 4 + length
    if end > n:
        return None, TORN_FRAME
    payload = mv[pos + 8:end]
    if _crc32c.crc32c(payload) != crc:
        return None, "CRC mismatch"
    try:
        key, value, key_len = decode(payload)
    except (ValueError, struct.error, UnicodeDecodeError) as e:
        return None, f"undecodable record: {e}"
    return (key, value, bytes(payload[:key_len]), bytes(mv[pos:end])), None


def read_frames(data, decode=None) -> tuple[list[tuple[Key, Value, bytes, bytes]], int, str | None]:
    """Decode frames from the start of ``data`` up to the first bad one: ([(key, value, key_bytes,
    frame)], valid length, why reading stopped before the end or None). No resync: see
    :func:`scan_frames`."""
    decode = decode or decode_payload
    mv = memoryview(data)
    pos = 0
    out = []
    while pos < len(mv):
        frame, why = _frame_at(mv, pos, decode)
        if frame is None:
            return out, pos, why
        out.append(frame)
        pos += len(frame[3])
    return out, pos, None


@dataclass
class Scan:
    """What :func:`scan_frames` found in a log file."""

    frames: list[tuple[Key, Value, bytes, bytes]]   # every good frame, in order
    skipped: list[tuple[int, int, str]]             # damaged byte ranges [start, end), why start was bad
    torn_at: int | None = None                      # an incomplete last frame starts here
    torn_reason: str | None = None

    @property
    def good_bytes(self) -> int:
        return sum(len(f[3]) for f in self.frames)


def _resync(mv: memoryview, start: int, decode) -> int | None:
    """The first position from ``start`` on where a good frame begins, or None."""
    n = len(mv)
    unpack = _I32.unpack_from
    for pos in range(start, n - 8):       # a good frame has at least one payload byte
        (length,) = unpack(mv, pos)
        if 4 < length <= MAX_FRAME and pos + 4 + length <= n and _frame_at(mv, pos, decode)[0] is not None:
            return pos
    return None


def scan_frames(data, decode=None) -> Scan:
    """Every good frame of ``data``, resyncing past damage (see the module's "Recovery")."""
    decode = decode or decode_payload
    mv = memoryview(data)
    n = len(mv)
    scan = Scan([], [])
    pos = 0
    while pos < n:
        frame, why = _frame_at(mv, pos, decode)
        if frame is not None:
            scan.frames.append(frame)
            pos += len(frame[3])
            continue
        resume = _resync(mv, pos + 1, decode)
        if resume is None and why not in (TORN_HEADER, TORN_FRAME) and not mv[pos:].tobytes().strip(b"\x00"):
            why = "zero-filled tail"        # what a power loss leaves on ext4 or XFS: a torn write
        if resume is None and why in (TORN_HEADER, TORN_FRAME, "zero-filled tail"):
            scan.torn_at, scan.torn_reason = pos, why
            break
        scan.skipped.append((pos, n if resume is None else resume, why))
        if resume is None:
            break
        pos = resume
    return scan


# ============================================================================ stores
class Store(Protocol):
    """What the group coordinator writes to."""

    def append(self, partition: int, records: Iterable[Record]) -> None:
        """Append (key, value-or-None) records to the log of an offsets-topic partition.
        Returns once they are written to the operating system (or raises)."""


class MemoryStore:
    """The default: nothing is kept (the coordinator's own state is the only copy)."""

    def append(self, partition: int, records: Iterable[Record]) -> None:
        pass


FSYNC_POLICIES = ("always", "interval", "never")


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_file(path: str, data: bytes) -> None:
    """Write ``data`` to a new file at ``path`` (never replacing one) and fsync it."""
    with open(path, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _keep_aside(path: str, data: bytes) -> str:
    """Keep ``data`` (a damaged log's bytes) beside ``path`` under the first free name
    ``<path>.damaged-<n>``; returns that name."""
    n = 1
    while True:
        aside = f"{path}.damaged-{n}"
        try:
            _write_file(aside, data)
        except FileExistsError:
            n += 1
            continue
        return aside


class _LogFile:
    """One append-only log of frames, and the latest frame of each live key (for compaction)."""

    __slots__ = ("path", "decode", "fd", "size", "live", "live_bytes")

    def __init__(self, path: str, decode) -> None:
        self.path = path
        self.decode = decode
        self.fd: int | None = None
        self.size = 0
        self.live: dict[bytes, bytes] = {}   # key bytes -> latest frame
        self.live_bytes = 0

    def track(self, key_bytes: bytes, frame: bytes, tombstone: bool) -> None:
        old = self.live.pop(key_bytes, None)
        if old is not None:
            self.live_bytes -= len(old)
        if not tombstone:
            self.live[key_bytes] = frame
            self.live_bytes += len(frame)

    def append(self, records: Iterable[Record], encode) -> bool:
        """Write the records as frames (one os.write), then track them; False when there were none.
        A record the log could not read back (over MAX_FRAME) raises ValueError, and nothing is written."""
        frames = []
        for key, value in records:
            key_bytes, payload = encode(key, value)
            if len(payload) + 4 > MAX_FRAME:
                raise ValueError(f"a record of {len(payload)} bytes is over the log's frame limit of {MAX_FRAME}")
            frames.append((key_bytes, _HDR.pack(len(payload) + 4, _crc32c.crc32c(payload)) + payload,
                           value is None))
        if not frames:
            return False
        self.write(b"".join(frame for _, frame, _ in frames))
        for key_bytes, frame, tombstone in frames:     # only what reached the file
            self.track(key_bytes, frame, tombstone)
        return True

    def open(self) -> list[tuple[Key, Value, bytes, bytes]]:
        """Read the file (recovering it, see the module's "Recovery"; creating it when missing),
        open it for appending and return its good frames."""
        self.close()
        frames = []
        if os.path.exists(self.path):
            frames = self._recover()
        else:
            open(self.path, "ab").close()
            _fsync_dir(os.path.dirname(self.path))
        self.size = sum(len(f[3]) for f in frames)
        self.live.clear()
        self.live_bytes = 0
        for _key, value, key_bytes, frame in frames:
            self.track(key_bytes, frame, value is None)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        return frames

    def _recover(self) -> list[tuple[Key, Value, bytes, bytes]]:
        with open(self.path, "rb") as f:
            data = f.read()
        scan = scan_frames(data, self.decode)
        if scan.skipped:
            aside = _keep_aside(self.path, data)
            for start, end, why in scan.skipped:
                log.warning("skipped damaged bytes", path=self.path, start=start, end=end, bytes=end - start,
                            reason=why)
            log.warning("recovered damaged log", path=self.path, damaged_copy=aside, records=len(scan.frames),
                        good_bytes=scan.good_bytes, damaged_ranges=len(scan.skipped),
                        damaged_bytes=sum(end - start for start, end, _ in scan.skipped),
                        torn_tail_bytes=0 if scan.torn_at is None else len(data) - scan.torn_at)
            self.rewrite(b"".join(f[3] for f in scan.frames))
        elif scan.torn_at is not None:
            log.warning("truncating log tail", path=self.path, at=scan.torn_at,
                        dropped_bytes=len(data) - scan.torn_at, reason=scan.torn_reason, records=len(scan.frames))
            os.truncate(self.path, scan.torn_at)
        return scan.frames

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.size += len(data)

    def rewrite(self, data: bytes) -> None:
        """Replace the file's content by ``data``: temporary file, fsync, rename."""
        tmp = self.path + ".rewriting"
        if os.path.exists(tmp):
            os.unlink(tmp)              # left by a crash during an earlier rewrite
        _write_file(tmp, data)
        os.replace(tmp, self.path)
        _fsync_dir(os.path.dirname(self.path))
        self.size = len(data)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    def fsync(self) -> None:
        if self.fd is not None:
            os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _register_group_types() -> None:
    """Every group type's records registered in the offsets log (each type's package registers its
    own when imported): a log must not be read without them, or their records would count as damage."""
    from .group import runtime  # noqa: F401  (here: group/ imports this module)


class LogStore:
    """One log file per offsets-topic partition in ``directory``, and the cluster metadata log.

    ``fsync``: "always" (fsync before acknowledging), "interval" (at most every
    ``fsync_interval_ms``; the driver also calls :meth:`sync` on a timer), "never". Topic changes
    are fsynced at once unless "never"; end offsets, see the module's "Topics".
    """

    def __init__(self, directory: str, *, fsync: str = "interval", fsync_interval_ms: int = 1000,
                 compact_ratio: float = 2.0, compact_min_bytes: int = 1 << 20) -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {FSYNC_POLICIES}")
        self.directory = directory
        self.fsync = fsync
        self.fsync_interval_ms = fsync_interval_ms
        self.compact_ratio = compact_ratio
        self.compact_min_bytes = compact_min_bytes
        self._logs: dict[int, _LogFile] = {}
        self._dirty: set[int] = set()
        self._meta: _LogFile | None = None      # the cluster metadata log, opened on first use
        self._meta_dirty = False
        self._share: _LogFile | None = None     # the share state log, opened on first use
        self._share_dirty = False
        self._txn: _LogFile | None = None       # the transaction log, opened on first use
        self._txn_dirty = False
        #: the data plane's records (segment files per partition)
        self.segments = SegmentFiles(directory)
        self._last_sync = time.monotonic()
        self.compactions = 0
        os.makedirs(directory, exist_ok=True)
        _register_group_types()

    def path(self, partition: int) -> str:
        return os.path.join(self.directory, f"__consumer_offsets-{partition}.log")

    def partitions(self) -> list[int]:
        """Partitions with a log file on disk."""
        out = []
        for name in os.listdir(self.directory):
            if name.startswith("__consumer_offsets-") and name.endswith(".log"):
                try:
                    out.append(int(name[len("__consumer_offsets-"):-4]))
                except ValueError:
                    continue
        return sorted(out)

    # ---- loading -------------------------------------------------------------
    def load(self, partition: int) -> list[Record]:
        """Read (and repair) one partition's log; returns its records in order. Compacts the
        file first if it is mostly dead records."""
        old = self._logs.pop(partition, None)
        if old is not None:
            old.close()
        _, frames = self._open_new(partition)
        return [(k, v) for k, v, _, _ in frames]

    def _open(self, partition: int) -> _LogFile:
        """The partition's log, opened (and recovered) on first use."""
        plog = self._logs.get(partition)
        if plog is None:
            plog, _ = self._open_new(partition)
        return plog

    def _open_new(self, partition: int) -> tuple[_LogFile, list]:
        plog = self._logs[partition] = _LogFile(self.path(partition), decode_payload)
        frames = plog.open()
        if self._should_compact(plog):
            self._compact(plog)
        return plog, frames

    # ---- writing -------------------------------------------------------------
    def append(self, partition: int, records: Iterable[Record]) -> None:
        if self.fsync == "always" and self._meta_dirty:
            # an offset committed here may point at records whose produce moved an end offset:
            # that end offset is on disk before the commit can be (so no end comes back below it)
            self._sync_meta()
        plog = self._open(partition)
        if not plog.append(records, encode_record):
            return
        if self.fsync == "always":
            plog.fsync()
        elif self.fsync == "interval":
            self._dirty.add(partition)
            if (time.monotonic() - self._last_sync) * 1000 >= self.fsync_interval_ms:
                self.sync()
        if self._should_compact(plog):
            self._compact(plog)

    def sync(self) -> None:
        """fsync every log written since the last sync (the cluster metadata log first)."""
        self._last_sync = time.monotonic()
        self.segments.sync()        # (records first: no end offset, commit or share state on disk beyond them)
        if self._meta_dirty:
            self._sync_meta()
        dirty, self._dirty = self._dirty, set()
        for partition in dirty:
            plog = self._logs.get(partition)
            if plog is not None:
                plog.fsync()
        if self._share_dirty and self._share is not None:
            self._share_dirty = False
            self._share.fsync()
        if self._txn_dirty and self._txn is not None:
            self._txn_dirty = False
            self._txn.fsync()

    def _should_compact(self, plog: _LogFile) -> bool:
        return plog.size >= self.compact_min_bytes and plog.size > self.compact_ratio * plog.live_bytes

    def compact(self, partition: int) -> None:
        self._compact(self._open(partition))

    def _compact(self, plog: _LogFile) -> None:
        """Rewrite the log with only the latest frame of each live key: temp file, fsync, rename."""
        before = plog.size
        plog.rewrite(b"".join(plog.live.values()))
        self.compactions += 1
        log.info("compacted log", path=plog.path, bytes_before=before, bytes_after=plog.size,
                 records=len(plog.live))

    # ---- topics: the cluster metadata log -------------------------------------
    def metadata_path(self) -> str:
        return os.path.join(self.directory, "__cluster_metadata.log")

    def load_topics(self) -> "TopicState":
        """Read (and repair) the cluster metadata log: the live topics and their end offsets."""
        if self._meta is not None:
            self._meta.close()
        self._meta = _LogFile(self.metadata_path(), decode_metadata_payload)
        frames = self._meta.open()
        if self._should_compact(self._meta):
            self._compact(self._meta)
        return replay_topics((k, v) for k, v, _, _ in frames)

    def put_topic(self, name: str, topic_id: uuid.UUID, partitions: int, replication_factor: int,
                  configs: dict[str, str | None]) -> None:
        """A topic was created or got partitions: written and (unless fsync is "never") fsynced."""
        value = TopicValue(topic_id, partitions, replication_factor, tuple(configs.items()))
        self._append_meta([(TopicKey(name), value)], fsync_now=self.fsync != "never")

    def delete_topic(self, name: str, topic_id: uuid.UUID, partitions: int) -> None:
        """A topic was deleted: tombstones for it and its end offsets, fsynced as by put_topic; its
        segment files go."""
        records = [(TopicKey(name), None)] + [(EndOffsetKey(topic_id, p), None) for p in range(partitions)]
        self._append_meta(records, fsync_now=self.fsync != "never")
        for p in range(partitions):
            self.segments.delete_partition(name, p)

    # ---- the data plane: segment files ----------------------------------------
    def append_records(self, topic: str, partition: int, segment_base: int, data: bytes) -> None:
        """A produce's batches (their offsets set), written to the partition's segment of
        ``segment_base`` before the produce is acknowledged; fsynced as the other logs are."""
        self.segments.append(topic, partition, segment_base, data)
        if self.fsync == "always":
            self.segments.sync()

    def load_records(self, topic: str, partition: int):
        """(segment base, batch, header) of each batch kept for the partition, in order."""
        return self.segments.load(topic, partition)

    def clear_records(self, topic: str, partitions) -> None:
        """New partitions of that name start with no segment files (a deleted topic's, if a crash left
        them between its tombstone and their removal, go now)."""
        for p in partitions:
            if os.path.isdir(self.segments.partition_dir(topic, p)):
                self.segments.delete_partition(topic, p)

    def undo_records(self, topic: str, partition: int) -> None:
        """The last :meth:`append_records` of the partition is cut off again (its produce failed)."""
        self.segments.undo(topic, partition)

    def delete_segments(self, topic: str, partition: int, bases: list[int]) -> None:
        """Retention deleted these segments (their base offsets): their files go."""
        self.segments.delete_segments(topic, partition, bases)

    # ---- the share state log --------------------------------------------------
    def share_state_path(self) -> str:
        return os.path.join(self.directory, "__share_group_state.log")

    def load_share_states(self) -> dict:
        """Read (and repair) the share state log: (group, topic id, partition) -> ShareSnapshot."""
        if self._share is not None:
            self._share.close()
        self._share = _LogFile(self.share_state_path(), decode_share_state_payload)
        frames = self._share.open()
        if self._should_compact(self._share):
            self._compact(self._share)
        states: dict = {}
        for key, value, _, _ in frames:
            k = (key.group, key.topic_id, key.partition)
            if value is None:
                states.pop(k, None)
            else:
                states[k] = value
        return states

    def put_share_state(self, group: str, topic_id: uuid.UUID, partition: int, snapshot) -> None:
        """A share-partition's state changed (a ShareSnapshot; None: deleted): written before the
        change is acknowledged (Kafka answers an acknowledgement once its state write is committed)."""
        if self._share is None:
            self.load_share_states()
        self._share.append([(ShareStateKey(group, topic_id, partition), snapshot)], encode_share_state_record)
        if self.fsync == "always":
            self._share.fsync()
        elif self.fsync == "interval":
            self._share_dirty = True
        if self._should_compact(self._share):
            self._compact(self._share)

    def put_config(self, resource_type: int, resource_name: str, name: str, value: str | None) -> None:
        """A dynamic config was set (None: deleted): written and (unless fsync is "never") fsynced."""
        self._append_meta([(ConfigKey(resource_type, resource_name, name),
                            None if value is None else ConfigValue(value))], fsync_now=self.fsync != "never")

    def put_producer_ids(self, next_producer_id: int) -> None:
        """A block of producer ids was taken (the ids below ``next_producer_id``): written and fsynced
        before any of them is handed out (unless fsync is "never")."""
        self._append_meta([(ProducerIdsKey(), ProducerIdsValue(next_producer_id))], fsync_now=self.fsync != "never")

    # ---- the transaction log ----------------------------------------------------
    def transaction_state_path(self) -> str:
        return os.path.join(self.directory, "__transaction_state.log")

    def load_transactions(self) -> dict:
        """Read (and repair) the transaction log: transactional id -> its latest state (a txn.state.Transit)."""
        from .txn import records as txn_records
        if self._txn is not None:
            self._txn.close()
        self._txn = _LogFile(self.transaction_state_path(), txn_records.decode)
        frames = self._txn.open()
        if self._should_compact(self._txn):
            self._compact(self._txn)
        states: dict = {}
        for transactional_id, value, _, _ in frames:
            if value is None:
                states.pop(transactional_id, None)
            else:
                states[transactional_id] = value
        return states

    def put_transaction(self, transactional_id: str, transit) -> None:
        """A transactional id's state changed (None: it expired): written, and fsynced under "always",
        before the change is answered (Kafka answers once its transaction log append is committed)."""
        from .txn import records as txn_records
        if self._txn is None:
            self.load_transactions()
        self._txn.append([(transactional_id, transit)], txn_records.encode)
        if self.fsync == "always":
            self._txn.fsync()
        elif self.fsync == "interval":
            self._txn_dirty = True
        if self._should_compact(self._txn):
            self._compact(self._txn)

    def put_end_offset(self, topic_id: uuid.UUID, partition: int, end_offset: int) -> None:
        """A produce moved a partition's end offset: written (os.write) before the produce is
        acknowledged, so a kill -9 loses none; fsynced by the periodic sync, and under "always"
        before any offset commit is written, not at each produce."""
        self._append_meta([(EndOffsetKey(topic_id, partition), EndOffsetValue(end_offset))], fsync_now=False)

    def _append_meta(self, records, fsync_now: bool) -> None:
        meta = self._meta
        if meta is None:
            self.load_topics()
            meta = self._meta
        meta.append(records, encode_metadata_record)
        if fsync_now:
            self._sync_meta()
        elif self.fsync != "never":
            self._meta_dirty = True
            if (time.monotonic() - self._last_sync) * 1000 >= self.fsync_interval_ms:
                self.sync()
        if self._should_compact(meta):
            self._compact(meta)

    def _sync_meta(self) -> None:
        self._meta_dirty = False
        if self._meta is not None:
            self._meta.fsync()

    def close(self) -> None:
        if self.fsync != "never":
            self.sync()
        for plog in self._logs.values():
            plog.close()
        self._logs.clear()
        if self._meta is not None:
            self._meta.close()
            self._meta = None
        if self._share is not None:
            self._share.close()
            self._share = None
        if self._txn is not None:
            self._txn.close()
            self._txn = None
        self.segments.close()


# ============================================================================ replay
@dataclass
class ReplayState:
    """The live state of a sequence of records: latest offset commits, classic group metadata
    and the other group types' records (``group_records``: group id -> (kind, name) -> value)."""

    offsets: dict[tuple[str, str, int], OffsetCommitValue] = field(default_factory=dict)
    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)
    group_records: dict[str, dict[tuple[int, str | None], dict]] = field(default_factory=dict)
    #: (producer id, group, topic, partition) -> the transactional offset pending
    pending: dict[tuple[int, str, str, int], TxnOffsetCommitValue] = field(default_factory=dict)

    def apply(self, records: Iterable[Record]) -> "ReplayState":
        offsets, groups, pending = self.offsets, self.groups, self.pending
        for key, value in records:
            if isinstance(key, OffsetCommitKey):
                k = (key.group, key.topic, key.partition)
                if value is None:
                    offsets.pop(k, None)
                    for gone in [p for p in pending if p[1:] == k]:
                        del pending[gone]
                else:
                    offsets[k] = value
            elif isinstance(key, TxnOffsetCommitKey):
                if value is None:
                    pending.pop(tuple(key), None)
                else:
                    pending[tuple(key)] = value
            elif isinstance(key, TxnMarkerKey):
                for k in [p for p in pending if p[0] == key.producer_id]:
                    v = pending.pop(k)
                    if value is not None and value.control_type == 1 and not v.superseded:
                        offsets[k[1:]] = OffsetCommitValue(*v[1:6])
            elif isinstance(key, GroupRecordKey):
                group = self.group_records.setdefault(key.group, {})
                if value is None:
                    group.pop((key.kind, key.name), None)
                    if not group:
                        del self.group_records[key.group]
                else:
                    group[(key.kind, key.name)] = value
            else:
                if value is None:
                    groups.pop(key.group, None)
                else:
                    groups[key.group] = value
        return self


def replay(records: Iterable[Record]) -> ReplayState:
    return ReplayState().apply(records)


@dataclass
class TopicState:
    """The live state of the cluster metadata log."""

    topics: dict[str, TopicValue] = field(default_factory=dict)
    end_offsets: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)   # (topic id, partition)
    #: (resource type, resource name) -> config name -> value: the dynamic configs set
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    #: the first producer id not handed out yet (0: none ever was)
    next_producer_id: int = 0


def replay_topics(records: Iterable[tuple]) -> TopicState:
    state = TopicState()
    for key, value in records:
        if isinstance(key, TopicKey):
            if value is None:
                state.topics.pop(key.name, None)
            else:
                state.topics[key.name] = value
        elif isinstance(key, ProducerIdsKey):
            if value is not None:
                state.next_producer_id = max(state.next_producer_id, value.next_producer_id)
        elif isinstance(key, ConfigKey):
            resource = (key.resource_type, key.resource_name)
            if value is None:
                configs = state.configs.get(resource, {})
                configs.pop(key.name, None)
                if not configs:
                    state.configs.pop(resource, None)
            else:
                state.configs.setdefault(resource, {})[key.name] = value.value
        elif value is None:
            state.end_offsets.pop((key.topic_id, key.partition), None)
        else:
            state.end_offsets[(key.topic_id, key.partition)] = value.end_offset
    live = {t.topic_id for t in state.topics.values()}
    state.end_offsets = {k: v for k, v in state.end_offsets.items() if k[0] in live}
    return state

