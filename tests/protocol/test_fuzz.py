"""Malformed input never escapes as anything but one typed error.

Requirement: decoding anything malformed (truncated, negative lengths, lengths past
the frame, unknown version, trailing garbage where none is allowed) raises one typed
error that names the API, the version and the offset -- never an IndexError, a
construct internal error or a hang, never an allocation sized by an unchecked length
from the wire.

For every request and response of every API version: valid messages (kstrategies,
fixed hypothesis seed) truncated at every prefix (a sample for long ones), bit flips
and smashed bytes, random byte strings, every length prefix / count / tagged-field
size rewritten to negative and huge values (under tracemalloc and a time limit),
every nullable struct's presence marker rewritten to values Kafka never writes,
trailing garbage; then whole request and response frames. The case generators and
checkers live in fuzzcases.py (shared with bench/fuzz_codec.py, the longer run).
Everything is seeded: a failure reproduces, and its message carries the bytes.
"""
from __future__ import annotations

import struct
import tracemalloc

import pytest

import fuzzcases as fc
from groupcoord.protocol import frames
from groupcoord.protocol.errors import DecodeError, UnsupportedVersionError
from groupcoord.protocol.messages import APIS
from groupcoord.protocol.schema import MessageSpec

SPEC_PARAMS = [pytest.param(s, v, id=fc.spec_id(s, v)) for s, v in fc.SPECS]
LENGTH_PARAMS = [pytest.param(s, v, id=fc.spec_id(s, v)) for s, v in fc.SPECS
                 if fc.has_length_slots(s.struct(v))]
MARKER_PARAMS = [pytest.param(s, v, id=fc.spec_id(s, v)) for s, v in fc.SPECS if fc.has_markers(s.struct(v))]
API_VERSIONS = [pytest.param(k, v, id=f"{a.name}-v{v}") for k, a in sorted(APIS.items()) for v in a.versions]


def test_every_request_and_response_version_is_fuzzed():
    expected = {(s.name, v) for a in APIS.values() for s in (a.request, a.response) for v in s.versions}
    assert {(s.name, v) for s, v in fc.SPECS} == expected
    assert len(fc.SPECS) == len(expected) > 250
    # the length-rewrite cases leave out only messages without any length prefix
    without = {(s.name, v) for s, v in fc.SPECS} - {(p.values[0].name, p.values[1]) for p in LENGTH_PARAMS}
    for name, v in without:
        spec = next(s for s, _ in fc.SPECS if s.name == name)
        assert not spec.is_flexible(v)


def test_empty_messages():
    empty = [(s, v) for s, v in fc.SPECS if s.struct(v).min_size == 0]
    assert {(s.name, v) for s, v in empty} == {(n, v) for n in ("ApiVersionsRequest", "ListGroupsRequest")
                                               for v in range(3)}
    for spec, v in empty:
        assert spec.codec(v).decode(b"") == {}
        assert fc.valid_encodings(spec, v) == [b""]


@pytest.mark.parametrize("spec,version", SPEC_PARAMS)
def test_malformed_messages(spec: MessageSpec, version: int):
    """One message version, four kinds of damage (one test item each: the suite stays fast).

    - every strict prefix of a valid message: DecodeError at an offset inside the prefix;
    - bit flips and smashed bytes: decodes to something that re-encodes, or DecodeError;
    - random byte strings: likewise;
    - trailing garbage: DecodeError at exactly the end of the message.
    The interpreted construct path must agree with the compiled codec throughout.
    """
    empty = spec.struct(version).min_size == 0  # ApiVersions/ListGroups v0-2 requests
    truncated = fc.run_truncations(spec, version)
    flipped = fc.run_bit_flips(spec, version)
    assert (truncated == 0 and flipped == 0) if empty else (truncated > 0 and flipped > 0)
    assert fc.run_random_bytes(spec, version) > 0
    assert fc.run_trailing(spec, version) > 0


@pytest.mark.parametrize("spec,version", LENGTH_PARAMS)
def test_lengths_rewritten_negative_or_huge(spec: MessageSpec, version: int):
    """Counts, lengths and tag sizes patched to -2, -2**31, 2**31-1, 0xffffffff, ... fail
    fast, at the patched prefix, without allocating by the claimed size."""
    count, worst = fc.run_length_rewrites(spec, version)
    assert count > 0
    assert worst < fc.PEAK_LIMIT


def test_messages_with_nullable_structs():
    """The marker cases below reach every message that has a nullable struct: today the responses of
    ConsumerGroupHeartbeat and ShareGroupHeartbeat (their Assignment)."""
    assert {(p.values[0].name, p.values[1]) for p in MARKER_PARAMS} == {
        ("ConsumerGroupHeartbeatResponse", 0), ("ConsumerGroupHeartbeatResponse", 1),
        ("ShareGroupHeartbeatResponse", 1)}


@pytest.mark.parametrize("spec,version", MARKER_PARAMS)
def test_nullable_struct_markers_rewritten(spec: MessageSpec, version: int):
    """Presence markers patched to 0, 2, 127, -128, -2: a DecodeError at the marker itself."""
    assert fc.run_marker_rewrites(spec, version) > 0


def test_memory_meter_sees_an_allocation():
    """The tracemalloc meter used above does notice a 1 MiB allocation (it can fail)."""
    tracemalloc.start()
    try:
        raised, peak, _ = fc.measured(lambda: bytearray(1 << 20))
    finally:
        tracemalloc.stop()
    assert raised is None
    assert peak >= 1 << 20 > fc.PEAK_LIMIT


