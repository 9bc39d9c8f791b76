"""Tests for groupcoord.protocol.records (Kafka record batches v2)."""

from __future__ import annotations

import gzip
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.util import encode_varint as kp_encode_varint

from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.records import (
    BATCH_HEADER_SIZE,
    BATCH_HEADER_STRUCT,
    BatchHeader,
    DecodedRecord,
    Record,
    UnsupportedCompression,
    compute_crc,
    decode_batch,
    decode_varint,
    decode_varlong,
    encode_batch,
    encode_varint,
    encode_varlong,
    iter_batches,
    read_batch_header,
    set_base_offset,
    set_partition_leader_epoch,
    verify_crc,
    zigzag_decode,
    zigzag_encode,
)

TS = 1_700_000_000_000  # fixed base timestamp used throughout


# ---------------------------------------------------------------------------
# Independent helpers (deliberately not using the module under test)
# ---------------------------------------------------------------------------


def ref_crc32c(data: bytes) -> int:
    """Bit-by-bit CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def ref_varint(value: int) -> bytes:
    """Zig-zag varint written independently of the module under test."""
    out = bytearray()
    kp_encode_varint(value, out.append)
    return bytes(out)


_HDR = struct.Struct(">qiibIhiqqqhii")


def raw_batch(
    blob: bytes,
    count: int,
    *,
    attributes: int = 0,
    base_offset: int = 0,
    magic: int = 2,
    last_offset_delta: int = 0,
    base_timestamp: int = TS,
    max_timestamp: int = TS,
) -> bytes:
    """Build a batch around an arbitrary records blob with a correct length and CRC."""
    head = _HDR.pack(
        base_offset, 49 + len(blob), -1, magic, 0, attributes, last_offset_delta,
        base_timestamp, max_timestamp, -1, -1, -1, count,
    )
    body = bytearray(head + blob)
    struct.pack_into(">I", body, 17, ref_crc32c(bytes(body[21:])))
    return bytes(body)


def raw_record(body: bytes) -> bytes:
    """Prefix a record body with its varint length."""
    return ref_varint(len(body)) + body


def with_fixed_crc(batch: bytes | bytearray) -> bytes:
    b = bytearray(batch)
    struct.pack_into(">I", b, 17, ref_crc32c(bytes(b[21:])))
    return bytes(b)


def plain(records):
    return [r.to_record() for r in records]


def kp_build(records: list[Record], *, base_ts=TS, compression=0, transactional=False,
             producer_id=-1, producer_epoch=-1, base_sequence=-1) -> bytes:
    b = KpBuilder(
        magic=2, compression_type=compression, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, batch_size=1 << 24,
    )
    for r in records:
        assert b.append(r.offset_delta, base_ts + r.timestamp_delta, r.key, r.value, r.headers) is not None
    return bytes(b.build())


def kp_read(batch: bytes):
    kb = KpBatch(batch)
    assert kb.validate_crc()
    return kb, [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kb]


# ---------------------------------------------------------------------------
# Basics
# ---------------------------------------------------------------------------


def test_header_struct_is_61_bytes_and_compiles():
    assert BATCH_HEADER_SIZE == 61
    assert BATCH_HEADER_STRUCT.sizeof() == 61
    compiled = BATCH_HEADER_STRUCT.compile()
    raw = bytes(range(61))
    a, b = compiled.parse(raw), BATCH_HEADER_STRUCT.parse(raw)
    for name in BatchHeader.__dataclass_fields__:
        assert a[name] == b[name]
    assert a.magic == 16 and a.crc == 0x11121314 and a.record_count == 0x393A3B3C
    assert compiled.build(a) == raw


def test_reference_crc32c_check_value():
    # The standard CRC-32C check value; proves the reference implementation is CRC-32C.
    assert ref_crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"),
        (64, "8001"), (300, "d804"), (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"),
    ],
)
def test_varint_known_encodings(value, encoded):
    assert encode_varint(value).hex() == encoded
    assert decode_varint(bytes.fromhex(encoded)) == (value, len(encoded) // 2)


def test_varlong_extremes():
    for v in (2**63 - 1, -(2**63), 2**40, -(2**40) - 1):
        enc = encode_varlong(v)
        assert enc == ref_varint(v)
        assert decode_varlong(enc) == (v, len(enc))
    assert len(encode_varlong(-(2**63))) == 10


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_roundtrip_matches_kafka_python(v):
    enc = encode_varint(v)
    assert enc == ref_varint(v)
    assert decode_varint(enc + b"\xff") == (v, len(enc))
    assert zigzag_decode(zigzag_encode(v)) == v


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_roundtrip(v):
    enc = encode_varlong(v)
    assert enc == ref_varint(v)
    assert decode_varlong(enc) == (v, len(enc))


@pytest.mark.parametrize(
    "raw, fn",
    [
        ("", decode_varint),
        ("80", decode_varint),
        ("ffffffff", decode_varint),
        ("808080808000", decode_varint),  # 6 bytes: too long
        ("ffffffff1f", decode_varint),  # 5 bytes but more than 32 bits
        ("ffffffffffffffffff7f", decode_varlong),  # 10 bytes, more than 64 bits
        ("8080808080808080808000", decode_varlong),  # 11 bytes
    ],
)
def test_varint_malformed(raw, fn):
    with pytest.raises(DecodeError):
        fn(bytes.fromhex(raw))


def test_varint_non_canonical_but_within_limits():
    # 5 bytes is the maximum for a varint, 10 for a varlong; padding is accepted as Kafka does.
    assert decode_varint(bytes.fromhex("8080808000")) == (0, 5)
    assert decode_varlong(bytes.fromhex("80808080808080808000")) == (0, 10)


def test_encode_varint_range():
    with pytest.raises(ValueError):
        encode_varint(2**31)
    with pytest.raises(ValueError):
        encode_varlong(-(2**63) - 1)


# ---------------------------------------------------------------------------
# Hand-written golden vector
# ---------------------------------------------------------------------------

# One record, key null, value b"hi", no headers, base timestamp 1700000000000.
TINY_HEX = (
    "0000000000000000"  # baseOffset 0
    "0000003a"  # batchLength 58 = 70 - 12
    "ffffffff"  # partitionLeaderEpoch -1
    "02"  # magic 2
    "bbcc4115"  # crc (CRC-32C of bytes 21..69, checked below with ref_crc32c)
    "0000"  # attributes: no compression, CreateTime, not transactional/control
    "00000000"  # lastOffsetDelta 0
    "0000018bcfe56800"  # baseTimestamp 1700000000000
    "0000018bcfe56800"  # maxTimestamp 1700000000000
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # records count 1
    "10"  # record length 8 (zig-zag 16)
    "00"  # record attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "01"  # key length -1 (null)
    "04"  # value length 2
    "6869"  # b"hi"
    "00"  # header count 0
)


def test_tiny_vector_crc_is_independently_correct():
    tiny = bytes.fromhex(TINY_HEX)
    assert len(tiny) == 70
    assert int.from_bytes(tiny[17:21], "big") == ref_crc32c(tiny[21:]) == 0xBBCC4115
    assert compute_crc(tiny) == 0xBBCC4115
    assert verify_crc(tiny)


def test_tiny_vector_encode_and_decode():
    tiny = bytes.fromhex(TINY_HEX)
    assert encode_batch([Record(0, 0, None, b"hi", [])], base_timestamp=TS) == tiny
    header, records = decode_batch(tiny)
    assert header == BatchHeader(0, 58, -1, 2, 0xBBCC4115, 0, 0, TS, TS, -1, -1, -1, 1)
    assert records == [DecodedRecord(0, 0, None, b"hi", [], 0, offset=0, timestamp=TS)]
    _, theirs = kp_read(tiny)
    assert theirs == [(0, TS, None, b"hi", [])]


# ---------------------------------------------------------------------------
# Byte-for-byte against kafka-python's builder, and cross-decoding
# ---------------------------------------------------------------------------

GOLDEN_CASES = {
    "simple": (
        [Record(0, 0, b"k", b"v", [("h", b"x")]), Record(1, 5, None, b"vv", [])],
        {},
    ),
    "nulls-and-unicode-headers": (
        [Record(0, 0, None, None, [("ключ", None), ("", b"")]),
         Record(1, -3, b"", b"", [("a", b"b"), ("a", b"c")])],
        {},
    ),
    "big-values-multibyte-varints": (
        [Record(i, i * 1000, bytes([i]) * (130 + i), bytes(range(256)) * 70, [("h" * 200, b"z" * 300)])
         for i in range(3)],
        {},
    ),
    "transactional-idempotent": (
        [Record(0, 0, b"a", b"1", []), Record(1, 1, b"b", b"2", []), Record(2, 7, b"c", b"3", [])],
        dict(transactional=True, producer_id=4242, producer_epoch=3, base_sequence=17),
    ),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_byte_for_byte_against_kafka_python(case):
    records, kw = GOLDEN_CASES[case]
    theirs = kp_build(records, **kw)
    # kafka-python's builder writes PartitionLeaderEpoch 0 (Java's producer writes -1).
    ours = encode_batch(records, base_timestamp=TS, partition_leader_epoch=0, **kw)
    assert ours == theirs
    assert verify_crc(theirs)

    header, decoded = decode_batch(theirs)
    assert plain(decoded) == records
    assert [r.offset for r in decoded] == [r.offset_delta for r in records]
    assert [r.timestamp for r in decoded] == [TS + r.timestamp_delta for r in records]
    assert header.is_transactional == kw.get("transactional", False)
    assert header.producer_id == kw.get("producer_id", -1)

    kb, theirs_view = kp_read(ours)
    assert theirs_view == [
        (r.offset_delta, TS + r.timestamp_delta, r.key, r.value, r.headers) for r in records
    ]
    assert kb.last_offset == header.last_offset
    assert kb.max_timestamp == header.max_timestamp


def test_gzip_cross_decoding_with_kafka_python():
    records = [Record(i, i, b"key-%d" % i, b"value " * 50, [("trace", b"abc" * 10)]) for i in range(20)]
    theirs = kp_build(records, compression=1)
    header = read_batch_header(theirs)
    assert header.compression == "gzip"  # compressible, so kafka-python kept gzip
    _, decoded = decode_batch(theirs)
    assert plain(decoded) == records

    ours = encode_batch(records, base_timestamp=TS, compression="gzip")
    assert read_batch_header(ours).compression == "gzip"
    assert len(ours) < len(encode_batch(records, base_timestamp=TS))
    kb, view = kp_read(ours)
    assert kb.compression_type == 1
    assert view == [(r.offset_delta, TS + r.timestamp_delta, r.key, r.value, r.headers) for r in records]
    # The gzip member is deterministic (mtime 0), so encoding is reproducible.
    assert ours == encode_batch(records, base_timestamp=TS, compression="gzip")


def test_gzip_with_multiple_members_decodes():
    records = [Record(0, 0, b"k", b"v" * 40, []), Record(1, 1, None, b"w" * 40, [])]
    blob = b"".join(raw_record(b) for b in (
        b"\x00\x00\x00" + ref_varint(1) + b"k" + ref_varint(40) + b"v" * 40 + b"\x00",
        b"\x00\x02\x02\x01" + ref_varint(40) + b"w" * 40 + b"\x00",
    ))
    split = len(blob) // 2
    payload = gzip.compress(blob[:split], mtime=0) + gzip.compress(blob[split:], mtime=0)
    _, decoded = decode_batch(raw_batch(payload, 2, attributes=1, last_offset_delta=1))
    assert plain(decoded) == records


# ---------------------------------------------------------------------------
# Header-only access, offsets, CRC-preserving rewrites
# ---------------------------------------------------------------------------


def test_read_batch_header_without_records():
    batch = encode_batch(
        [Record(0, 0, b"k", b"v", []), Record(4, 9, b"k", b"v", [])],
        base_offset=100, base_timestamp=TS, producer_id=7, producer_epoch=1, base_sequence=5,
        transactional=True, partition_leader_epoch=12, timestamp_type=1,
    )
    h = read_batch_header(batch[:61])  # only the header bytes are present
    assert (h.base_offset, h.magic, h.record_count) == (100, 2, 2)
    assert h.batch_length == len(batch) - 12 and h.size == len(batch)
    assert h.last_offset_delta == 4 and h.last_offset == 104 and h.next_offset == 105
    assert h.partition_leader_epoch == 12
    assert h.base_timestamp == TS and h.max_timestamp == TS + 9
    assert h.is_transactional and not h.is_control and h.timestamp_type == 1
    assert h.compression == "none" and h.compression_id == 0
    assert h.producer_id == 7 and h.producer_epoch == 1 and h.base_sequence == 5
    assert h.last_sequence == 9
    assert h.crc == compute_crc(batch)
    assert not h.has_delete_horizon and h.delete_horizon_ms is None
    # pos argument
    assert read_batch_header(b"\x00" * 5 + batch, 5) == h


def test_log_append_time_uses_max_timestamp():
    batch = encode_batch([Record(0, 0, b"a", b"b", []), Record(1, 3, b"a", b"b", [])],
                         base_timestamp=TS, timestamp_type=1, max_timestamp=TS + 999)
    header, records = decode_batch(batch)
    assert header.timestamp_type == 1
    assert [r.timestamp for r in records] == [TS + 999, TS + 999]
    _, view = kp_read(batch)
    assert [t for _, t, *_ in view] == [TS + 999, TS + 999]


def test_control_and_delete_horizon_flags():
    blob = raw_record(b"\x00\x00\x00" + ref_varint(4) + b"\x00\x00\x00\x00" + ref_varint(6) + b"\x00" * 6 + b"\x00")
    batch = raw_batch(blob, 1, attributes=0x20 | 0x10 | 0x40, base_timestamp=TS + 5)
    header, records = decode_batch(batch)
    assert header.is_control and header.is_transactional
    assert header.has_delete_horizon and header.delete_horizon_ms == TS + 5
    assert records[0].key == b"\x00\x00\x00\x00"
    ctl = encode_batch([Record(0, 0, b"\x00\x00\x00\x01", b"\x00" * 6, [])], base_timestamp=TS,
                       producer_id=1, producer_epoch=0, transactional=True, control=True)
    assert read_batch_header(ctl).is_control


def test_set_base_offset_keeps_crc_valid():
    records = [Record(0, 0, b"a", b"1", [("h", b"x")]), Record(1, 2, b"b", b"2", [])]
    batch = encode_batch(records, base_timestamp=TS, partition_leader_epoch=0)
    moved = set_base_offset(bytearray(batch), 1_000_000)
    assert isinstance(moved, bytes)
    assert moved[:8] == (1_000_000).to_bytes(8, "big")
    assert moved[8:] == batch[8:]  # CRC bytes untouched ...
    assert verify_crc(moved)  # ... and still valid
    assert ref_crc32c(moved[21:]) == int.from_bytes(moved[17:21], "big")
    header, decoded = decode_batch(moved, verify=True)
    assert header.base_offset == 1_000_000 and header.last_offset == 1_000_001
    assert [r.offset for r in decoded] == [1_000_000, 1_000_001]
    kb, view = kp_read(moved)  # kafka-python's reader validates the CRC too
    assert kb.base_offset == 1_000_000
    assert [o for o, *_ in view] == [1_000_000, 1_000_001]
    with pytest.raises(ValueError):
        set_base_offset(batch, 2**63)
    with pytest.raises(DecodeError):
        set_base_offset(batch[:40], 1)


def test_set_partition_leader_epoch_keeps_crc_valid():
    batch = encode_batch([Record(0, 0, b"a", b"1", [])], base_timestamp=TS)
    out = set_partition_leader_epoch(batch, 77)
    assert read_batch_header(out).partition_leader_epoch == 77
    assert verify_crc(out) and out[16:] == batch[16:]


def test_crc_covers_attributes_onwards_only():
    batch = bytearray(encode_batch([Record(0, 0, b"a", b"1", [])], base_timestamp=TS))
    batch[12:16] = b"\x00\x00\x00\x09"  # partition leader epoch: not covered
    assert verify_crc(batch)
    batch[21] ^= 0x08  # attributes: covered
    assert not verify_crc(batch)
    with pytest.raises(DecodeError):
        decode_batch(batch)
    decode_batch(batch, verify=False)  # still structurally fine


# ---------------------------------------------------------------------------
# iter_batches
# ---------------------------------------------------------------------------


def _three_batches():
    a = encode_batch([Record(0, 0, b"a", b"1", [])], base_offset=0, base_timestamp=TS)
    b = encode_batch([Record(0, 0, b"b", b"2", []), Record(1, 1, b"c", b"3", [])], base_offset=1,
                     base_timestamp=TS, compression="gzip")
    c = encode_batch([], base_offset=3, base_timestamp=TS)
    return a, b, c


def test_iter_batches_walks_concatenation():
    a, b, c = _three_batches()
    got = list(iter_batches(a + b + c))
    assert [blob for _, blob in got] == [a, b, c]
    assert [h.base_offset for h, _ in got] == [0, 1, 3]
    assert [h.next_offset for h, _ in got][:2] == [1, 3]
    assert list(iter_batches(b"")) == []
    assert list(iter_batches(memoryview(a + b))) == [(read_batch_header(a), a), (read_batch_header(b), b)]


def test_iter_batches_skips_truncated_last_batch():
    a, b, c = _three_batches()
    for cut in range(0, len(b)):
        got = [blob for _, blob in iter_batches(a + c + b[:cut])]
        assert got == [a, c], cut


def test_iter_batches_rejects_bad_complete_batches():
    a, b, _ = _three_batches()
    bad_magic = bytearray(b)
    bad_magic[16] = 1
    with pytest.raises(DecodeError):
        list(iter_batches(a + bytes(bad_magic)))
    tiny_len = bytearray(b)
    tiny_len[8:12] = (48).to_bytes(4, "big")
    with pytest.raises(DecodeError):
        list(iter_batches(a + bytes(tiny_len)))


# ---------------------------------------------------------------------------
# Malformed input: each must be a DecodeError
# ---------------------------------------------------------------------------

GOOD_RECORD = b"\x00\x00\x00" + b"\x02k" + b"\x02v" + b"\x00"  # attrs, ts, off, key, value, 0 headers


def test_good_raw_batch_decodes():
    _, recs = decode_batch(raw_batch(raw_record(GOOD_RECORD), 1))
    assert plain(recs) == [Record(0, 0, b"k", b"v", [])]


MALFORMED = {  # name: (bytes, text expected in the error)
    "count-too-high": (raw_batch(raw_record(GOOD_RECORD), 2), "record count"),
    "count-too-low": (raw_batch(raw_record(GOOD_RECORD) * 2, 1), "bytes left after"),
    "count-negative": (raw_batch(raw_record(GOOD_RECORD), -1), "negative record count"),
    "count-huge": (raw_batch(raw_record(GOOD_RECORD), 2**31 - 1), "record count"),
    "record-length-negative": (raw_batch(ref_varint(-5) + GOOD_RECORD, 1), "negative record length"),
    "record-length-past-end": (raw_batch(ref_varint(len(GOOD_RECORD) + 1) + GOOD_RECORD, 1), "record length 9 past"),
    "record-length-short": (raw_batch(ref_varint(len(GOOD_RECORD) - 1) + GOOD_RECORD, 1), "truncated header count"),
    "record-length-zero": (raw_batch(b"\x00" + b"\x00" * 6, 1), "empty record body"),
    "key-length-negative": (raw_batch(raw_record(b"\x00\x00\x00" + ref_varint(-2) + b"\x02v\x00"), 1),
                            "negative key length"),
    "key-length-past-end": (raw_batch(raw_record(b"\x00\x00\x00" + ref_varint(100) + b"k\x02v\x00"), 1),
                            "key length 100 past"),
    "value-length-past-end": (raw_batch(raw_record(b"\x00\x00\x00\x02k" + ref_varint(50) + b"v\x00"), 1),
                              "value length 50 past"),
    "value-length-negative": (raw_batch(raw_record(b"\x00\x00\x00\x02k" + ref_varint(-7) + b"\x00"), 1),
                              "negative value length"),
    "header-count-negative": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v" + ref_varint(-1)), 1),
                              "negative header count"),
    "header-count-huge": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v" + ref_varint(2**31 - 1) + b"\x00\x00"), 1),
                          "cannot fit in the record"),
    "header-key-negative": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v\x02" + ref_varint(-1) + b"\x00"), 1),
                            "negative header key length"),
    "header-key-past-end": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v\x02" + ref_varint(9) + b"ab\x00"), 1),
                            "header key length 9 past"),
    "header-key-bad-utf8": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v\x02\x04\xff\xfe\x01"), 1), "UTF-8"),
    "header-value-negative": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v\x02\x02h" + ref_varint(-3)), 1),
                              "negative header value length"),
    "header-value-past-end": (raw_batch(raw_record(b"\x00\x00\x00\x02k\x02v\x02\x02h" + ref_varint(4) + b"x"), 1),
                              "header value length 4 past"),
    "varint-too-long": (raw_batch(raw_record(b"\x00\x00" + b"\x80\x80\x80\x80\x80\x00" + b"\x02k\x02v\x00"), 1),
                        "offset delta longer than 5 bytes"),
    "varint-over-32-bits": (raw_batch(raw_record(b"\x00\x00" + b"\xff\xff\xff\xff\x1f" + b"\x02k\x02v\x00"), 1),
                            "offset delta does not fit in 32 bits"),
    "varlong-too-long": (raw_batch(raw_record(b"\x00" + b"\x80" * 10 + b"\x00" + b"\x00\x02k\x02v\x00"), 1),
                         "timestamp delta longer than 10 bytes"),
    "record-length-varint-too-long": (raw_batch(b"\x80\x80\x80\x80\x80\x80\x01" + GOOD_RECORD, 1),
                                      "record length longer than 5 bytes"),
    "trailing-garbage-in-records": (raw_batch(raw_record(GOOD_RECORD) + b"\x00", 1), "1 bytes left after"),
    "bad-magic": (raw_batch(raw_record(GOOD_RECORD), 1, magic=1), "magic 1"),
    "magic-3": (raw_batch(raw_record(GOOD_RECORD), 1, magic=3), "magic 3"),
    "unknown-codec-7": (raw_batch(b"\x01\x02\x03", 1, attributes=7), "unknown compression codec 7"),
    "gzip-garbage": (raw_batch(b"\x1f\x8b\x08garbage-not-deflate", 1, attributes=1), "gzip"),
    "gzip-truncated": (raw_batch(gzip.compress(raw_record(GOOD_RECORD), mtime=0)[:-6], 1, attributes=1),
                       "gzip: truncated"),
    "gzip-trailing-junk": (raw_batch(gzip.compress(raw_record(GOOD_RECORD), mtime=0) + b"junk", 1, attributes=1),
                           "gzip"),
    "gzip-empty-payload-count-1": (raw_batch(b"", 1, attributes=1), "empty gzip payload"),
    "gzip-count-mismatch": (raw_batch(gzip.compress(raw_record(GOOD_RECORD), mtime=0), 2, attributes=1),
                            "record count"),
    "gzip-bad-record": (raw_batch(gzip.compress(ref_varint(-1) + b"\x00" * 6, mtime=0), 1, attributes=1),
                        "negative record length"),
    "only-header-bytes": (raw_batch(raw_record(GOOD_RECORD), 1)[:61], "truncated"),
    "too-short": (b"\x00" * 10, "truncated"),
    "zeros-past-magic": (b"\x00" * 20, "magic 0"),
    "header-cut-after-magic": (raw_batch(raw_record(GOOD_RECORD), 1)[:40], "truncated batch header"),
    "empty": (b"", "truncated"),
}


def _error_text(err: Exception) -> str:
    return " ".join([str(err), str(getattr(err, "reason", ""))] + [str(a) for a in err.args])


@pytest.mark.parametrize("name", sorted(MALFORMED))
@pytest.mark.parametrize("verify", [True, False])
def test_malformed_raises_decode_error(name, verify):
    data, expected = MALFORMED[name]
    with pytest.raises(DecodeError) as info:
        decode_batch(data, verify=verify)
    assert expected in _error_text(info.value)
    assert not isinstance(info.value, UnsupportedCompression)


def test_crc_mismatch():
    batch = bytearray(raw_batch(raw_record(GOOD_RECORD), 1))
    batch[-2] ^= 0x01  # flip a bit inside value b"v"
    with pytest.raises(DecodeError):
        decode_batch(batch, verify=True)
    _, recs = decode_batch(batch, verify=False)
    assert recs[0].value == b"w"


def test_length_field_mismatch_and_trailing_bytes():
    good = raw_batch(raw_record(GOOD_RECORD), 1)
    with pytest.raises(DecodeError):
        decode_batch(good + b"\x00")
    with pytest.raises(DecodeError):
        decode_batch(good[:-1])
    bad_len = bytearray(good)
    bad_len[8:12] = (40).to_bytes(4, "big")
    with pytest.raises(DecodeError):
        decode_batch(bad_len, verify=False)


@pytest.mark.parametrize("codec, name", [(2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_unsupported_compression(codec, name):
    batch = raw_batch(b"\x00compressed-bytes", 1, attributes=codec)
    assert read_batch_header(batch).compression == name
    with pytest.raises(UnsupportedCompression) as info:
        decode_batch(batch)
    assert isinstance(info.value, DecodeError)
    assert name in str(info.value)
    # An empty batch is not looked into, whatever the codec (as Kafka does).
    assert decode_batch(raw_batch(b"", 0, attributes=codec))[1] == []


def test_decompression_bomb_is_bounded():
    blob = raw_record(b"\x00\x00\x00\x01" + ref_varint(1_000_000) + b"\x00" * 1_000_000 + b"\x00")
    batch = raw_batch(gzip.compress(blob, mtime=0), 1, attributes=1)
    assert len(batch) < 5000
    with pytest.raises(DecodeError):
        decode_batch(batch, max_decompressed_size=100_000)
    _, recs = decode_batch(batch)
    assert len(recs[0].value) == 1_000_000


def test_record_attributes_are_int8():
    # Record attributes are a plain int8; a value with the high bit set must not
    # be read as a varint (kafka-python 3.0.12 does, see the report).
    batch = encode_batch([Record(0, 0, b"k", b"v", [], attributes=-1), Record(1, 0, b"k", b"v", [], attributes=5)],
                         base_timestamp=TS)
    assert batch[62] == 0xFF
    _, recs = decode_batch(batch)
    assert [r.attributes for r in recs] == [-1, 5]
    with pytest.raises(ValueError):
        encode_batch([Record(0, 0, None, None, [], attributes=200)])


# ---------------------------------------------------------------------------
# Encoder behaviour and argument validation
# ---------------------------------------------------------------------------


def test_empty_batch():
    for compression in ("none", "gzip"):
        batch = encode_batch([], base_offset=10, compression=compression)
        header, recs = decode_batch(batch)
        assert recs == [] and header.record_count == 0 and header.size == 61 == len(batch)
        assert header.base_timestamp == -1 and header.max_timestamp == -1
        assert header.last_offset == 10


def test_encoder_fields():
    recs = [Record(0, 5, b"a", None, []), Record(3, -2, None, b"b", []), Record(9, 1, b"c", b"d", [])]
    batch = encode_batch(recs, base_offset=50, base_timestamp=TS)
    h = read_batch_header(batch)
    assert h.last_offset_delta == 9 and h.max_timestamp == TS + 5 and h.record_count == 3
    assert h.batch_length == len(batch) - 12
    assert h.partition_leader_epoch == -1 and h.producer_id == -1 and h.base_sequence == -1
    _, dec = decode_batch(batch)
    assert [r.offset for r in dec] == [50, 53, 59]
    assert [r.timestamp for r in dec] == [TS + 5, TS - 2, TS + 1]


def test_default_base_timestamp_is_now():
    import time

    before = int(time.time() * 1000)
    h = read_batch_header(encode_batch([Record(0, 0, None, b"x", [])]))
    assert before <= h.base_timestamp <= int(time.time() * 1000)


@pytest.mark.parametrize(
    "records, kw, exc",
    [
        ([Record(1, 0, None, None, []), Record(1, 0, None, None, [])], {}, ValueError),
        ([Record(2, 0, None, None, []), Record(1, 0, None, None, [])], {}, ValueError),
        ([Record(-1, 0, None, None, [])], {}, ValueError),
        ([Record(2**31, 0, None, None, [])], {}, ValueError),
        ([Record(0, 0, "str-key", None, [])], {}, TypeError),
        ([Record(0, 0, None, None, [(b"bytes-key", None)])], {}, TypeError),
        ([], {"compression": "snappy"}, ValueError),
        ([], {"timestamp_type": 2}, ValueError),
        ([], {"producer_epoch": 2**15}, ValueError),
        ([], {"base_offset": 2**63}, ValueError),
    ],
)
def test_encoder_rejects_bad_arguments(records, kw, exc):
    with pytest.raises(exc):
        encode_batch(records, **kw)


# ---------------------------------------------------------------------------
# Property-based round trip (also checked against kafka-python's reader)
# ---------------------------------------------------------------------------

_bytes_or_none = st.none() | st.binary(max_size=40)
_headers = st.lists(st.tuples(st.text(max_size=8), _bytes_or_none), max_size=3)


@st.composite
def batches(draw):
    n = draw(st.integers(0, 6))
    offsets = sorted(draw(st.sets(st.integers(0, 2**31 - 1), min_size=n, max_size=n)))
    records = [
        Record(
            off,
            draw(st.integers(-(2**40), 2**40)),
            draw(_bytes_or_none),
            draw(_bytes_or_none),
            draw(_headers),
            draw(st.sampled_from([0, 0, 0, 1, 127, -128, -1])),
        )
        for off in offsets
    ]
    kw = dict(
        base_offset=draw(st.integers(0, 2**62)),
        base_timestamp=draw(st.integers(0, 2**41)),
        compression=draw(st.sampled_from(["none", "gzip"])),
        producer_id=draw(st.sampled_from([-1, 0, 2**63 - 1])),
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=draw(st.integers(-1, 2**31 - 1)),
        transactional=draw(st.booleans()),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        timestamp_type=draw(st.sampled_from([0, 1])),
    )
    return records, kw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_roundtrip(case):
    records, kw = case
    batch = encode_batch(records, **kw)
    assert verify_crc(batch)
    header, decoded = decode_batch(batch)
    assert plain(decoded) == records
    assert header.size == len(batch)
    assert header.record_count == len(records)
    assert header.base_offset == kw["base_offset"]
    assert header.compression == kw["compression"]
    assert header.is_transactional == kw["transactional"]
    assert header.timestamp_type == kw["timestamp_type"]
    assert header.partition_leader_epoch == kw["partition_leader_epoch"]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
        kw["producer_id"], kw["producer_epoch"], kw["base_sequence"])
    if records:
        assert header.last_offset_delta == records[-1].offset_delta
        assert header.max_timestamp == kw["base_timestamp"] + max(r.timestamp_delta for r in records)
        expected_ts = [
            header.max_timestamp if kw["timestamp_type"] == 1 else kw["base_timestamp"] + r.timestamp_delta
            for r in records
        ]
        assert [r.timestamp for r in decoded] == expected_ts
        assert [r.offset for r in decoded] == [kw["base_offset"] + r.offset_delta for r in records]
    assert list(iter_batches(batch + batch[:30])) == [(header, batch)]
    if records and all(r.attributes == 0 for r in records):
        kb, view = kp_read(batch)
        assert [(o, k, v, h) for o, _, k, v, h in view] == [
            (kw["base_offset"] + r.offset_delta, r.key, r.value, r.headers) for r in records
        ]


# ---------------------------------------------------------------------------
# Fuzz: truncations and bit flips only ever raise DecodeError
# ---------------------------------------------------------------------------


def _corpus():
    recs = [
        Record(0, 0, b"key", b"value", [("h1", b"v1"), ("h2", None)]),
        Record(1, 250, None, b"x" * 150, []),
        Record(5, -7, b"", None, [("", b"")]),
    ]
    return [
        encode_batch(recs, base_offset=3, base_timestamp=TS),
        encode_batch(recs, base_offset=3, base_timestamp=TS, compression="gzip"),
        encode_batch([Record(0, 0, None, b"hi", [])], base_timestamp=TS, producer_id=9,
                     producer_epoch=1, base_sequence=0, transactional=True),
        encode_batch([], base_timestamp=TS),
    ]


def _exercise(data: bytes, verify: bool):
    """Run every decoding entry point; return True if decode_batch succeeded."""
    try:
        read_batch_header(data)
    except DecodeError:
        pass
    try:
        for _ in iter_batches(data):
            pass
    except DecodeError:
        pass
    verify_crc(data)  # never raises
    try:
        decode_batch(data, verify=verify)
    except DecodeError:
        return False
    return True


def test_fuzz_truncations():
    for batch in _corpus():
        assert _exercise(batch, True)
        for cut in range(len(batch)):
            for verify in (True, False):
                assert not _exercise(batch[:cut], verify), cut
            assert list(iter_batches(batch[:cut])) == []


def test_fuzz_bit_flips():
    rng = random.Random(0xC0FFEE)
    interesting = [0x00, 0x01, 0x7F, 0x80, 0xFF]
    for batch in _corpus():
        n = len(batch)
        for i in range(900):
            data = bytearray(batch)
            pos = rng.randrange(n)
            if i % 3 == 2:
                data[pos] = rng.choice(interesting)
            else:
                data[pos] ^= 1 << rng.randrange(8)
            if rng.random() < 0.3:  # sometimes a second mutation
                data[rng.randrange(n)] ^= 1 << rng.randrange(8)
            data = bytes(data)
            ok_verified = _exercise(data, True)
            _exercise(data, False)
            # A single changed byte at or after the CRC field can never pass verification.
            if data != batch and sum(a != b for a, b in zip(data, batch)) == 1:
                first = next(j for j in range(n) if data[j] != batch[j])
                if first >= 17:
                    assert not ok_verified, (first, data.hex())


def test_fuzz_structure_with_valid_crc():
    """Mutate the records area and fix the CRC, so the parser itself is exercised."""
    rng = random.Random(1234)
    for batch in _corpus()[:1] + _corpus()[2:3]:
        n = len(batch)
        for _ in range(1500):
            data = bytearray(batch)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randrange(57, n)
                data[pos] = rng.randrange(256)
            try:
                decode_batch(with_fixed_crc(data), verify=True)
            except DecodeError:
                pass
