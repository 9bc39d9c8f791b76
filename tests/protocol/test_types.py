"""Kafka's primitive wire types, on every path our codec has.

Each type is declared in a small ad-hoc MessageSpec and checked against wire bytes
written out by hand from Kafka's protocol guide (or packed with :mod:`struct`), on
the compiled codec (Codec.decode/encode), construct's compiled construct
(codec.compiled.parse/build) and the interpreted construct (codec.struct.parse/build);
all of them must agree. Malformed input must be a DecodeError and unencodable values
an EncodeError naming the message and version, on every path.
"""
from __future__ import annotations

import math
import struct
import uuid

import pytest

from groupcoord.protocol.errors import DecodeError, EncodeError
from groupcoord.protocol.schema import A, F, MessageSpec, S

VERSION = 3


def probe(*fields, flexible: bool = False, name: str = "Probe"):
    """A one-version message of the given fields (version 3, flexible or classic)."""
    spec = MessageSpec(name, fields, valid=str(VERSION), flexible=str(VERSION) if flexible else None)
    return spec.codec(VERSION)


def one(type_, *, nullable: bool = False, flexible: bool = False, **kw):
    return probe(F("Value", type_, nullable="0+" if nullable else None, **kw), flexible=flexible)


def same(a, b) -> bool:
    """Equality that treats floats bit for bit (NaN, -0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def paths_decode(codec):
    return {
        "compiled": codec.decode,
        "construct-compiled": codec.compiled.parse,
        "interpreted": codec.struct.parse,
    }


def paths_encode(codec):
    return {
        "compiled": codec.encode,
        "construct-compiled": codec.compiled.build,
        "interpreted": codec.struct.build,
    }


def roundtrip(codec, obj: dict, wire: bytes) -> None:
    """obj encodes to exactly wire and wire decodes to exactly obj, on every path."""
    for name, enc in paths_encode(codec).items():
        got = enc(obj)
        assert got == wire, f"{name} encoded {got.hex()}, expected {wire.hex()}"
    for name, dec in paths_decode(codec).items():
        got = dec(wire)
        assert same(got, obj), f"{name} decoded {got!r}, expected {obj!r}"


def value_roundtrip(codec, value, wire: bytes, flexible: bool = False) -> None:
    roundtrip(codec, {"value": value}, wire + (b"\x00" if flexible else b""))


def decode_fails(codec, wire: bytes, offset: int | None = None, *, interpreted: bool = True) -> None:
    """A DecodeError naming the probe and its version on every path (offset: compiled)."""
    for name, dec in paths_decode(codec).items():
        if name == "interpreted" and not interpreted:
            continue
        with pytest.raises(DecodeError) as info:
            dec(wire)
        e = info.value
        assert (e.api, e.version) == (codec.name, VERSION), f"{name}: {e!r}"
        assert isinstance(e.offset, int) and 0 <= e.offset <= len(wire), f"{name}: {e!r}"
        if offset is not None and name != "interpreted":
            assert e.offset == offset, f"{name}: {e}"


def encode_fails(codec, obj: dict) -> None:
    for name, enc in paths_encode(codec).items():
        with pytest.raises(EncodeError) as info:
            enc(obj)
        assert (info.value.api, info.value.version) == (codec.name, VERSION), f"{name}: {info.value!r}"


# --------------------------------------------------------------------------
# fixed-size numbers and bool
# --------------------------------------------------------------------------

FIXED = [
    ("int8", "b", [0, 1, -1, 127, -128], [128, -129]),
    ("int16", "h", [0, 1, -1, 2**15 - 1, -(2**15)], [2**15, -(2**15) - 1]),
    ("int32", "i", [0, 1, -1, 2**31 - 1, -(2**31), 0x01020304], [2**31, -(2**31) - 1]),
    ("int64", "q", [0, 1, -1, 2**63 - 1, -(2**63)], [2**63, -(2**63) - 1]),
    ("uint16", "H", [0, 1, 0xFFFF, 0x8000], [-1, 0x10000]),
    ("uint32", "I", [0, 1, 0xFFFFFFFF], [-1, 2**32]),
]


@pytest.mark.parametrize("name,fmt,good,bad", FIXED, ids=[f[0] for f in FIXED])
@pytest.mark.parametrize("flexible", [False, True], ids=["classic", "flexible"])
def test_fixed_integers(name, fmt, good, bad, flexible):
    codec = one(name, flexible=flexible)
    size = struct.calcsize(">" + fmt)
    for v in good:
        value_roundtrip(codec, v, struct.pack(">" + fmt, v), flexible)
    # big-endian, two's complement: spelled out for one value
    if fmt in "hiq":
        value_roundtrip(codec, -2, b"\xff" * (size - 1) + b"\xfe", flexible)
    for v in bad:
        encode_fails(codec, {"value": v})
    for cut in range(size):
        decode_fails(codec, b"\x12" * cut, offset=0)


def test_float64():
    codec = one("float64")
    for v in (0.0, -0.0, 1.5, -2.25, 1e308, 5e-324, math.inf, -math.inf, math.pi):
        value_roundtrip(codec, v, struct.pack(">d", v))
    value_roundtrip(codec, 1.0, bytes.fromhex("3ff0000000000000"))
    nan = struct.unpack(">d", bytes.fromhex("7ff8000000000001"))[0]
    value_roundtrip(codec, nan, bytes.fromhex("7ff8000000000001"))
    decode_fails(codec, b"\x3f\xf0\x00", offset=0)


def test_bool():
    codec = one("bool")
    value_roundtrip(codec, True, b"\x01")
    value_roundtrip(codec, False, b"\x00")
    # Kafka reads any non-zero byte as true; we write it back as 01
    for paths in paths_decode(codec).values():
        assert paths(b"\x02") == {"value": True}
        assert paths(b"\xff") == {"value": True}
    decode_fails(codec, b"", offset=0)


def test_consecutive_fixed_fields_are_packed_in_order():
    codec = probe(F("A", "int8"), F("B", "int16"), F("C", "int32"), F("D", "int64"), F("E", "bool"),
                  F("G", "uint16"), F("H", "float64"))
    obj = {"a": -5, "b": 0x1234, "c": -(2**31), "d": 2**40 + 7, "e": True, "g": 0xFEDC, "h": -0.5}
    roundtrip(codec, obj, struct.pack(">bhiq?Hd", -5, 0x1234, -(2**31), 2**40 + 7, True, 0xFEDC, -0.5))
    # the error names the field run's first byte: truncation inside the run
    decode_fails(codec, struct.pack(">bhi", -5, 1, 2), offset=0)


# --------------------------------------------------------------------------
# varints
# --------------------------------------------------------------------------

VARINT_VECTORS = [  # zig-zag, from Kafka's ByteUtilsTest and the protocol guide
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"), (64, "8001"),
    (-65, "8101"), (8191, "fe7f"), (-8192, "ff7f"), (8192, "808001"),
    (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"),
]
VARLONG_VECTORS = VARINT_VECTORS + [
    (2**31, "8080808010"), (2**63 - 1, "feffffffffffffffff01"), (-(2**63), "ffffffffffffffffff01"),
]
UVARINT_VECTORS = [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"), (16384, "808001"),
    (2**21 - 1, "ffff7f"), (2**21, "80808001"), (2**28, "8080808001"), (2**32 - 1, "ffffffff0f"),
]


@pytest.mark.parametrize("value,hexed", VARINT_VECTORS)
def test_varint_vectors(value, hexed):
    value_roundtrip(one("varint"), value, bytes.fromhex(hexed))


@pytest.mark.parametrize("value,hexed", VARLONG_VECTORS)
def test_varlong_vectors(value, hexed):
    value_roundtrip(one("varlong"), value, bytes.fromhex(hexed))


@pytest.mark.parametrize("value,hexed", UVARINT_VECTORS)
def test_unsigned_varint_vectors(value, hexed):
    value_roundtrip(one("uvarint"), value, bytes.fromhex(hexed))


def test_varints_decode_non_minimal_encodings():
    # Kafka's readers accept redundant continuation bytes
    assert one("uvarint").decode(bytes.fromhex("8000")) == {"value": 0}
    assert one("uvarint").decode(bytes.fromhex("ff80808000")) == {"value": 127}
    assert one("varint").decode(bytes.fromhex("8280808000")) == {"value": 1}
    assert one("varlong").decode(bytes.fromhex("81808080808080808000")) == {"value": -1}


def test_varints_reject_too_many_bytes():
    decode_fails(one("uvarint"), bytes.fromhex("808080808000"))      # 6 bytes
    decode_fails(one("uvarint"), bytes.fromhex("ffffffffff01"))
    decode_fails(one("varint"), bytes.fromhex("808080808000"))
    decode_fails(one("varlong"), bytes.fromhex("8080808080808080808000"))  # 11 bytes


def test_varints_reject_values_past_their_width():
    # a fifth byte may only carry the top 4 bits of 32, a tenth only the top bit of 64:
    # Kafka would silently drop the rest; we refuse rather than decode a value that
    # cannot be encoded again
    decode_fails(one("uvarint"), bytes.fromhex("ffffffff1f"))
    decode_fails(one("uvarint"), bytes.fromhex("ffffffff7f"))
    decode_fails(one("varint"), bytes.fromhex("ffffffff7f"))
    decode_fails(one("varlong"), bytes.fromhex("ffffffffffffffffff03"))


def test_varints_truncated():
    for t in ("uvarint", "varint", "varlong"):
        codec = one(t)
        decode_fails(codec, b"", offset=0)
        decode_fails(codec, b"\x80")
        decode_fails(codec, b"\xff\xff")


@pytest.mark.parametrize("type_,bad", [
    ("varint", [2**31, -(2**31) - 1, 2**40]),
    ("varlong", [2**63, -(2**63) - 1]),
    ("uvarint", [-1, 2**32, 2**35]),
])
def test_varints_refuse_out_of_range_values(type_, bad):
    codec = one(type_)
    for v in bad:
        encode_fails(codec, {"value": v})


# --------------------------------------------------------------------------
# strings and bytes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "a", "abc", "é", "日本語", "\U0001f600", "x" * 200])
def test_strings(text):
    raw = text.encode()
    value_roundtrip(one("string"), text, struct.pack(">h", len(raw)) + raw)
    value_roundtrip(one("string", nullable=True), text, struct.pack(">h", len(raw)) + raw)
    # compact: unsigned varint of length + 1, then a tag section (flexible version)
    value_roundtrip(one("string", flexible=True), text, bytes(_uvarint(len(raw) + 1)) + raw, flexible=True)


def _uvarint(n: int) -> bytearray:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return out


def test_string_length_prefixes():
    value_roundtrip(one("string", flexible=True), "y" * 127, b"\x80\x01" + b"y" * 127, flexible=True)
    value_roundtrip(one("string", flexible=True), "y" * 126, b"\x7f" + b"y" * 126, flexible=True)
    value_roundtrip(one("string"), "y" * 300, b"\x01\x2c" + b"y" * 300)


def test_null_strings():
    value_roundtrip(one("string", nullable=True), None, b"\xff\xff")
    value_roundtrip(one("string", nullable=True, flexible=True), None, b"\x00", flexible=True)
    # not nullable: a null on the wire is an error, and so is encoding one
    decode_fails(one("string"), b"\xff\xff", offset=2)
    decode_fails(one("string", flexible=True), b"\x00\x00", offset=1)
    encode_fails(one("string"), {"value": None})
    encode_fails(one("string", flexible=True), {"value": None})
    # -1 is null; other negative lengths are errors even where null is allowed
    decode_fails(one("string", nullable=True), b"\xff\xfe", offset=2)
    decode_fails(one("string", nullable=True), b"\x80\x00", offset=2)


def test_string_length_limit():
    ok = "z" * 32767
    value_roundtrip(one("string"), ok, b"\x7f\xff" + ok.encode())
    value_roundtrip(one("string", flexible=True), ok, bytes(_uvarint(32768)) + ok.encode(), flexible=True)
    for codec in (one("string"), one("string", flexible=True), one("string", nullable=True)):
        encode_fails(codec, {"value": "z" * 32768})
        encode_fails(codec, {"value": "é" * 16384})  # 32768 bytes in UTF-8
    # a compact length may claim more than 32767 bytes: Kafka refuses to read it, and so do we
    too_long = bytes(_uvarint(32769)) + b"z" * 32768 + b"\x00"
    decode_fails(one("string", flexible=True), too_long, offset=3)


def test_string_lengths_past_the_end():
    decode_fails(one("string"), b"\x00\x05abc", offset=2)
    decode_fails(one("string"), b"\x7f\xff", offset=2)
    decode_fails(one("string", flexible=True), b"\x05abc", offset=1)
    decode_fails(one("string", flexible=True), b"\xff\xff\xff\xff\x0f", offset=5)
    decode_fails(one("string"), b"\x00", offset=0)


def test_strings_must_be_utf8():
    decode_fails(one("string"), b"\x00\x02\xc3\x28", offset=2)
    decode_fails(one("string", flexible=True), b"\x02\xff\x00", offset=1)
    decode_fails(one("string"), b"\x00\x03\xed\xa0\x80", offset=2)  # an encoded surrogate
    encode_fails(one("string"), {"value": "\ud800"})
    encode_fails(one("string", flexible=True), {"value": "a\udfffb"})


@pytest.mark.parametrize("type_", ["bytes", "records"])
def test_bytes_and_records(type_):
    for data in (b"", b"\x00", b"\x00\xff\x7f\x80", bytes(range(256)) * 3):
        value_roundtrip(one(type_), data, struct.pack(">i", len(data)) + data)
        value_roundtrip(one(type_, flexible=True), data, bytes(_uvarint(len(data) + 1)) + data, flexible=True)
    # bytearray and memoryview values are written as their bytes
    assert one(type_).encode({"value": bytearray(b"ab")}) == b"\x00\x00\x00\x02ab"
    assert one(type_).encode({"value": memoryview(b"ab")}) == b"\x00\x00\x00\x02ab"
    value_roundtrip(one(type_, nullable=True), None, b"\xff\xff\xff\xff")
    value_roundtrip(one(type_, nullable=True, flexible=True), None, b"\x00", flexible=True)
    decode_fails(one(type_), b"\xff\xff\xff\xff", offset=4)
    decode_fails(one(type_, nullable=True), b"\xff\xff\xff\xfe", offset=4)
    decode_fails(one(type_), b"\x7f\xff\xff\xff\x00", offset=4)
    decode_fails(one(type_), b"\x00\x00\x00\x03ab", offset=4)
    decode_fails(one(type_, flexible=True), b"\x04ab", offset=1)
    encode_fails(one(type_), {"value": None})


def test_records_are_opaque():
    """A record batch field is carried as raw bytes: no parsing, no copying surprises."""
    blob = bytes.fromhex("0000000000000000000000390000000002c0b4a1e800000000000000000001")
    codec = probe(F("Records", "records", nullable="0+"), F("After", "int16"))
    roundtrip(codec, {"records": blob, "after": 7}, struct.pack(">i", len(blob)) + blob + b"\x00\x07")
    got = codec.decode(struct.pack(">i", len(blob)) + blob + b"\x00\x07")["records"]
    assert type(got) is bytes


# --------------------------------------------------------------------------
# arrays
# --------------------------------------------------------------------------

def test_arrays_of_primitives():
    codec = one("[]int32")
    value_roundtrip(codec, [], b"\x00\x00\x00\x00")
    value_roundtrip(codec, [1, -1, 2**31 - 1], struct.pack(">iiii", 3, 1, -1, 2**31 - 1))
    value_roundtrip(one("[]int64"), [5], struct.pack(">iq", 1, 5))
    value_roundtrip(one("[]int16"), [-3, 4], struct.pack(">ihh", 2, -3, 4))
    value_roundtrip(one("[]bool"), [True, False], b"\x00\x00\x00\x02\x01\x00")
    value_roundtrip(one("[]string"), ["a", ""], b"\x00\x00\x00\x02\x00\x01a\x00\x00")
    value_roundtrip(one("[]uuid"), [uuid.UUID(int=1)], b"\x00\x00\x00\x01" + uuid.UUID(int=1).bytes)
    flex = one("[]int32", flexible=True)
    value_roundtrip(flex, [], b"\x01", flexible=True)
    value_roundtrip(flex, [7, 8], b"\x03" + struct.pack(">ii", 7, 8), flexible=True)
    value_roundtrip(one("[]string", flexible=True), ["ab"], b"\x02\x03ab", flexible=True)
    big = list(range(200))
    value_roundtrip(flex, big, b"\xc9\x01" + struct.pack(">200i", *big), flexible=True)


def test_null_arrays():
    value_roundtrip(one("[]int32", nullable=True), None, b"\xff\xff\xff\xff")
    value_roundtrip(one("[]int32", nullable=True, flexible=True), None, b"\x00", flexible=True)
    decode_fails(one("[]int32"), b"\xff\xff\xff\xff", offset=4)
    decode_fails(one("[]int32", flexible=True), b"\x00\x00", offset=1)
    decode_fails(one("[]int32", nullable=True), b"\xff\xff\xff\xfe", offset=4)
    encode_fails(one("[]int32"), {"value": None})
    encode_fails(one("[]int32", flexible=True), {"value": None})


def test_array_counts_past_the_end():
    decode_fails(one("[]int32"), struct.pack(">ii", 2, 1), offset=4)
    decode_fails(one("[]int32"), struct.pack(">i", 0x7FFFFFFF), offset=4)
    decode_fails(one("[]int32"), struct.pack(">i", -(2**31)), offset=4)
    decode_fails(one("[]string"), struct.pack(">i", 3) + b"\x00\x00" * 2, offset=4)
    decode_fails(one("[]int32", flexible=True), b"\xff\xff\xff\xff\x0f", offset=5)
    decode_fails(one("[]bool", flexible=True), b"\x03\x01", offset=1)


def test_compact_arrays_and_strings_either_side_of_a_one_byte_length():
    """Compact arrays of fewer than 64 numbers and strings of fewer than 127 bytes have a fast path
    of their own (one-byte count); the same bytes, values and errors either side of it."""
    for t, fmt in (("[]int32", "i"), ("[]int64", "q"), ("[]int16", "h"), ("[]int8", "b")):
        for n in (0, 1, 62, 63, 64, 65, 126, 127, 128):
            values = [(-1) ** k * k for k in range(n)]
            wire = bytes(_uvarint(n + 1)) + struct.pack(f">{n}{fmt}", *values)
            value_roundtrip(one(t, flexible=True), values, wire, flexible=True)
            value_roundtrip(one(t, flexible=True, nullable=True), values, wire, flexible=True)
    # a padded count (two bytes for a small one) takes the general path, to the same values
    assert one("[]int32", flexible=True).decode(b"\x83\x00" + struct.pack(">ii", 7, 8) + b"\x00") == {"value": [7, 8]}
    for n in (0, 1, 125, 126, 127, 128):
        text = "s" * n
        for nullable in (False, True):
            value_roundtrip(one("string", flexible=True, nullable=nullable), text,
                            bytes(_uvarint(n + 1)) + text.encode(), flexible=True)
    # errors: the same offsets and reasons as the general path's
    for wire, offset, reason in (
            (b"\x03" + struct.pack(">i", 7), 1, "array of 2 elements cannot fit in the 4 bytes left"),
            (b"\x83\x00" + struct.pack(">i", 7), 2, "array of 2 elements cannot fit in the 4 bytes left"),
            (b"\x40" + struct.pack(">63i", *range(63))[:-1], 1, "array of 63 elements cannot fit in the 251 bytes left")):
        decode_fails(one("[]int32", flexible=True), wire, offset)
        with pytest.raises(DecodeError, match=reason):
            one("[]int32", flexible=True).decode(wire)
    decode_fails(one("string", flexible=True), b"\x04ab", offset=1)
    decode_fails(one("string", flexible=True), b"\x04ab\xff", offset=1)   # not UTF-8, after the length
    decode_fails(one("string", flexible=True), b"\x00\x00", offset=1)     # null where none is allowed


def test_arrays_of_structs():
    elem = S(F("Name", "string"), F("Id", "int32"), F("Tags", "[]string", nullable="0+"))
    codec = probe(F("Items", A(elem)), F("Tail", "int8"))
    obj = {"items": [{"name": "a", "id": 1, "tags": None}, {"name": "", "id": -1, "tags": ["t"]}], "tail": 9}
    wire = (struct.pack(">i", 2)
            + b"\x00\x01a" + struct.pack(">i", 1) + b"\xff\xff\xff\xff"
            + b"\x00\x00" + struct.pack(">i", -1) + struct.pack(">i", 1) + b"\x00\x01t"
            + b"\x09")
    roundtrip(codec, obj, wire)
    # flexible: compact everything, a tag section after every struct
    fcodec = probe(F("Items", A(elem)), F("Tail", "int8"), flexible=True)
    fwire = (b"\x03"
             + b"\x02a" + struct.pack(">i", 1) + b"\x00" + b"\x00"
             + b"\x01" + struct.pack(">i", -1) + b"\x02\x02t" + b"\x00"
             + b"\x09" + b"\x00")
    roundtrip(fcodec, obj, fwire)
    decode_fails(fcodec, fwire[:-3])


def test_nested_struct_field():
    codec = probe(F("Inner", S(F("X", "int16"), F("Y", "string"))), F("Z", "int8"), flexible=True)
    roundtrip(codec, {"inner": {"x": 2, "y": "q"}, "z": 1}, b"\x00\x02\x02q\x00\x01\x00")


def test_uuid():
    codec = one("uuid")
    u = uuid.UUID("0123456789abcdef0123456789abcdef")
    value_roundtrip(codec, u, bytes.fromhex("0123456789abcdef0123456789abcdef"))
    value_roundtrip(codec, uuid.UUID(int=0), bytes(16))
    decode_fails(codec, bytes(15), offset=0)
    encode_fails(codec, {"value": "not a uuid"})


# --------------------------------------------------------------------------
# tagged fields
# --------------------------------------------------------------------------

def tagged_probe():
    return probe(
        F("Plain", "int16"),
        F("Count", "int32", tag=0, default=-1),
        F("Label", "string", nullable="0+", tag=5, default=None),
        F("Pair", S(F("A", "int8", default=0), F("B", "int8", default=0)), tag=2),
        flexible=True, name="Tagged",
    )


def test_tagged_fields_at_their_defaults_are_not_written():
    codec = tagged_probe()
    obj = {"plain": 3, "count": -1, "label": None, "pair": {"a": 0, "b": 0}}
    roundtrip(codec, obj, b"\x00\x03\x00")
    # missing tagged keys mean their defaults when encoding
    assert codec.encode({"plain": 3}) == b"\x00\x03\x00"


def test_tagged_fields_written_when_not_default_in_tag_order():
    codec = tagged_probe()
    obj = {"plain": 3, "count": 7, "label": "hi", "pair": {"a": 1, "b": 0}}
    wire = (b"\x00\x03" + b"\x03"                      # three tags
            + b"\x00\x04" + struct.pack(">i", 7)        # tag 0, 4 bytes
            + b"\x02\x03" + b"\x01\x00\x00"             # tag 2: struct (a, b, its tag section)
            + b"\x05\x03" + b"\x03hi")                  # tag 5: compact string
    roundtrip(codec, obj, wire)
    only_label = {"plain": 0, "count": -1, "label": "", "pair": {"a": 0, "b": 0}}
    roundtrip(codec, only_label, b"\x00\x00\x01\x05\x01\x01")


def test_unknown_tags_are_kept_and_written_back_in_order():
    codec = tagged_probe()
    wire = (b"\x00\x01" + b"\x04"
            + b"\x00\x04" + struct.pack(">i", 9)
            + b"\x03\x02\xab\xcd"                       # unknown tag 3
            + b"\x05\x02\x02z"                          # known tag 5
            + b"\xc8\x01\x00")                          # unknown tag 200, empty
    obj = {"plain": 1, "count": 9, "label": "z", "pair": {"a": 0, "b": 0},
           "_unknown_tags": {3: b"\xab\xcd", 200: b""}}
    roundtrip(codec, obj, wire)
    # given out of order, they are still written sorted by tag
    shuffled = dict(obj, _unknown_tags={200: b"", 3: b"\xab\xcd"})
    for enc in paths_encode(codec).values():
        assert enc(shuffled) == wire
    # a struct without known tagged fields keeps them too (nested and top level)
    plain = probe(F("Items", A(S(F("X", "int8")))), flexible=True)
    pwire = b"\x02" + b"\x05" + b"\x01" + b"\x07\x01\xee" + b"\x01" + b"\x64\x00"
    pobj = {"items": [{"x": 5, "_unknown_tags": {7: b"\xee"}}], "_unknown_tags": {100: b""}}
    roundtrip(plain, pobj, pwire)


def test_empty_tag_sections_in_any_spelling_decode_to_nothing():
    # 0x80 0x00 is a (redundant) zero count: no _unknown_tags key appears
    plain = probe(F("X", "int8"), flexible=True)
    for dec in paths_decode(plain).values():
        assert dec(b"\x05\x80\x00") == {"x": 5}
    codec = tagged_probe()
    for dec in paths_decode(codec).values():
        assert dec(b"\x00\x01\x80\x00") == {"plain": 1, "count": -1, "label": None, "pair": {"a": 0, "b": 0}}


def test_tagged_field_size_must_match_its_content():
    codec = tagged_probe()
    # tag 0 (int32) declared 5 bytes long, and 3 bytes long
    decode_fails(codec, b"\x00\x01\x01\x00\x05" + struct.pack(">i", 9) + b"\x00")
    decode_fails(codec, b"\x00\x01\x01\x00\x03" + struct.pack(">i", 9))
    # tag 5 (compact string "z") declared 3 bytes
    decode_fails(codec, b"\x00\x01\x01\x05\x03\x02z\x00")


def test_tagged_field_sizes_past_the_end():
    codec = tagged_probe()
    decode_fails(codec, b"\x00\x01\x01\x00\x04\x00\x00", offset=5)
    decode_fails(codec, b"\x00\x01\x01\x09\xff\xff\xff\xff\x0f", offset=9)  # unknown tag 9
    plain = probe(F("X", "int8"), flexible=True)
    decode_fails(plain, b"\x05\x01\x09\x05abc", offset=4)
    decode_fails(plain, b"\x05\x01\x09\xff\xff\xff\xff\x0f", offset=8)
    # more tags announced than present
    decode_fails(plain, b"\x05\x02\x09\x00")
    decode_fails(plain, b"\x05\xff\xff\xff\xff\x0f\x09\x00")


def test_tagged_fields_only_exist_in_flexible_versions():
    spec = MessageSpec("Versions", [F("Plain", "int16"), F("Count", "int32", "1+", tag=0, default=-1)],
                       valid="0-2", flexible="2+")
    assert spec.codec(0).encode({"plain": 1, "count": 5}) == b"\x00\x01"
    assert spec.codec(1).encode({"plain": 1, "count": 5}) == b"\x00\x01"
    assert spec.codec(1).decode(b"\x00\x01") == {"plain": 1}
    assert spec.codec(2).encode({"plain": 1, "count": 5}) == b"\x00\x01\x01\x00\x04\x00\x00\x00\x05"


def test_trailing_bytes_are_refused_unless_allowed():
    codec = one("int16")
    with pytest.raises(DecodeError) as info:
        codec.decode(b"\x00\x01\x02")
    assert (info.value.api, info.value.version, info.value.offset) == ("Probe", VERSION, 2)
    assert codec.decode(b"\x00\x01\x02", allow_trailing=True) == {"value": 1}
    assert codec.decode(b"\xaa\x00\x01", 1) == {"value": 1}


def test_decoded_tagged_defaults_are_fresh_objects():
    """Mutating a decoded default (a struct or list tagged field) must not change the
    next decode, nor what counts as the default when encoding."""
    codec = probe(F("X", "int8"), F("Pair", S(F("A", "int8", default=0)), tag=2),
                  F("Ids", "[]int32", tag=3, default=[]), flexible=True)
    for name, dec in paths_decode(codec).items():
        first = dec(b"\x01\x00")
        first["pair"]["a"] = 9
        first["ids"].append(5)
        assert dec(b"\x01\x00") == {"x": 1, "pair": {"a": 0}, "ids": []}, name
        for enc in paths_encode(codec).values():
            assert enc({"x": 1, "pair": {"a": 0}, "ids": []}) == b"\x01\x00", name


# --------------------------------------------------------------------------
# nullable structs (KIP-893)
# --------------------------------------------------------------------------

def _my(versions: str = "0+"):
    return S(F("MyString", "string", versions), F("MyInt", "int32", versions))


# Kafka's own test message for nullable structs (clients/src/test/resources/common/message/
# NullableStructMessage.json, KAFKA-14425): v0 classic, v1+ flexible; the second field is
# nullable only from v1, the last two are tagged (one null by default, one not)
NULLABLE_STRUCTS = MessageSpec("NullableStructMessage", [
    F("NullableStruct", _my(), nullable="0+", default=None),
    F("NullableStruct2", _my(), nullable="1+"),
    F("NullableStruct3", _my("1+"), "1+", nullable="1+", default=None, tag=0),
    F("NullableStruct4", _my("1+"), "1+", nullable="1+", tag=1),
], valid="0-2", flexible="1+")


def _nullable(version: int):
    return NULLABLE_STRUCTS.codec(version)


def test_nullable_struct_classic_marker_is_an_int8():
    codec = _nullable(0)
    one_ = {"my_string": "1", "my_int": 1}
    two = {"my_string": "2", "my_int": 2}
    # null: int8 -1, then NullableStruct2 (not nullable in v0: no marker at all)
    roundtrip(codec, {"nullable_struct": None, "nullable_struct2": two},
                 b"\xff" + b"\x00\x012" + struct.pack(">i", 2))
    # present: int8 1, then the struct's fields
    roundtrip(codec, {"nullable_struct": one_, "nullable_struct2": two},
                 b"\x01" + b"\x00\x011" + struct.pack(">i", 1) + b"\x00\x012" + struct.pack(">i", 2))
    # the field's default is null; NullableStruct2's is an empty struct (Kafka: new MyStruct2())
    assert codec.encode({}) == b"\xff" + b"\x00\x00" + bytes(4)
    # not nullable in v0: null cannot be written (Kafka: NullPointerException)
    for fn in paths_encode(codec).values():
        with pytest.raises(EncodeError):
            fn({"nullable_struct": None, "nullable_struct2": None})


def test_nullable_struct_flexible_marker_is_still_an_int8():
    codec = _nullable(1)
    one_ = {"my_string": "1", "my_int": 1}
    empty4 = {"my_string": "", "my_int": 0}
    obj = {"nullable_struct": one_, "nullable_struct2": None, "nullable_struct3": None, "nullable_struct4": empty4}
    wire = (b"\x01" + b"\x021" + struct.pack(">i", 1) + b"\x00"   # marker 1, struct, its own (empty) tag section
            + b"\xff"                                              # NullableStruct2: null
            + b"\x00")                                             # tagged fields at their defaults: none written
    roundtrip(codec, obj, wire)


def test_tagged_nullable_structs_have_a_varint_marker():
    codec = _nullable(2)
    three = {"my_string": "3", "my_int": 3}
    obj = {"nullable_struct": None, "nullable_struct2": None, "nullable_struct3": three, "nullable_struct4": None}
    wire = (b"\xff" + b"\xff"
            + b"\x02"                                              # two tagged fields
            + b"\x00\x08" + b"\x01" + b"\x023" + struct.pack(">i", 3) + b"\x00"   # tag 0: marker 1, struct
            + b"\x01\x01" + b"\x00")                               # tag 1: null (its default is not): marker 0
    roundtrip(codec, obj, wire)


@pytest.mark.parametrize("version,marker,offset", [
    (0, b"\x00", 0), (0, b"\x02", 0), (0, b"\xfe", 0), (0, b"\x80", 0), (0, b"\x7f", 0),
    (1, b"\x00", 0), (1, b"\xfe", 0), (2, b"\x02", 0),
])
def test_nullable_struct_markers_other_than_minus_one_and_one_are_refused(version, marker, offset):
    codec = _nullable(version)
    good = codec.encode({"nullable_struct": {"my_string": "x", "my_int": 5}})
    assert good[:1] == b"\x01"
    bad = marker + good[1:]
    for name, fn in paths_decode(codec).items():
        with pytest.raises(DecodeError) as info:
            fn(bad)
        e = info.value
        assert type(e) is DecodeError, name
        assert (e.api, e.version) == ("NullableStructMessage", version), name
        assert "presence marker" in e.reason and "-1: null, 1: present" in e.reason, name
        if name != "interpreted":
            assert e.offset == offset, f"{name}: {e}"
    signed = struct.unpack(">b", marker)[0]
    with pytest.raises(DecodeError, match=f"at offset {offset}: invalid presence marker {signed} of a nullable struct"):
        codec.decode(bad)


def test_tagged_nullable_struct_marker_other_than_zero_and_one_is_refused():
    codec = _nullable(2)
    wire = b"\xff\xff" + b"\x01" + b"\x01\x01" + b"\x02"
    for name, fn in paths_decode(codec).items():
        with pytest.raises(DecodeError) as info:
            fn(wire)
        assert "tagged nullable struct (0: null, 1: present)" in info.value.reason, name
        if name != "interpreted":
            assert info.value.offset == 5, name


def test_nullable_struct_truncated_after_its_marker():
    codec = _nullable(0)
    for wire in (b"", b"\x01", b"\x01\x00\x01x"):
        for fn in paths_decode(codec).values():
            with pytest.raises(DecodeError):
                fn(wire)