def test_patched_int32_count_fails_fast_without_allocating():
    """The brief's example spelled out: an int32 array count set to 0x7fffffff."""
    api = APIS[11]  # JoinGroup v5: classic encoding
    codec = api.request.codec(5)
    data = codec.encode({"group_id": "g", "session_timeout_ms": 1, "rebalance_timeout_ms": 2,
                         "member_id": "m", "group_instance_id": None, "protocol_type": "consumer",
                         "protocols": [{"name": "range", "metadata": b"x" * 8}]})
    at = data.index(b"\x00\x00\x00\x01\x00\x05range")  # the protocols count, then the first name
    patched = data[:at] + b"\x7f\xff\xff\xff" + data[at + 4:]
    tracemalloc.start()
    try:
        raised, peak, seconds = fc.measured(lambda: codec.decode(patched))
    finally:
        tracemalloc.stop()
    assert isinstance(raised, DecodeError) and type(raised) is DecodeError
    assert (raised.api, raised.version, raised.offset) == ("JoinGroupRequest", 5, at + 4)
    assert peak < 64 * 1024
    assert seconds < fc.TIME_LIMIT    # a hang guard, not a speed claim


# --------------------------------------------------------------------------
# whole frames
# --------------------------------------------------------------------------

@pytest.mark.parametrize("api_key,version", API_VERSIONS)
def test_frames(api_key: int, version: int):
    """Valid request and response frames truncated, with trailing garbage, corrupted;
    then a request frame that stops right after its header."""
    assert fc.run_request_frames(api_key, version) > 0
    assert fc.run_response_frames(api_key, version) > 0
    check_header_only(api_key, version)


def test_random_request_frames():
    assert fc.run_random_request_frames(fc.rng_for(fc.SEED, "random-frames"), 3000) == 3000


@pytest.mark.parametrize("api_key", fc.unknown_api_keys())
def test_unknown_api_key(api_key: int):
    for version in (0, 3, -1):
        data = struct.pack(">hhi", api_key, version, 42) + b"\x00\x01x" + b"\x00" * 8
        with pytest.raises(UnsupportedVersionError) as info:
            frames.decode_request(data)
        e = info.value
        assert (e.api, e.version, e.offset) == (f"ApiKey{api_key}", version, 0)
        assert e.reason


@pytest.mark.parametrize("api_key", sorted(APIS))
def test_unsupported_versions(api_key: int):
    api = APIS[api_key]
    body = api.request.codec(api.request.valid[1]).encode(fc.valid_messages(api.request, api.request.valid[1])[-1])
    for version in fc.unsupported_versions(api_key):
        for data in (struct.pack(">hhi", api_key, version, 7),                      # header prefix only
                     struct.pack(">hhih", api_key, version, 7, 1) + b"c" + body):   # with a body
            with pytest.raises(UnsupportedVersionError) as info:
                frames.decode_request(data)
            e = info.value
            assert (e.api, e.version, e.offset) == (api.request.name, version, 2), e
        # the codecs themselves refuse the version too
        for spec in (api.request, api.response):
            with pytest.raises(UnsupportedVersionError) as info:
                spec.codec(version)
            assert (info.value.api, info.value.version) == (spec.name, version)


def test_truncated_header():
    full = frames.encode_request(11, 6, 99, {"group_id": "g"}, client_id="client", framed=False)
    header_len = 8 + 2 + len("client") + 1  # v2: tag section
    for cut in range(8):
        with pytest.raises(DecodeError) as info:
            frames.decode_request(full[:cut])
        e = info.value
        assert type(e) is DecodeError
        assert (e.api, e.version, e.offset) == ("RequestHeader", None, 0), e
    for cut in range(8, header_len):
        with pytest.raises(DecodeError) as info:
            frames.decode_request(full[:cut])
        e = info.value
        assert type(e) is DecodeError
        assert (e.api, e.version) == ("RequestHeader", 2), e
        assert 8 <= e.offset <= cut
    # a client id claiming more bytes than the frame holds
    bad = full[:8] + b"\x7f\xff" + full[10:]
    with pytest.raises(DecodeError) as info:
        frames.decode_request(bad)
    assert (info.value.api, info.value.version, info.value.offset) == ("RequestHeader", 2, 10)
    # a negative client id length other than -1 (null)
    bad = full[:8] + b"\xff\xfe" + full[10:]
    with pytest.raises(DecodeError) as info:
        frames.decode_request(bad)
    assert (info.value.api, info.value.version, info.value.offset) == ("RequestHeader", 2, 10)


def check_header_only(api_key: int, version: int):
    """A frame that stops right after its header: a DecodeError at the body's first byte,
    unless the body may be empty (ApiVersions v0-2, ListGroups v0-2...)."""
    api = APIS[api_key]
    data = frames.encode_request(api_key, version, 5, {}, client_id="c", framed=False)
    header = data[:8 + 3 + (1 if api.request.is_flexible(version) else 0)]  # keys, correlation id, "c", tags
    empty_ok = api.request.struct(version).min_size == 0
    if empty_ok:
        req = frames.decode_request(header)
        assert req.body == api.request.codec(version).decode(b"")
        return
    with pytest.raises(DecodeError) as info:
        frames.decode_request(header)
    e = info.value
    assert type(e) is DecodeError
    assert (e.api, e.version, e.offset) == (api.request.name, version, len(header)), e
