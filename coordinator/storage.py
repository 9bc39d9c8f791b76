"""Durable coordinator state: one append-only log per offsets-topic partition ("state as a log").

As Kafka's group coordinator, every change to committed offsets and group metadata is a
record appended to the log of the group's ``__consumer_offsets`` partition
(``abs(javaHash(group_id)) % offsets.topic.num.partitions``); at start the logs are replayed
to rebuild groups and offsets. The core (:mod:`.group_coordinator`) only sees the
:class:`Store` interface (``append(partition, records)``); :class:`MemoryStore` (the default)
drops everything, :class:`LogStore` writes files.

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

``has_value`` 0 is a tombstone: an offset deleted or expired, a group deleted. A group
metadata value with members is a Stable group; without members, an Empty one.

Recovery: frames are read in order; a frame whose length runs past the end of the file, whose
CRC does not match or whose payload does not decode ends the log: the file is truncated there
(a torn write of a crash) with a warning, and loading goes on.

Compaction: a :class:`LogStore` keeps the latest frame of every live key; when a log grows past
``compact_ratio`` times its live bytes (and at least ``compact_min_bytes``), it is rewritten with
only those frames (tombstones dropped) into a temporary file, fsynced and renamed over the log.
"""
from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol

import crc32c as _crc32c
import structlog

log = structlog.get_logger("groupcoord.storage")

OFFSET_COMMIT_KEY = 1
GROUP_METADATA_KEY = 2

_HDR = struct.Struct(">iI")
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_OFFSET_VALUE = struct.Struct(">hqi")
_TS2 = struct.Struct(">qq")
_MEMBER_TIMEOUTS = struct.Struct(">ii")
MAX_FRAME = 64 * 1024 * 1024


# ============================================================================ records
@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


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


Key = OffsetCommitKey | GroupMetadataKey
Value = OffsetCommitValue | GroupMetadataValue | None
Record = tuple  # (Key, Value | None)


# ============================================================================ codec
def _w_str(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I16.pack(-1)
    else:
        b = s.encode("utf-8")
        out += _I16.pack(len(b))
        out += b


def _w_bytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        out += _I32.pack(-1)
    else:
        out += _I32.pack(len(b))
        out += b


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, s: struct.Struct):
        v = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return v

    def str(self) -> str | None:
        (n,) = self.take(_I16)
        if n < 0:
            return None
        end = self.pos + n
        if end > len(self.buf):
            raise ValueError("string past the end")
        s = bytes(self.buf[self.pos:end]).decode("utf-8")
        self.pos = end
        return s

    def bytes(self) -> bytes | None:
        (n,) = self.take(_I32)
        if n < 0:
            return None
        end = self.pos + n
        if end > len(self.buf):
            raise ValueError("bytes past the end")
        b = bytes(self.buf[self.pos:end])
        self.pos = end
        return b


def encode_key(key: Key) -> bytes:
    out = bytearray()
    if isinstance(key, OffsetCommitKey):
        out += _I16.pack(OFFSET_COMMIT_KEY)
        _w_str(out, key.group)
        _w_str(out, key.topic)
        out += _I32.pack(key.partition)
    elif isinstance(key, GroupMetadataKey):
        out += _I16.pack(GROUP_METADATA_KEY)
        _w_str(out, key.group)
    else:
        raise TypeError(f"not a record key: {key!r}")
    return bytes(out)


def encode_payload(key: Key, value: Value) -> bytes:
    out = bytearray(encode_key(key))
    if value is None:
        out += _I8.pack(0)
        return bytes(out)
    out += _I8.pack(1)
    if isinstance(value, OffsetCommitValue):
        out += _OFFSET_VALUE.pack(0, value.offset, value.leader_epoch)
        _w_str(out, value.metadata)
        out += _TS2.pack(value.commit_timestamp, value.expire_timestamp)
    elif isinstance(value, GroupMetadataValue):
        out += _I16.pack(0)
        _w_str(out, value.protocol_type)
        out += _I32.pack(value.generation)
        _w_str(out, value.protocol_name)
        _w_str(out, value.leader)
        out += _I64.pack(value.current_state_timestamp)
        out += _I32.pack(len(value.members))
        for m in value.members:
            _w_str(out, m.member_id)
            _w_str(out, m.group_instance_id)
            _w_str(out, m.client_id)
            _w_str(out, m.client_host)
            out += _MEMBER_TIMEOUTS.pack(m.rebalance_timeout_ms, m.session_timeout_ms)
            _w_bytes(out, m.subscription)
            _w_bytes(out, m.assignment)
    else:
        raise TypeError(f"not a record value: {value!r}")
    return bytes(out)


