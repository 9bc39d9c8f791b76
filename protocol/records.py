"""Kafka record batches, message format v2 (magic 2).

Wire layout (Kafka's ``DefaultRecordBatch`` / ``DefaultRecord``; all fixed-width
integers are big-endian)::

    RecordBatch =>                         offset
      BaseOffset           int64           0    not covered by the CRC
      BatchLength          int32           8    bytes after this field
      PartitionLeaderEpoch int32           12   not covered by the CRC
      Magic                int8            16   = 2
      CRC                  uint32          17   CRC-32C of bytes 21 .. end
      Attributes           int16           21
      LastOffsetDelta      int32           23
      BaseTimestamp        int64           27
      MaxTimestamp         int64           35
      ProducerId           int64           43
      ProducerEpoch        int16           51
      BaseSequence         int32           53
      RecordsCount         int32           57
      Records              [Record]        61   (compressed as one blob if a codec is set)

    Record =>
      Length          varint   size of the rest of the record
      Attributes      int8     unused, 0
      TimestampDelta  varlong
      OffsetDelta     varint
      KeyLength       varint   -1 = null
      Key             bytes
      ValueLength     varint   -1 = null
      Value           bytes
      HeadersCount    varint
      Headers => HeaderKeyLength varint, HeaderKey utf-8,
                 HeaderValueLength varint (-1 = null), HeaderValue bytes

Batch attributes: bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd), bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional,
bit 5 control, bit 6 delete horizon (BaseTimestamp then holds the delete
horizon).  "varint"/"varlong" are protobuf zig-zag varints of at most 5 / 10
bytes holding a signed 32 / 64-bit value.

Public API
----------
``Record`` / ``DecodedRecord``   record values (decoded ones carry absolute offset/timestamp)
``BatchHeader``                  the 61-byte header plus derived properties
``read_batch_header(buf, pos)``  header only, records untouched
``iter_batches(buf)``            walk concatenated batches (a Fetch/Produce ``records`` field)
``encode_batch(records, ...)``   build one batch (compression none or gzip)
``decode_batch(batch, verify)``  header + records (none or gzip; others raise UnsupportedCompression)
``set_base_offset`` / ``set_partition_leader_epoch``  rewrite fields the CRC does not cover
``compute_crc`` / ``verify_crc`` CRC-32C helpers

Every failure to decode wire bytes raises :class:`DecodeError` (api
``"RecordBatch"``, version = the magic byte); invalid arguments to the
encoding functions raise :class:`ValueError` / :class:`TypeError`.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import crc32c as _crc32c
from construct import (
    ConstructError,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Struct,
)

from . import varint
from .errors import DecodeError

__all__ = [
    "API",
    "MAGIC",
    "BATCH_HEADER_SIZE",
    "RECORD_BATCH_OVERHEAD",
    "LOG_OVERHEAD",
    "MAX_DECOMPRESSED_SIZE",
    "COMPRESSION_NONE",
    "COMPRESSION_GZIP",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_LZ4",
    "COMPRESSION_ZSTD",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "NO_TIMESTAMP",
    "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH",
    "NO_SEQUENCE",
    "NO_PARTITION_LEADER_EPOCH",
    "UnsupportedCompression",
    "Record",
    "DecodedRecord",
    "BatchHeader",
    "BATCH_HEADER_STRUCT",
    "read_batch_header",
    "iter_batches",
    "encode_batch",
    "decode_batch",
    "set_base_offset",
    "set_partition_leader_epoch",
    "compute_crc",
    "verify_crc",
    "zigzag_encode",
    "zigzag_decode",
    "encode_varint",
    "encode_varlong",
    "decode_varint",
    "decode_varlong",
]

API = "RecordBatch"
MAGIC = 2

# Field offsets inside a batch (DefaultRecordBatch.*_OFFSET).
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61

BATCH_HEADER_SIZE = 61
RECORD_BATCH_OVERHEAD = BATCH_HEADER_SIZE
LOG_OVERHEAD = 12  # BaseOffset + BatchLength: bytes not counted by BatchLength
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD  # 49

# Smallest possible encoded record: length, attributes, timestampDelta,
# offsetDelta, keyLength, valueLength, headersCount -- one byte each.
MIN_RECORD_SIZE = 7

#: Upper bound for the decompressed records of one batch (decompression-bomb guard).
MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
_COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_COMPRESSION_IDS = {name: cid for cid, name in _COMPRESSION_NAMES.items()}

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_INT8 = (-(1 << 7), (1 << 7) - 1)
_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)



class UnsupportedCompression(DecodeError):
    """The batch uses a codec this module cannot decompress (snappy, lz4, zstd)."""


def _error(offset: Optional[int], reason: str, version: Optional[int] = MAGIC) -> DecodeError:
    return DecodeError(API, version, offset, reason)


# --------------------------------------------------------------------------
# The fixed 61-byte batch header, as a construct Struct.
# --------------------------------------------------------------------------

BATCH_HEADER_STRUCT = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "record_count" / Int32sb,
)

# construct's compiled form parses and builds this header several times faster; the interpreted one if it fails
try:
    _HEADER = BATCH_HEADER_STRUCT.compile()
except Exception:  # pragma: no cover - depends on the construct version
    _HEADER = BATCH_HEADER_STRUCT

_HEADER_FIELDS = (
    "base_offset",
    "batch_length",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "record_count",
)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed header of a v2 record batch, plus derived values."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression_id(self) -> int:
        """Codec id from attribute bits 0-2 (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def compression(self) -> str:
        """Codec name: ``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd`` (``unknown-N`` otherwise)."""
        cid = self.compression_id
        return _COMPRESSION_NAMES.get(cid, f"unknown-{cid}")

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime (attribute bit 3)."""
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> Optional[int]:
        """With attribute bit 6 set, BaseTimestamp carries the delete horizon."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size(self) -> int:
        """Total bytes of the batch on the wire (BatchLength + 12)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wraps at int32 like Kafka); -1 without sequences."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


@dataclass(slots=True)
class Record:
    """One record as stored in a batch: deltas relative to the batch's base values."""

    offset_delta: int
    timestamp_delta: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: list[tuple[str, Optional[bytes]]] = field(default_factory=list)
    attributes: int = 0


@dataclass(slots=True)
class DecodedRecord(Record):
    """A record read from a batch, with its absolute offset and timestamp.

    ``timestamp`` follows Kafka: BaseTimestamp + TimestampDelta, or the batch's
    MaxTimestamp when the batch uses LogAppendTime.
    """

    offset: int = field(kw_only=True)
    timestamp: int = field(kw_only=True)

    def to_record(self) -> Record:
        """The plain :class:`Record` (deltas only), e.g. to compare with encoder input."""
        return Record(
            self.offset_delta,
            self.timestamp_delta,
            self.key,
            self.value,
            list(self.headers),
            self.attributes,
        )


# --------------------------------------------------------------------------
# Zig-zag varints (protocol/varint.py's, with this module's errors)
# --------------------------------------------------------------------------


def zigzag_encode(value: int) -> int:
    """Map a signed int to an unsigned one: 0,-1,1,-2.. -> 0,1,2,3.. (valid for int64 inputs)."""
    return varint.zigzag(value, 64)


zigzag_decode = varint.unzigzag


def _check_range(name: str, value: int, bounds: tuple[int, int]) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{name}={value} out of range [{bounds[0]}, {bounds[1]}]")


def encode_varint(value: int) -> bytes:
    """Zig-zag varint of a signed 32-bit value (1-5 bytes)."""
    _check_range("varint", value, _INT32)
    return varint.uvarint_bytes(varint.zigzag(value, 32))


def encode_varlong(value: int) -> bytes:
    """Zig-zag varint of a signed 64-bit value (1-10 bytes)."""
    _check_range("varlong", value, _INT64)
    return varint.uvarint_bytes(varint.zigzag(value, 64))


def _read_uvarint(buf, pos: int, end: int, bits: int, what: str, where):
    """Unsigned varint at buf[pos:end] of < 2**bits; returns (value, pos); ``where`` builds the error."""
    try:
        return varint.read_uvarint(buf, pos, bits, end, what)
    except varint.VarintError as exc:
        raise where(exc.pos, str(exc)) from None


def _raw_error(offset: int, reason: str) -> DecodeError:
    return _error(offset, reason)


def decode_varint(buf, pos: int = 0, end: Optional[int] = None) -> tuple[int, int]:
    """Read a signed 32-bit zig-zag varint at ``buf[pos]``; returns ``(value, next_pos)``.

    Raises :class:`DecodeError` on truncation, on more than 5 bytes, or if the
    value does not fit in 32 bits.
    """
    if end is None:
        end = len(buf)
    u, pos = _read_uvarint(buf, pos, end, 32, "varint", _raw_error)
    return zigzag_decode(u), pos


def decode_varlong(buf, pos: int = 0, end: Optional[int] = None) -> tuple[int, int]:
    """Read a signed 64-bit zig-zag varint (at most 10 bytes); returns ``(value, next_pos)``."""
    if end is None:
        end = len(buf)
    u, pos = _read_uvarint(buf, pos, end, 64, "varlong", _raw_error)
    return zigzag_decode(u), pos


# --------------------------------------------------------------------------
# CRC
# --------------------------------------------------------------------------


def _as_bytes_view(buf) -> memoryview:
    mv = memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _batch_size_of(mv: memoryview) -> Optional[int]:
    """Declared total size of the batch at mv[0], or None if unreadable/implausible."""
    if len(mv) < LOG_OVERHEAD:
        return None
    batch_length = int.from_bytes(mv[LENGTH_OFFSET:LOG_OVERHEAD], "big", signed=True)
    if batch_length < MIN_BATCH_LENGTH:
        return None
    return batch_length + LOG_OVERHEAD


def compute_crc(batch) -> int:
    """CRC-32C over the bytes from Attributes to the end of the batch (as declared by BatchLength)."""
    mv = _as_bytes_view(batch)
    size = _batch_size_of(mv)
    if size is None or len(mv) < BATCH_HEADER_SIZE:
        raise _error(0, f"batch too short for a v2 header ({len(mv)} bytes)")
    if size > len(mv):
        raise _error(len(mv), f"batch truncated: declares {size} bytes, {len(mv)} present")
    return _crc32c.crc32c(mv[ATTRIBUTES_OFFSET:size])


def verify_crc(batch) -> bool:
    """True iff the stored CRC matches the CRC-32C of the batch.

    Returns False (never raises) for input too short or inconsistent to hold a
    complete batch.  Bytes after the declared batch end are ignored.
    """
    mv = _as_bytes_view(batch)
    size = _batch_size_of(mv)
    if size is None or len(mv) < BATCH_HEADER_SIZE or size > len(mv):
        return False
    stored = int.from_bytes(mv[CRC_OFFSET:ATTRIBUTES_OFFSET], "big")
    return stored == _crc32c.crc32c(mv[ATTRIBUTES_OFFSET:size])


# --------------------------------------------------------------------------
# Header reading and batch walking
# --------------------------------------------------------------------------


def read_batch_header(buf, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte header of the batch at ``buf[pos:]`` without touching its records.

    Checks that the magic byte is 2 and that BatchLength is at least the header
    size; does *not* require the rest of the batch to be present nor check the CRC.
    """
    mv = _as_bytes_view(buf)
    if pos < 0:
        raise ValueError("pos must be >= 0")
    avail = len(mv) - pos
    if avail <= MAGIC_OFFSET:
        raise _error(pos + max(avail, 0), f"truncated batch header ({max(avail, 0)} of {BATCH_HEADER_SIZE} bytes)", None)
    magic = mv[pos + MAGIC_OFFSET]
    if magic >= 0x80:
        magic -= 0x100
    if magic != MAGIC:
        raise _error(pos + MAGIC_OFFSET, f"unsupported magic {magic} (only v2 record batches)", magic)
    if avail < BATCH_HEADER_SIZE:
        raise _error(pos + avail, f"truncated batch header ({avail} of {BATCH_HEADER_SIZE} bytes)")
    try:
        c = _HEADER.parse(bytes(mv[pos : pos + BATCH_HEADER_SIZE]))
    except ConstructError as exc:  # pragma: no cover - 61 bytes always parse
        raise _error(pos, f"bad batch header: {exc}") from None
    header = BatchHeader(*(c[name] for name in _HEADER_FIELDS))
    if header.batch_length < MIN_BATCH_LENGTH:
        raise _error(
            pos + LENGTH_OFFSET,
            f"batch length {header.batch_length} smaller than the header ({MIN_BATCH_LENGTH})",
        )
    return header


def iter_batches(buf) -> Iterator[tuple[BatchHeader, bytes]]:
    """Walk a concatenation of record batches, yielding ``(header, batch_bytes)``.

    A truncated last batch (allowed in Fetch responses, which cut at the byte
    limit) is silently skipped, as Kafka's ByteBufferLogInputStream does.  A
    complete batch with a bad magic or a BatchLength below the header size
    raises :class:`DecodeError`.  CRCs are not checked (see :func:`verify_crc`).
    """
    mv = _as_bytes_view(buf)
    n = len(mv)
    pos = 0
    while n - pos >= LOG_OVERHEAD:
        batch_length = int.from_bytes(mv[pos + LENGTH_OFFSET : pos + LOG_OVERHEAD], "big", signed=True)
        if batch_length < MIN_BATCH_LENGTH:
            raise _error(
                pos + LENGTH_OFFSET,
                f"batch length {batch_length} smaller than the header ({MIN_BATCH_LENGTH})",
            )
        size = batch_length + LOG_OVERHEAD
        if n - pos < size:
            return  # partial trailing batch
        header = read_batch_header(mv, pos)
        yield header, bytes(mv[pos : pos + size])
        pos += size


# --------------------------------------------------------------------------
# Rewriting fields outside the CRC
# --------------------------------------------------------------------------


def set_base_offset(batch, base_offset: int) -> bytes:
    """Return a copy of ``batch`` with BaseOffset replaced.

    BaseOffset lies before the CRC-covered range, so the CRC stays valid
    (this is what a broker does when it assigns offsets to a produced batch).
    """
    _check_range("base_offset", base_offset, _INT64)
    mv = _as_bytes_view(batch)
    read_batch_header(mv)
    return base_offset.to_bytes(8, "big", signed=True) + bytes(mv[8:])


def set_partition_leader_epoch(batch, epoch: int) -> bytes:
    """Return a copy of ``batch`` with PartitionLeaderEpoch replaced (also outside the CRC)."""
    _check_range("partition_leader_epoch", epoch, _INT32)
    mv = _as_bytes_view(batch)
    read_batch_header(mv)
    return (
        bytes(mv[:PARTITION_LEADER_EPOCH_OFFSET])
        + epoch.to_bytes(4, "big", signed=True)
        + bytes(mv[MAGIC_OFFSET:])
    )


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------


def _encode_nullable(out: bytearray, data, what: str) -> None:
    if data is None:
        out.append(1)  # zig-zag(-1)
        return
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes or None, got {type(data).__name__}")
    data = bytes(data)
    if len(data) > _INT32[1]:
        raise ValueError(f"{what} too long")
    varint.write_uvarint(out, len(data) << 1)
    out += data


def _encode_record(out: bytearray, rec: Record) -> None:
    _check_range("record attributes", rec.attributes, _INT8)
    _check_range("offset_delta", rec.offset_delta, _INT32)
    _check_range("timestamp_delta", rec.timestamp_delta, _INT64)
    body = bytearray()
    body.append(rec.attributes & 0xFF)
    varint.write_uvarint(body, zigzag_encode(rec.timestamp_delta))
    varint.write_uvarint(body, zigzag_encode(rec.offset_delta))
    _encode_nullable(body, rec.key, "key")
    _encode_nullable(body, rec.value, "value")
    headers = rec.headers if rec.headers is not None else ()
    varint.write_uvarint(body, zigzag_encode(len(headers)))
    for item in headers:
        hkey, hvalue = item
        if not isinstance(hkey, str):
            raise TypeError(f"header key must be str, got {type(hkey).__name__}")
        kb = hkey.encode("utf-8")
        varint.write_uvarint(body, len(kb) << 1)
        body += kb
        _encode_nullable(body, hvalue, "header value")
    if len(body) > _INT32[1]:
        raise ValueError("record too large")
    varint.write_uvarint(out, len(body) << 1)
    out += body


def _gzip_compress(data: bytes) -> bytes:
    # Deterministic gzip member (mtime 0), zlib's default level 6 -- the same
    # default as Java's GZIPOutputStream that Kafka uses.
    co = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return co.compress(data) + co.flush()


def encode_batch(
    records: Sequence[Record],
    base_offset: int = 0,
    base_timestamp: Optional[int] = None,
    compression: str = "none",
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = CREATE_TIME,
    *,
    max_timestamp: Optional[int] = None,
    control: bool = False,
) -> bytes:
    """Encode ``records`` as one v2 record batch.

    * LastOffsetDelta is the last record's ``offset_delta`` (0 for an empty
      batch); offset deltas must be >= 0 and strictly increasing, as Kafka's
      MemoryRecordsBuilder requires.
    * ``base_timestamp`` defaults to the current time in ms (-1 for an empty batch).
    * MaxTimestamp is ``base_timestamp + max(timestamp_delta)`` (-1 when empty)
      unless ``max_timestamp`` is given (a broker sets it for LogAppendTime).
    * ``compression`` is ``"none"`` or ``"gzip"``; gzip is always applied when
      asked for (no fallback to uncompressed).
    """
    records = list(records)
    if compression not in ("none", "gzip"):
        raise ValueError(f"compression {compression!r} not supported for encoding (use 'none' or 'gzip')")
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError("timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime)")
    _check_range("base_offset", base_offset, _INT64)
    _check_range("producer_id", producer_id, _INT64)
    _check_range("producer_epoch", producer_epoch, _INT16)
    _check_range("base_sequence", base_sequence, _INT32)
    _check_range("partition_leader_epoch", partition_leader_epoch, _INT32)

    if base_timestamp is None:
        base_timestamp = int(time.time() * 1000) if records else NO_TIMESTAMP
    _check_range("base_timestamp", base_timestamp, _INT64)

    payload = bytearray()
    last_delta = -1
    max_ts_delta = None
    for rec in records:
        if not isinstance(rec, Record):
            raise TypeError(f"expected Record, got {type(rec).__name__}")
        if rec.offset_delta <= last_delta:
            raise ValueError(
                f"offset deltas must be >= 0 and strictly increasing ({rec.offset_delta} after {last_delta})"
            )
        last_delta = rec.offset_delta
        _encode_record(payload, rec)
        if max_ts_delta is None or rec.timestamp_delta > max_ts_delta:
            max_ts_delta = rec.timestamp_delta

    if max_timestamp is None:
        max_timestamp = NO_TIMESTAMP if max_ts_delta is None else base_timestamp + max_ts_delta
    _check_range("max_timestamp", max_timestamp, _INT64)
    _check_range("base_offset + last offset delta", base_offset + max(last_delta, 0), _INT64)

    attributes = _COMPRESSION_IDS[compression]
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if control:
        attributes |= CONTROL_FLAG_MASK

    if compression == "gzip" and records:
        payload = _gzip_compress(bytes(payload))

    batch_length = MIN_BATCH_LENGTH + len(payload)
    if batch_length > _INT32[1]:
        raise ValueError("batch too large")

    header = _HEADER.build(
        dict(
            base_offset=base_offset,
            batch_length=batch_length,
            partition_leader_epoch=partition_leader_epoch,
            magic=MAGIC,
            crc=0,
            attributes=attributes,
            last_offset_delta=max(last_delta, 0),
            base_timestamp=base_timestamp,
            max_timestamp=max_timestamp,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            record_count=len(records),
        )
    )
    out = bytearray(header)
    out += payload
    crc = _crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    out[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc.to_bytes(4, "big")
    return bytes(out)


# --------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------


def _gunzip(data: bytes, limit: int, fail) -> bytes:
    """Decompress one or more concatenated gzip members, refusing output above ``limit``."""
    out = bytearray()
    if not data:
        raise fail("empty gzip payload")
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(data, limit - len(out) + 1)
        except zlib.error as exc:
            raise fail(f"gzip: {exc}") from None
        out += chunk
        if len(out) > limit:
            raise fail(f"decompressed records exceed {limit} bytes")
        if not d.eof:
            if d.unconsumed_tail:
                raise fail(f"decompressed records exceed {limit} bytes")
            raise fail("gzip: truncated stream")
        data = d.unused_data
    return bytes(out)


def _decode_records(
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: Optional[int],
    where,
) -> list[DecodedRecord]:
    """Decode exactly ``count`` records occupying buf[pos:end].

    ``where(position, reason)`` builds the DecodeError for a position in ``buf``.
    """
    if count > (end - pos) // MIN_RECORD_SIZE:
        raise where(pos, f"record count {count} cannot fit in {end - pos} bytes")
    rd = _read_uvarint
    records: list[DecodedRecord] = []
    append = records.append
    for index in range(count):
        if pos >= end:
            raise where(pos, f"record count {count} but only {index} records present")
        rec_start = pos
        # Record length (signed varint).
        b = buf[pos]
        if b < 0x80:
            u = b
            pos += 1
        else:
            u, pos = rd(buf, pos, end, 32, "record length", where)
        length = (u >> 1) ^ -(u & 1)
        if length < 0:
            raise where(rec_start, f"negative record length {length}")
        if length > end - pos:
            raise where(rec_start, f"record length {length} past the end ({end - pos} bytes left)")
        rec_end = pos + length
        if pos >= rec_end:
            raise where(pos, "empty record body")
        attributes = buf[pos]
        if attributes >= 0x80:
            attributes -= 0x100
        pos += 1
        u, pos = rd(buf, pos, rec_end, 64, "timestamp delta", where)
        timestamp_delta = (u >> 1) ^ -(u & 1)
        u, pos = rd(buf, pos, rec_end, 32, "offset delta", where)
        offset_delta = (u >> 1) ^ -(u & 1)

        # Key and value: nullable bytes.
        u, pos = rd(buf, pos, rec_end, 32, "key length", where)
        n = (u >> 1) ^ -(u & 1)
        if n == -1:
            key = None
        elif n < 0:
            raise where(pos, f"negative key length {n}")
        elif n > rec_end - pos:
            raise where(pos, f"key length {n} past the end of the record")
        else:
            key = buf[pos : pos + n]
            pos += n
        u, pos = rd(buf, pos, rec_end, 32, "value length", where)
        n = (u >> 1) ^ -(u & 1)
        if n == -1:
            value = None
        elif n < 0:
            raise where(pos, f"negative value length {n}")
        elif n > rec_end - pos:
            raise where(pos, f"value length {n} past the end of the record")
        else:
            value = buf[pos : pos + n]
            pos += n

        u, pos = rd(buf, pos, rec_end, 32, "header count", where)
        hcount = (u >> 1) ^ -(u & 1)
        if hcount < 0:
            raise where(pos, f"negative header count {hcount}")
        if hcount > (rec_end - pos) // 2:  # a header takes at least 2 bytes
            raise where(pos, f"header count {hcount} cannot fit in the record")
        headers: list[tuple[str, Optional[bytes]]] = []
        for _ in range(hcount):
            u, pos = rd(buf, pos, rec_end, 32, "header key length", where)
            n = (u >> 1) ^ -(u & 1)
            if n < 0:
                raise where(pos, f"negative header key length {n}")
            if n > rec_end - pos:
                raise where(pos, f"header key length {n} past the end of the record")
            try:
                hkey = buf[pos : pos + n].decode("utf-8")
            except UnicodeDecodeError:
                raise where(pos, "header key is not valid UTF-8") from None
            pos += n
            u, pos = rd(buf, pos, rec_end, 32, "header value length", where)
            n = (u >> 1) ^ -(u & 1)
            if n == -1:
                hvalue = None
            elif n < 0:
                raise where(pos, f"negative header value length {n}")
            elif n > rec_end - pos:
                raise where(pos, f"header value length {n} past the end of the record")
            else:
                hvalue = buf[pos : pos + n]
                pos += n
            headers.append((hkey, hvalue))

        if pos != rec_end:
            raise where(pos, f"record declares {length} bytes but its fields end {rec_end - pos} bytes early")

        append(
            DecodedRecord(
                offset_delta,
                timestamp_delta,
                key,
                value,
                headers,
                attributes,
                offset=base_offset + offset_delta,
                timestamp=log_append_time if log_append_time is not None else base_timestamp + timestamp_delta,
            )
        )
    if pos != end:
        raise where(pos, f"{end - pos} bytes left after the {count} declared records")
    return records


def decode_batch(
    batch_bytes,
    verify: bool = True,
    *,
    max_decompressed_size: int = MAX_DECOMPRESSED_SIZE,
) -> tuple[BatchHeader, list[DecodedRecord]]:
    """Decode one complete v2 batch into its header and records.

    ``batch_bytes`` must hold exactly one batch (as yielded by
    :func:`iter_batches`).  With ``verify`` the CRC is checked first.
    Compression none and gzip are supported; snappy/lz4/zstd raise
    :class:`UnsupportedCompression`.  Any malformation raises :class:`DecodeError`.
    """
    mv = _as_bytes_view(batch_bytes)
    header = read_batch_header(mv)
    size = header.size
    if size > len(mv):
        raise _error(len(mv), f"batch truncated: declares {size} bytes, {len(mv)} present")
    if size < len(mv):
        raise _error(size, f"{len(mv) - size} trailing bytes after the batch")
    if verify:
        computed = _crc32c.crc32c(mv[ATTRIBUTES_OFFSET:size])
        if computed != header.crc:
            raise _error(CRC_OFFSET, f"CRC mismatch: stored {header.crc:#010x}, computed {computed:#010x}")
    count = header.record_count
    if count < 0:
        raise _error(RECORDS_COUNT_OFFSET, f"negative record count {count}")

    log_append_time = header.max_timestamp if header.timestamp_type == LOG_APPEND_TIME else None
    cid = header.compression_id
    if cid == COMPRESSION_NONE:
        buf = bytes(mv)

        def where(p: int, reason: str) -> DecodeError:
            return _error(p, reason)

        records = _decode_records(
            buf, RECORDS_OFFSET, size, count, header.base_offset, header.base_timestamp, log_append_time, where
        )
        return header, records

    if count == 0 and size == RECORDS_OFFSET:
        # Kafka does not look at the payload of an empty batch.
        return header, []
    if cid in (COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD):
        raise UnsupportedCompression(
            API, MAGIC, ATTRIBUTES_OFFSET, f"{_COMPRESSION_NAMES[cid]} compression is not supported"
        )
    if cid != COMPRESSION_GZIP:
        raise _error(ATTRIBUTES_OFFSET, f"unknown compression codec {cid}")

    def fail(reason: str) -> DecodeError:
        return _error(RECORDS_OFFSET, reason)

    raw = _gunzip(bytes(mv[RECORDS_OFFSET:size]), max_decompressed_size, fail)

    def where_inner(p: int, reason: str) -> DecodeError:
        return _error(RECORDS_OFFSET, f"{reason} (at byte {p} of the decompressed records)")

    records = _decode_records(
        raw, 0, len(raw), count, header.base_offset, header.base_timestamp, log_append_time, where_inner
    )
    return header, records
