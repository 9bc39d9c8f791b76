"""Malformed-input case generators and checkers for the Kafka codec.

Shared by tests/protocol/test_fuzz.py (a fixed, seeded amount of work in the normal
suite) and bench/fuzz_codec.py (a longer run). Everything is deterministic: valid
messages come from the hypothesis strategies of kstrategies.py under a fixed
``@seed``, mutations from ``random.Random`` seeded with a string naming the case.

The contract being checked (one typed error, never anything else)::

    codec.decode(data) either returns a dict that re-encodes (and decodes back to
    the same dict), or raises DecodeError with .api == the message name, .version ==
    the message version and 0 <= .offset <= len(data). frames.decode_request raises
    UnsupportedVersionError (a DecodeError) for API keys / versions we do not speak.

The interpreted construct path (``codec.struct.parse``) must agree with the compiled
one: same dict, or a DecodeError too (it follows construct's own convention of
ignoring trailing bytes, so it is compared with ``decode(..., allow_trailing=True)``).

A small independent walker (:func:`layout`) finds the length prefixes, array counts
and tagged-field counts/sizes in a valid encoding so they can be rewritten to
negative or huge values, and the presence markers of nullable structs so they can be
rewritten to values Kafka's writer never produces.
"""
from __future__ import annotations

import random
import struct
import time
import tracemalloc
from dataclasses import dataclass
from typing import Callable, Iterator

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

from groupcoord.protocol import frames
from groupcoord.protocol.errors import DecodeError, UnsupportedVersionError
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.schema import Codec, MessageSpec
from groupcoord.protocol.types import (
    Array, Fixed, KStruct, KType, NullableStruct, UVarint, Uuid, Varint, Varlong, _Sized, uvarint_bytes,
)
from kstrategies import for_struct

SEED = 20240611

# every (message, version): requests and responses of every API we speak
SPECS: list[tuple[MessageSpec, int]] = [
    (spec, v)
    for api in APIS.values()
    for spec in (api.request, api.response)
    for v in spec.versions
]


def spec_id(spec: MessageSpec, version: int) -> str:
    return f"{spec.name}-v{version}"