def decode_payload(payload) -> tuple[Key, Value, int]:
    """(key, value, length of the key's bytes). Raises ValueError/struct.error when malformed."""
    r = _Reader(payload)
    (kind,) = r.take(_I16)
    if kind == OFFSET_COMMIT_KEY:
        group, topic = r.str(), r.str()
        (partition,) = r.take(_I32)
        key = OffsetCommitKey(group, topic, partition)
    elif kind == GROUP_METADATA_KEY:
        key = GroupMetadataKey(r.str())
    else:
        raise ValueError(f"unknown key version {kind}")
    key_len = r.pos
    (has_value,) = r.take(_I8)
    value = None
    if has_value:
        if kind == OFFSET_COMMIT_KEY:
            _, offset, epoch = r.take(_OFFSET_VALUE)
            metadata = r.str()
            commit_ts, expire_ts = r.take(_TS2)
            value = OffsetCommitValue(offset, epoch, metadata, commit_ts, expire_ts)
        else:
            r.take(_I16)
            protocol_type = r.str()
            (generation,) = r.take(_I32)
            protocol_name, leader = r.str(), r.str()
            (ts,) = r.take(_I64)
            (count,) = r.take(_I32)
            if count < 0:
                raise ValueError("negative member count")
            members = []
            for _ in range(count):
                mid, iid, cid, host = r.str(), r.str(), r.str(), r.str()
                rebalance, session = r.take(_MEMBER_TIMEOUTS)
                members.append(MemberMetadata(mid, iid, cid, host, rebalance, session, r.bytes(), r.bytes()))
            value = GroupMetadataValue(protocol_type, generation, protocol_name, leader, ts, tuple(members))
    if r.pos != len(payload):
        raise ValueError("trailing bytes in record")
    return key, value, key_len


def encode_frame(key: Key, value: Value) -> bytes:
    payload = encode_payload(key, value)
    return _HDR.pack(len(payload) + 4, _crc32c.crc32c(payload)) + payload


def read_frames(data) -> tuple[list[tuple[Key, Value, bytes, bytes]], int, str | None]:
    """Decode frames from the start of ``data``: ([(key, value, key_bytes, frame)], valid length,
    why reading stopped before the end or None)."""
    mv = memoryview(data)
    n = len(mv)
    pos = 0
    out = []
    while pos < n:
        if pos + 8 > n:
            return out, pos, "torn frame header"
        length, crc = _HDR.unpack_from(mv, pos)
        if length < 4 or length > MAX_FRAME:
            return out, pos, f"bad frame length {length}"
        end = pos + 4 + length
        if end > n:
            return out, pos, "torn frame"
        payload = mv[pos + 8:end]
        if _crc32c.crc32c(payload) != crc:
            return out, pos, "CRC mismatch"
        try:
            key, value, key_len = decode_payload(payload)
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            return out, pos, f"undecodable record: {e}"
        out.append((key, value, bytes(payload[:key_len]), bytes(mv[pos:end])))
        pos = end
    return out, pos, None


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


class RecordingStore:
    """Keeps the appended records in memory, per partition (tests, the simulator)."""

    def __init__(self) -> None:
        self.logs: dict[int, list[Record]] = {}

    def append(self, partition: int, records: Iterable[Record]) -> None:
        self.logs.setdefault(partition, []).extend(records)


FSYNC_POLICIES = ("always", "interval", "never")


class _PartitionLog:
    __slots__ = ("path", "fd", "size", "live", "live_bytes")

    def __init__(self, path: str) -> None:
        self.path = path
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


class LogStore:
    """One log file per offsets-topic partition in ``directory``.

    ``fsync``: "always" (fsync before acknowledging), "interval" (at most every
    ``fsync_interval_ms``; the driver also calls :meth:`sync` on a timer), "never".
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
        self._logs: dict[int, _PartitionLog] = {}
        self._dirty: set[int] = set()
        self._last_sync = time.monotonic()
        self.compactions = 0
        os.makedirs(directory, exist_ok=True)

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
        plog = self._logs.get(partition)
        if plog is not None and plog.fd is not None:
            os.close(plog.fd)
        plog = self._logs[partition] = _PartitionLog(self.path(partition))
        frames = self._read(plog) if os.path.exists(plog.path) else []
        if not frames and not os.path.exists(plog.path):
            open(plog.path, "ab").close()
        plog.fd = os.open(plog.path, os.O_WRONLY | os.O_APPEND)
        return [(k, v) for k, v, _, _ in frames]

    def _read(self, plog: _PartitionLog):
        with open(plog.path, "rb") as f:
            data = f.read()
        frames, valid, why = read_frames(data)
        if why is not None:
            log.warning("truncating log tail", path=plog.path, at=valid, dropped_bytes=len(data) - valid,
                        reason=why, records=len(frames))
            os.truncate(plog.path, valid)
        plog.size = valid
        plog.live.clear()
        plog.live_bytes = 0
        for key, value, key_bytes, frame in frames:
            plog.track(key_bytes, frame, value is None)
        if self._should_compact(plog):
            self._compact(plog)
        return frames

    def _open(self, partition: int) -> _PartitionLog:
        plog = self._logs.get(partition)
        if plog is None:
            plog = self._logs[partition] = _PartitionLog(self.path(partition))
            if not os.path.exists(plog.path):
                open(plog.path, "ab").close()
                self._fsync_dir()
                plog.size = 0
            else:
                self._read(plog)
            plog.fd = os.open(plog.path, os.O_WRONLY | os.O_APPEND)
        return plog

    # ---- writing -------------------------------------------------------------
    def append(self, partition: int, records: Iterable[Record]) -> None:
        plog = self._open(partition)
        buf = bytearray()
        for key, value in records:
            payload = encode_payload(key, value)
            frame = _HDR.pack(len(payload) + 4, _crc32c.crc32c(payload)) + payload
            buf += frame
            plog.track(encode_key(key), frame, value is None)
        if not buf:
            return
        view = memoryview(buf)
        while view:
            written = os.write(plog.fd, view)
            view = view[written:]
        plog.size += len(buf)
        if self.fsync == "always":
            os.fsync(plog.fd)
        elif self.fsync == "interval":
            self._dirty.add(partition)
            if (time.monotonic() - self._last_sync) * 1000 >= self.fsync_interval_ms:
                self.sync()
        if self._should_compact(plog):
            self._compact(plog)

    def sync(self) -> None:
        """fsync every log written since the last sync."""
        self._last_sync = time.monotonic()
        dirty, self._dirty = self._dirty, set()
        for partition in dirty:
            plog = self._logs.get(partition)
            if plog is not None and plog.fd is not None:
                os.fsync(plog.fd)

    def _should_compact(self, plog: _PartitionLog) -> bool:
        return plog.size >= self.compact_min_bytes and plog.size > self.compact_ratio * plog.live_bytes

    def compact(self, partition: int) -> None:
        self._compact(self._open(partition))

    def _compact(self, plog: _PartitionLog) -> None:
        """Rewrite the log with only the latest frame of each live key: temp file, fsync, rename."""
        tmp = plog.path + ".compacting"
        before = plog.size
        with open(tmp, "wb") as f:
            f.write(b"".join(plog.live.values()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, plog.path)
        self._fsync_dir()
        if plog.fd is not None:
            os.close(plog.fd)
            plog.fd = os.open(plog.path, os.O_WRONLY | os.O_APPEND)
        plog.size = plog.live_bytes
        self.compactions += 1
        log.info("compacted log", path=plog.path, bytes_before=before, bytes_after=plog.size,
                 records=len(plog.live))

    def _fsync_dir(self) -> None:
        try:
            fd = os.open(self.directory, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def close(self) -> None:
        if self.fsync != "never":
            self.sync()
        for plog in self._logs.values():
            if plog.fd is not None:
                os.close(plog.fd)
                plog.fd = None
        self._logs.clear()


# ============================================================================ replay
@dataclass
class ReplayState:
    """The live state of a sequence of records: latest offset commits and group metadata."""

    offsets: dict[tuple[str, str, int], OffsetCommitValue] = field(default_factory=dict)
    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)

    def apply(self, records: Iterable[Record]) -> "ReplayState":
        offsets, groups = self.offsets, self.groups
        for key, value in records:
            if isinstance(key, OffsetCommitKey):
                k = (key.group, key.topic, key.partition)
                if value is None:
                    offsets.pop(k, None)
                else:
                    offsets[k] = value
            else:
                if value is None:
                    groups.pop(key.group, None)
                else:
                    groups[key.group] = value
        return self


def replay(records: Iterable[Record]) -> ReplayState:
    return ReplayState().apply(records)


def iter_all(store: LogStore) -> Iterator[tuple[int, list[Record]]]:
    for partition in store.partitions():
        yield partition, store.load(partition)