def short(value, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


class CaseFailure(AssertionError):
    """A violated contract, with the offending bytes."""

    def __init__(self, what: str, where: str, data: bytes, detail: str):
        hexed = data.hex() if len(data) <= 512 else data[:512].hex() + "..."
        super().__init__(f"{where}: {what}: {detail}\n  data ({len(data)} bytes) = {hexed}")
        self.what = what
        self.where = where
        self.data = data


# --------------------------------------------------------------------------
# valid messages, from the hypothesis strategies of kstrategies
# --------------------------------------------------------------------------

_VALID: dict[tuple[str, int, int, int], list[dict]] = {}


def draw(strategy, n: int, seed: int) -> list:
    """n examples of a hypothesis strategy, deterministically (fixed seed, no database)."""
    out: list = []

    @hseed(seed)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(x):
        out.append(x)

    collect()
    return out


UNKNOWN_TAG_NUMBERS = (100, 127, 128, 1000, 70000, 2**31)


def with_unknown_tags(obj: dict, t: KStruct, rng: random.Random) -> dict:
    """A copy of obj with unknown tagged fields in every flexible struct (and sub-struct)."""
    out = dict(obj)
    for f in t.fields + t.tagged:
        ft, value = f.type, obj.get(f.key)
        if isinstance(ft, NullableStruct):
            ft = ft.struct
        if isinstance(ft, KStruct) and isinstance(value, dict):
            out[f.key] = with_unknown_tags(value, ft, rng)
        elif isinstance(ft, Array) and isinstance(ft.elem, KStruct) and value:
            out[f.key] = [with_unknown_tags(x, ft.elem, rng) for x in value]
    if t.flexible:
        known = {f.tag for f in t.tagged}
        tags = [x for x in rng.sample(UNKNOWN_TAG_NUMBERS, rng.randint(1, 2)) if x not in known]
        out["_unknown_tags"] = {tag: rng.randbytes(rng.choice((0, 1, 3, 7))) for tag in tags}
    return out


def valid_messages(spec: MessageSpec, version: int, n: int = 3, seed: int = SEED) -> list[dict]:
    """n valid message dicts drawn from kstrategies (distinct encodings), plus in flexible
    versions a copy of the largest with unknown tagged fields everywhere; by size; cached."""
    key = (spec.name, version, n, seed)
    got = _VALID.get(key)
    if got is None:
        drawn = draw(for_struct(spec.struct(version)), n, seed)
        codec = spec.codec(version)
        if spec.is_flexible(version):
            largest = max(drawn, key=lambda obj: len(codec.encode(obj)))
            drawn.append(with_unknown_tags(largest, spec.struct(version), rng_for(seed, "tags", spec.name, version)))
        seen: dict[bytes, dict] = {}
        for obj in drawn:
            seen.setdefault(codec.encode(obj), obj)
        got = _VALID[key] = [seen[b] for b in sorted(seen, key=len)]
    return got


def valid_encodings(spec: MessageSpec, version: int, n: int = 3, seed: int = SEED) -> list[bytes]:
    codec = spec.codec(version)
    return [codec.encode(obj) for obj in valid_messages(spec, version, n, seed)]


def rng_for(*parts) -> random.Random:
    return random.Random(":".join(str(p) for p in parts))


# --------------------------------------------------------------------------
# checking one input
# --------------------------------------------------------------------------

def _check_error(exc: DecodeError, name: str, version, data: bytes, where: str, what: str) -> None:
    if type(exc) is not DecodeError:
        raise CaseFailure(what, where, data, f"expected a plain DecodeError, got {exc!r}")
    if exc.api != name or exc.version != version:
        raise CaseFailure(what, where, data, f"error names {exc.api!r} v{exc.version}, expected {name!r} v{version}: {exc}")
    if not isinstance(exc.offset, int) or not 0 <= exc.offset <= len(data):
        raise CaseFailure(what, where, data, f"offset {exc.offset!r} outside 0..{len(data)}: {exc}")
    if not exc.reason:
        raise CaseFailure(what, where, data, f"no reason given: {exc!r}")


def check_decode(codec: Codec, data: bytes, what: str, *, must_fail: bool = False,
                 offset_range: tuple[int, int] | None = None, interpreted: bool = True) -> DecodeError | dict:
    """Decode ``data`` with the compiled codec (and the interpreted construct); check the contract.

    Returns the DecodeError raised or the decoded dict. ``must_fail``: success is a
    failure. ``offset_range``: the error offset must lie in it (inclusive).
    """
    where = f"{codec.name} v{codec.version}"
    try:
        obj = codec.decode(data)
    except DecodeError as exc:
        _check_error(exc, codec.name, codec.version, data, where, what)
        if offset_range is not None and not offset_range[0] <= exc.offset <= offset_range[1]:
            raise CaseFailure(what, where, data, f"offset {exc.offset} outside {offset_range}: {exc}") from None
        if interpreted:
            _check_interpreted(codec, data, what, where)
        return exc
    except Exception as exc:  # noqa: BLE001 -- any other exception is the bug we look for
        raise CaseFailure(what, where, data, f"raised {type(exc).__name__}: {exc}") from exc
    if must_fail:
        raise CaseFailure(what, where, data, f"decoded although it must not: {short(obj)}")
    check_reencodes(codec, obj, data, what)
    if interpreted:
        _check_interpreted(codec, data, what, where)
    return obj


def check_reencodes(codec: Codec, obj: dict, data: bytes, what: str) -> None:
    where = f"{codec.name} v{codec.version}"
    try:
        again = codec.encode(obj)
        back = codec.decode(again)
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure(what, where, data, f"decoded to {short(obj)} which does not re-encode/decode: {exc!r}") from exc
    if back != obj:
        raise CaseFailure(what, where, data, f"decoded to {short(obj)}, re-encoded as {again.hex()}, decoded back as {short(back)}")


def _check_interpreted(codec: Codec, data: bytes, what: str, where: str) -> None:
    """The interpreted construct path agrees with the compiled one (trailing bytes allowed)."""
    try:
        expected = codec.decode(data, allow_trailing=True)
    except DecodeError:
        expected = None
    try:
        got = codec.struct.parse(data)
    except DecodeError as exc:
        if expected is not None:
            raise CaseFailure(what, where, data, f"interpreted path failed ({exc}) where the compiled one decoded {short(expected)}") from None
        _check_error(exc, codec.name, codec.version, data, where + " (interpreted)", what)
        return
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure(what, where, data, f"interpreted path raised {type(exc).__name__}: {exc}") from exc
    if got != expected:
        raise CaseFailure(what, where, data, f"interpreted path decoded {short(got)}, compiled {short(expected)}")


# --------------------------------------------------------------------------
# mutations of one valid encoding
# --------------------------------------------------------------------------

def prefix_lengths(n: int, rng: random.Random, limit: int = 96) -> list[int]:
    """Every strict prefix length of an n-byte message, or a sample (ends always included)."""
    if n <= limit:
        return list(range(n))
    ends = set(range(8)) | set(range(n - 8, n))
    return sorted(ends | set(rng.sample(range(n), limit - len(ends))))


def flip_bits(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        i = rng.randrange(len(b) * 8)
        b[i >> 3] ^= 1 << (i & 7)
    return bytes(b)


def smash_bytes(data: bytes, rng: random.Random) -> bytes:
    """Overwrite 1-2 bytes with interesting values (0x00, 0xff, 0x7f, 0x80, random)."""
    b = bytearray(data)
    for _ in range(rng.choice((1, 2))):
        b[rng.randrange(len(b))] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)))
    return bytes(b)


def random_bytes(rng: random.Random, max_len: int = 48) -> bytes:
    n = rng.choice((0, 1, 2, 3, 4, rng.randrange(max_len + 1)))
    return rng.randbytes(n)


def garbage(rng: random.Random) -> bytes:
    return rng.choice((b"\x00", b"\xff", b"\x00\x00\x00\x00", rng.randbytes(rng.randint(1, 16))))


# --------------------------------------------------------------------------
# where the lengths are: an independent walker over a valid encoding
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Slot:
    """A length prefix / count in a valid encoding, or a nullable struct's presence marker."""

    offset: int
    width: int        # bytes it takes as written
    kind: str         # "int8" (markers only), "int16", "int32" or "uvarint"
    role: str         # "string", "bytes", "array", "tag_count", "tag_size", "marker"
    nullable: bool
    value: int        # as written (compact: the raw uvarint, i.e. length + 1)
    in_tag: bool = False  # inside a tagged field's payload (its size counts these bytes)


def _uvarint_at(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def layout(t: KType, data: bytes, pos: int = 0, slots: list[Slot] | None = None,
           in_tag: bool = False) -> tuple[int, list[Slot]]:
    """Walk a *valid* encoding of type t from pos; return (end, slots)."""
    if slots is None:
        slots = []
    if isinstance(t, Fixed):
        return pos + t.size, slots
    if isinstance(t, Uuid):
        return pos + 16, slots
    if isinstance(t, (Varint, Varlong, UVarint)):
        return _uvarint_at(data, pos)[1], slots
    if isinstance(t, _Sized):
        role = "string" if t.is_text else "bytes"
        if t.compact:
            raw, end = _uvarint_at(data, pos)
            slots.append(Slot(pos, end - pos, "uvarint", role, t.nullable, raw, in_tag))
            n = raw - 1
        else:
            fmt = ">h" if t.width == 2 else ">i"
            n = struct.unpack_from(fmt, data, pos)[0]
            slots.append(Slot(pos, t.width, f"int{t.width * 8}", role, t.nullable, n, in_tag))
            end = pos + t.width
        return end + max(n, 0), slots
    if isinstance(t, Array):
        if t.compact:
            raw, end = _uvarint_at(data, pos)
            slots.append(Slot(pos, end - pos, "uvarint", "array", t.nullable, raw, in_tag))
            n = raw - 1
        else:
            n = struct.unpack_from(">i", data, pos)[0]
            slots.append(Slot(pos, 4, "int32", "array", t.nullable, n, in_tag))
            end = pos + 4
        pos = end
        for _ in range(max(n, 0)):
            pos, _ = layout(t.elem, data, pos, slots, in_tag)
        return pos, slots
    if isinstance(t, NullableStruct):
        if t.tagged:   # inside a tagged field: uvarint 0 (null) or 1
            raw, end = _uvarint_at(data, pos)
            slots.append(Slot(pos, end - pos, "uvarint", "marker", True, raw, in_tag))
            present = raw == 1
        else:          # int8 -1 (null) or 1
            raw = struct.unpack_from(">b", data, pos)[0]
            end = pos + 1
            slots.append(Slot(pos, 1, "int8", "marker", True, raw, in_tag))
            present = raw == 1
        return layout(t.struct, data, end, slots, in_tag) if present else (end, slots)
    if isinstance(t, KStruct):
        for f in t.fields:
            pos, _ = layout(f.type, data, pos, slots, in_tag)
        if t.flexible:
            count, end = _uvarint_at(data, pos)
            slots.append(Slot(pos, end - pos, "uvarint", "tag_count", False, count, in_tag))
            pos = end
            for _ in range(count):
                tag, pos = _uvarint_at(data, pos)
                size, end = _uvarint_at(data, pos)
                slots.append(Slot(pos, end - pos, "uvarint", "tag_size", False, size, in_tag))
                pos = end
                known = next((f for f in t.tagged if f.tag == tag), None)
                if known is not None:
                    layout(known.type, data, pos, slots, True)
                pos += size
        return pos, slots
    raise TypeError(t)


def has_length_slots(t: KType) -> bool:
    if isinstance(t, (_Sized, Array)):
        return True
    if isinstance(t, NullableStruct):
        return has_length_slots(t.struct)
    if isinstance(t, KStruct):
        return t.flexible or any(has_length_slots(f.type) for f in t.fields)
    return False


def has_markers(t: KType) -> bool:
    """Whether t holds a nullable struct (a presence marker in every encoding of its parent)."""
    if isinstance(t, NullableStruct):
        return True
    if isinstance(t, Array):
        return has_markers(t.elem)
    if isinstance(t, KStruct):
        return any(has_markers(f.type) for f in t.fields + t.tagged)
    return False


def _pack_slot(slot: Slot, value: int) -> bytes:
    if slot.kind == "int16":
        return struct.pack(">h", value)
    if slot.kind == "int32":
        return struct.pack(">i", value)
    return uvarint_bytes(value)


@dataclass(frozen=True)
class Rewrite:
    data: bytes
    slot: Slot
    new_value: int
    new_width: int
    immediate: bool   # must fail right at the rewritten prefix
    label: str

    @property
    def huge(self) -> bool:
        """Claims more bytes or elements than any buffer here holds."""
        return self.new_value >= 0x7FFF


def length_rewrites(data: bytes, slots: list[Slot]) -> Iterator[Rewrite]:
    """Every slot rewritten to negative and huge values.

    ``immediate``: the decoder must raise at the rewritten prefix (offset between its
    start and its end); the others (a nullable's -1, a huge tagged-field count) may
    decode further before failing, or even decode.
    """
    for s in slots:
        if s.role == "marker":
            continue      # not a length: marker_rewrites
        if s.kind == "int16":
            values = [-2, -0x8000, 0x7FFF, -1]
        elif s.kind == "int32":
            values = [0x7FFFFFFF, -0x80000000, -2, -1, 0x10000000]
        else:  # uvarint: compact length/count + 1, tag count, tag size
            values = [0xFFFFFFFF, 0x7FFFFFFF, 0x10000000]
            if s.role not in ("tag_count", "tag_size"):
                values.append(0)  # length -1: null
        for v in values:
            raw = _pack_slot(s, v)
            patched = data[:s.offset] + raw + data[s.offset + s.width:]
            if s.kind == "uvarint" and s.role not in ("tag_count", "tag_size"):
                length = v - 1
            else:
                length = v
            if s.role == "tag_count":
                immediate = False
            elif length == -1 and s.nullable and s.role != "tag_size":
                immediate = False
            else:
                immediate = True  # negative (not a null) or larger than the whole buffer
            yield Rewrite(patched, s, v, len(raw), immediate, f"{s.role}@{s.offset} {s.kind} {s.value}->{v}")
        if s.kind == "uvarint":
            # an over-long varint (6 bytes) where the prefix was
            raw = b"\x81\x80\x80\x80\x80\x00"
            patched = data[:s.offset] + raw + data[s.offset + s.width:]
            yield Rewrite(patched, s, -1, len(raw), True, f"{s.role}@{s.offset} 6-byte varint")


def marker_rewrites(data: bytes, slots: list[Slot]) -> Iterator[tuple[bytes, Slot, int]]:
    """Every presence marker rewritten to values Kafka's writer never produces (int8: anything
    but -1 and 1; uvarint: anything but 0 and 1), same width: each must fail at the marker."""
    for s in slots:
        if s.role != "marker":
            continue
        values = (0, 2, 0x7F, -0x80, -2) if s.kind == "int8" else (2, 0x7F)
        for v in values:
            raw = struct.pack(">b", v) if s.kind == "int8" else uvarint_bytes(v)
            yield data[:s.offset] + raw + data[s.offset + s.width:], s, v


def padded_varints(data: bytes, slots: list[Slot]) -> Iterator[tuple[bytes, Slot]]:
    """Every varint prefix written one byte longer than needed (0 as 80 00): still valid."""
    for s in slots:
        if s.kind == "uvarint" and s.width < 5 and not s.in_tag and s.role != "marker":
            raw = bytearray(uvarint_bytes(s.value))
            raw[-1] |= 0x80
            raw.append(0)
            yield data[:s.offset] + bytes(raw) + data[s.offset + s.width:], s


def oversized_strings(data: bytes, slots: list[Slot]) -> Iterator[tuple[bytes, Slot]]:
    """Compact strings rewritten to 32768 bytes (Kafka's limit is 32767), lengths consistent."""
    for s in slots:
        if s.role == "string" and s.kind == "uvarint" and s.value >= 1 and not s.in_tag:
            old = s.value - 1
            body = b"a" * 32768
            yield data[:s.offset] + uvarint_bytes(len(body) + 1) + body + data[s.offset + s.width + old:], s


# --------------------------------------------------------------------------
# memory and time of one decode
# --------------------------------------------------------------------------

def measured(fn: Callable[[], object]) -> tuple[BaseException | None, int, float]:
    """Run fn under tracemalloc: (exception raised or None, peak bytes above the start, seconds)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        raised = None
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 -- re-raised by the caller
            raised = exc
        dt = time.perf_counter() - t0
        return raised, tracemalloc.get_traced_memory()[1] - base, dt
    finally:
        if started:
            tracemalloc.stop()


# --------------------------------------------------------------------------
# case runners (one spec/version each), returning the number of cases
# --------------------------------------------------------------------------

def run_truncations(spec: MessageSpec, version: int, seed: int = SEED, n_msgs: int = 3, limit: int = 64) -> int:
    codec = spec.codec(version)
    count = 0
    for i, (obj, data) in enumerate(zip(valid_messages(spec, version, n_msgs, seed),
                                        valid_encodings(spec, version, n_msgs, seed))):
        if check_decode(codec, data, "valid message") != obj:
            raise CaseFailure("valid message", spec_id(spec, version), data, f"does not decode to {short(obj)}")
        rng = rng_for(seed, "truncate", spec.name, version, i)
        for cut in prefix_lengths(len(data), rng, limit):
            check_decode(codec, data[:cut], f"truncated to {cut} of {len(data)}", must_fail=True,
                         offset_range=(0, cut))
            count += 1
    return count


def run_bit_flips(spec: MessageSpec, version: int, seed: int = SEED, n_msgs: int = 3, per_msg: int = 16) -> int:
    codec = spec.codec(version)
    count = 0
    for i, data in enumerate(valid_encodings(spec, version, n_msgs, seed)):
        if not data:
            continue
        rng = rng_for(seed, "flip", spec.name, version, i)
        for k in range(per_msg):
            mutated = flip_bits(data, rng) if k % 3 else smash_bytes(data, rng)
            check_decode(codec, mutated, f"mutation {k} of {data.hex()}")
            count += 1
    return count


def run_random_bytes(spec: MessageSpec, version: int, seed: int = SEED, n: int = 16) -> int:
    codec = spec.codec(version)
    rng = rng_for(seed, "random", spec.name, version)
    for k in range(n):
        check_decode(codec, random_bytes(rng), f"random bytes {k}")
    return n


def run_trailing(spec: MessageSpec, version: int, seed: int = SEED, n_msgs: int = 3, per_msg: int = 2) -> int:
    codec = spec.codec(version)
    count = 0
    for i, data in enumerate(valid_encodings(spec, version, n_msgs, seed)):
        rng = rng_for(seed, "trailing", spec.name, version, i)
        obj = codec.decode(data)
        for _ in range(per_msg):
            extra = garbage(rng)
            exc = check_decode(codec, data + extra, f"{len(extra)} trailing bytes", must_fail=True,
                               offset_range=(len(data), len(data)))
            if "trailing" not in exc.reason:
                raise CaseFailure("trailing bytes", spec_id(spec, version), data + extra, f"reason does not say so: {exc}")
            if codec.decode(data + extra, allow_trailing=True) != obj:
                raise CaseFailure("trailing bytes", spec_id(spec, version), data + extra, "allow_trailing changed the result")
            count += 1
    return count


def run_marker_rewrites(spec: MessageSpec, version: int, seed: int = SEED, n_msgs: int = 3) -> int:
    """Every nullable struct's presence marker rewritten to an invalid value: a DecodeError
    at exactly the marker's offset, compiled and interpreted alike."""
    codec = spec.codec(version)
    struct_ = spec.struct(version)
    count = 0
    for data in valid_encodings(spec, version, n_msgs, seed):
        end, slots = layout(struct_, data)
        if end != len(data):
            raise CaseFailure("layout", spec_id(spec, version), data, f"walker ended at {end}")
        for patched, s, v in marker_rewrites(data, slots):
            exc = check_decode(codec, patched, f"marker@{s.offset} {s.value}->{v}", must_fail=True,
                               offset_range=(s.offset, s.offset))
            if "presence marker" not in exc.reason:
                raise CaseFailure("marker", spec_id(spec, version), patched, f"reason does not say so: {exc}")
            count += 1
    return count


PEAK_LIMIT = 256 * 1024     # bytes a single malformed decode may allocate, at most
# A hang guard, not a speed claim: lengths are checked against the bytes left before
# anything loops or allocates, so a decode ends in time linear in its input; a decode
# that takes longer than this is stuck.
TIME_LIMIT = 5.0


def run_length_rewrites(spec: MessageSpec, version: int, seed: int = SEED, n_msgs: int = 3,
                        max_slots: int = 12) -> tuple[int, int]:
    """Every length prefix / count rewritten; (cases, largest peak allocation seen).

    A rewrite claiming a huge size is decoded under tracemalloc and must stay under
    PEAK_LIMIT bytes (plus a few times the input) and TIME_LIMIT seconds, compiled
    and interpreted alike.
    """
    codec = spec.codec(version)
    struct_ = spec.struct(version)
    rng = rng_for(seed, "lengths", spec.name, version)
    where_ = spec_id(spec, version)
    count, worst = 0, 0
    seen: set = set()  # kinds of rewrite the (slow) interpreted path has checked

    def first(*kind) -> bool:
        new = kind not in seen
        seen.add(kind)
        return new

    for data in valid_encodings(spec, version, n_msgs, seed):
        end, slots = layout(struct_, data)
        if end != len(data):
            raise CaseFailure("layout", where_, data, f"walker ended at {end}")
        slots = [s for s in slots if s.role != "marker"]
        if len(slots) > max_slots:
            slots = sorted(rng.sample(slots, max_slots), key=lambda s: s.offset)
        for rw in length_rewrites(data, slots):
            label = rw.label
            if rw.immediate:
                span = (rw.slot.offset, rw.slot.offset + rw.new_width)
            else:
                span = (rw.slot.offset, len(rw.data))
            interpreted = first(rw.slot.role, rw.slot.kind, rw.slot.nullable, rw.new_value)
            if not rw.huge:
                check_decode(codec, rw.data, label, must_fail=rw.immediate, offset_range=span,
                             interpreted=interpreted)
                count += 1
                continue
            paths = [("compiled", lambda: check_decode(codec, rw.data, label, must_fail=rw.immediate,
                                                       offset_range=span, interpreted=False))]
            if interpreted:
                paths.append(("interpreted", lambda: _check_interpreted(codec, rw.data, label, where_)))
            for path, fn in paths:
                raised, peak, dt = measured(fn)
                if raised is not None:
                    raise raised
                if peak > PEAK_LIMIT + 8 * len(rw.data):
                    raise CaseFailure("allocation", where_, rw.data, f"{label}: {path} decoding allocated {peak} bytes")
                if dt > TIME_LIMIT:
                    raise CaseFailure("time", where_, rw.data, f"{label}: {path} decoding took {dt:.3f} s")
                worst = max(worst, peak)
            count += 1
        expected = codec.decode(data)
        for patched, s in padded_varints(data, slots):
            got = check_decode(codec, patched, f"{s.role}@{s.offset} padded varint",
                               interpreted=first("padded", s.role))
            if got != expected:
                raise CaseFailure("padded varint", where_, patched, f"{s.role}@{s.offset}: decoded as {short(got)}, "
                                  f"not as {short(expected)}")
            count += 1
        for patched, s in oversized_strings(data, slots):
            check_decode(codec, patched, f"string@{s.offset} of 32768 bytes", interpreted=first("oversized"))
            count += 1
    return count, worst


# --------------------------------------------------------------------------
# whole frames
# --------------------------------------------------------------------------

def _check_frame_error(exc: DecodeError, api_key: int | None, data: bytes, what: str, *, request: bool) -> None:
    """A frame-level error names the header, the API's message or the unknown API key sensibly."""
    where = "request frame" if request else "response frame"
    if not isinstance(exc, DecodeError):
        raise CaseFailure(what, where, data, f"not a DecodeError: {exc!r}")
    if not isinstance(exc.offset, int) or not 0 <= exc.offset <= len(data) or not exc.reason:
        raise CaseFailure(what, where, data, f"bad offset/reason: {exc!r}")
    if request:
        if len(data) < 8:
            # not even api key, version and correlation id: nothing to name but the header
            ok = exc.api == "RequestHeader" and exc.version is None and exc.offset == 0
        else:
            api_key, api_version = struct.unpack_from(">hh", data)
            api = APIS.get(api_key)
            if api is None:
                ok = (isinstance(exc, UnsupportedVersionError) and exc.api == f"ApiKey{api_key}"
                      and exc.version == api_version and exc.offset == 0)
            elif not api.request.supports(api_version):
                ok = (isinstance(exc, UnsupportedVersionError) and exc.api == api.request.name
                      and exc.version == api_version and exc.offset == 2)
            elif isinstance(exc, UnsupportedVersionError):
                ok = False
            elif exc.api == "RequestHeader":
                ok = exc.version == frames.request_header_version(api_key, api_version) and exc.offset >= 8
            else:
                ok = exc.api == api.request.name and exc.version == api_version and exc.offset >= 10
    else:
        if isinstance(exc, UnsupportedVersionError):
            ok = False
        else:
            ok = exc.api in ("ResponseHeader", APIS[api_key].response.name) and exc.version is not None
    if not ok:
        raise CaseFailure(what, where, data, f"error does not name the right API/version: {exc!r}")


def check_request_frame(data: bytes, what: str, *, must_fail: bool = False) -> DecodeError | frames.Request:
    try:
        req = frames.decode_request(data)
    except DecodeError as exc:
        _check_frame_error(exc, None, data, what, request=True)
        return exc
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure(what, "request frame", data, f"raised {type(exc).__name__}: {exc}") from exc
    if must_fail:
        raise CaseFailure(what, "request frame", data, f"decoded although it must not: {short(req)}")
    try:
        again = frames.encode_request(req.api_key, req.api_version, req.correlation_id, req.body,
                                      client_id=req.header["client_id"], framed=False)
        back = frames.decode_request(again)
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure(what, "request frame", data, f"decoded to {short(req)} which does not re-encode: {exc!r}") from exc
    # encode_request writes no header tags: unknown ones in the input are not carried over
    if _sans_header_tags(back) != _sans_header_tags(req):
        raise CaseFailure(what, "request frame", data, f"decoded to {short(req)}, back as {short(back)}")
    return req


def _sans_header_tags(req: frames.Request) -> tuple:
    header = {k: v for k, v in req.header.items() if k != "_unknown_tags"}
    return req.api_key, req.api_version, req.correlation_id, req.client_id, req.body, header


def check_response_frame(api_key: int, version: int, data: bytes, what: str, *,
                         must_fail: bool = False) -> DecodeError | tuple[int, dict]:
    try:
        got = frames.decode_response(api_key, version, data)
    except DecodeError as exc:
        _check_frame_error(exc, api_key, data, what, request=False)
        return exc
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure(what, "response frame", data, f"raised {type(exc).__name__}: {exc}") from exc
    if must_fail:
        raise CaseFailure(what, "response frame", data, f"decoded although it must not: {short(got)}")
    corr, body = got
    try:
        again = frames.encode_response(api_key, version, corr, body, framed=False)
        back = frames.decode_response(api_key, version, again)
    except Exception as exc:  # noqa: BLE001
        raise CaseFailure(what, "response frame", data, f"decoded to {short(got)} which does not re-encode: {exc!r}") from exc
    if back != got:
        raise CaseFailure(what, "response frame", data, f"decoded to {short(got)}, back as {short(back)}")
    return got


def request_frames(api_key: int, version: int, seed: int = SEED) -> list[bytes]:
    """Valid request frames (no size prefix) of one API version, various client ids."""
    api = APIS[api_key]
    rng = rng_for(seed, "reqframe", api_key, version)
    out = []
    for body in valid_messages(api.request, version, 3, seed):
        client_id = rng.choice((None, "", "groupcoord", "ç-" * rng.randint(1, 4)))
        out.append(frames.encode_request(api_key, version, rng.randrange(-2**31, 2**31), body,
                                         client_id=client_id, framed=False))
    return out


def response_frames(api_key: int, version: int, seed: int = SEED) -> list[bytes]:
    api = APIS[api_key]
    rng = rng_for(seed, "respframe", api_key, version)
    return [frames.encode_response(api_key, version, rng.randrange(-2**31, 2**31), body, framed=False)
            for body in valid_messages(api.response, version, 3, seed)]


def run_request_frames(api_key: int, version: int, seed: int = SEED, flips: int = 12, limit: int = 64) -> int:
    count = 0
    for i, data in enumerate(request_frames(api_key, version, seed)):
        req = check_request_frame(data, "valid frame")
        if (req.api_key, req.api_version) != (api_key, version):
            raise CaseFailure("valid frame", "request frame", data, f"decoded as {short(req)}")
        rng = rng_for(seed, "reqframe-mut", api_key, version, i)
        for cut in prefix_lengths(len(data), rng, limit):
            check_request_frame(data[:cut], f"truncated to {cut}", must_fail=True)
            count += 1
        for _ in range(2):
            # Kafka ignores bytes after a request's body (librdkafka sends some): same request
            extra = garbage(rng)
            got = check_request_frame(data + extra, "trailing bytes")
            if (got.body, got.correlation_id, got.trailing) != (req.body, req.correlation_id, len(extra)):
                raise CaseFailure("trailing bytes", "request frame", data, f"decoded as {short(got)}")
            count += 1
        for k in range(flips):
            check_request_frame(flip_bits(data, rng) if k % 2 else smash_bytes(data, rng), f"mutation {k}")
            count += 1
    return count


def run_response_frames(api_key: int, version: int, seed: int = SEED, flips: int = 8, limit: int = 48) -> int:
    count = 0
    for i, data in enumerate(response_frames(api_key, version, seed)):
        check_response_frame(api_key, version, data, "valid frame")
        rng = rng_for(seed, "respframe-mut", api_key, version, i)
        for cut in prefix_lengths(len(data), rng, limit):
            check_response_frame(api_key, version, data[:cut], f"truncated to {cut}", must_fail=True)
            count += 1
        exc = check_response_frame(api_key, version, data + garbage(rng), "trailing bytes", must_fail=True)
        if exc.offset != len(data):
            raise CaseFailure("trailing bytes", "response frame", data, f"wrong offset {exc!r}")
        count += 1
        for k in range(flips):
            check_response_frame(api_key, version, flip_bits(data, rng), f"mutation {k}")
            count += 1
    return count


def unsupported_versions(api_key: int) -> list[int]:
    spec = APIS[api_key].request
    lo, hi = spec.valid
    out = {hi + 1, hi + 2, 0x7FFF, -1, -0x8000}
    if lo > 0:
        out.add(lo - 1)
    return sorted(out)


def unknown_api_keys() -> list[int]:
    return [k for k in list(range(-2, 80)) + [0x7FFF, -0x8000, 1000] if k not in APIS]


def run_random_request_frames(rng: random.Random, n: int) -> int:
    """Random frames, half of them behind a plausible header (known key, supported version)."""
    keys = sorted(APIS)
    for k in range(n):
        if k % 2:
            key = rng.choice(keys)
            version = rng.choice(list(APIS[key].request.versions))
            data = struct.pack(">hhi", key, version, rng.randrange(-2**31, 2**31)) + random_bytes(rng, 40)
        else:
            data = random_bytes(rng, 40)
        check_request_frame(data, f"random frame {k}")
    return n
