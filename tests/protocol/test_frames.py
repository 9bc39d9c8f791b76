"""Request and response headers and whole frames.

Header bytes are checked against the layout in Kafka's protocol guide (written out
by hand here) and byte for byte against kafka-python 3.0.12's own header encoding
(``.with_header(...)`` then ``.encode(header=True)``), which follows Kafka's
RequestHeader.json / ResponseHeader.json and KIP-511 (ApiVersions responses keep
header v0).
"""
from __future__ import annotations

import io
import struct

import pytest
from kafka.protocol.consumer.group import (
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

import fuzzcases as fc
from groupcoord.protocol import frames
from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.messages import APIS, BY_NAME

JOIN, HEARTBEAT, API_VERSIONS, METADATA, SYNC, FIND_COORDINATOR = 11, 12, 18, 3, 14, 10


def body_bytes(api_key: int, version: int, body: dict, *, response: bool = False) -> bytes:
    spec = APIS[api_key].response if response else APIS[api_key].request
    return spec.codec(version).encode(body)


JOIN_BODY = {"group_id": "g", "session_timeout_ms": 10, "rebalance_timeout_ms": 20, "member_id": "m",
             "group_instance_id": None, "protocol_type": "consumer",
             "protocols": [{"name": "range", "metadata": b"\x01\x02"}], "reason": None}
HEARTBEAT_BODY = {"group_id": "g", "generation_id": 3, "member_id": "m", "group_instance_id": "i"}


# --------------------------------------------------------------------------
# header versions
# --------------------------------------------------------------------------

@pytest.mark.parametrize("api_key,version,expected", [
    (JOIN, 0, 1), (JOIN, 5, 1), (JOIN, 6, 2), (JOIN, 9, 2),
    (HEARTBEAT, 3, 1), (HEARTBEAT, 4, 2),
    (API_VERSIONS, 2, 1), (API_VERSIONS, 3, 2), (API_VERSIONS, 4, 2),
    (METADATA, 8, 1), (METADATA, 9, 2),
    (17, 1, 1),           # SaslHandshake: never flexible
    (47, 0, 1),           # OffsetDelete v0
])
def test_request_header_version(api_key, version, expected):
    assert frames.request_header_version(api_key, version) == expected


@pytest.mark.parametrize("api_key,version,expected", [
    (JOIN, 5, 0), (JOIN, 6, 1), (HEARTBEAT, 4, 1), (METADATA, 9, 1), (17, 1, 0),
    (API_VERSIONS, 0, 0), (API_VERSIONS, 3, 0), (API_VERSIONS, 4, 0),  # KIP-511: always v0
])
def test_response_header_version(api_key, version, expected):
    assert frames.response_header_version(api_key, version) == expected


# --------------------------------------------------------------------------
# request headers, byte for byte
# --------------------------------------------------------------------------

def test_request_header_v1_bytes():
    got = frames.encode_request(JOIN, 5, 7, JOIN_BODY, client_id="x", framed=False)
    header = bytes.fromhex("000b" "0005" "00000007" "0001" "78")
    assert got == header + body_bytes(JOIN, 5, JOIN_BODY)


def test_request_header_v2_bytes_keep_a_classic_client_id():
    got = frames.encode_request(JOIN, 6, 7, JOIN_BODY, client_id="xy", framed=False)
    # the client id stays an int16-length string in v2 (not compact: 03 78 79), then tags
    header = bytes.fromhex("000b" "0006" "00000007" "0002" "7879" "00")
    assert got == header + body_bytes(JOIN, 6, JOIN_BODY)


def test_request_header_v2_tagged_fields_are_read_past():
    body = body_bytes(HEARTBEAT, 4, HEARTBEAT_BODY)
    data = bytes.fromhex("000c" "0004" "00000003" "0001" "78" "01" "05" "02" "abcd") + body
    req = frames.decode_request(data)
    assert req.header["_unknown_tags"] == {5: b"\xab\xcd"}
    assert (req.correlation_id, req.client_id) == (3, "x")
    assert req.body == APIS[HEARTBEAT].request.codec(4).decode(body)
    # a header tag running past the frame
    with pytest.raises(DecodeError) as info:
        frames.decode_request(data[:11] + b"\x01\x05\x7f")
    assert (info.value.api, info.value.version) == ("RequestHeader", 2)


@pytest.mark.parametrize("version", [5, 6])
def test_null_client_id(version):
    got = frames.encode_request(JOIN, version, -1, JOIN_BODY, client_id=None, framed=False)
    assert got[:10] == bytes.fromhex("000b") + struct.pack(">hi", version, -1) + b"\xff\xff"
    req = frames.decode_request(got)
    assert req.client_id == ""
    assert req.header["client_id"] is None
    assert req.correlation_id == -1
    assert req.body == APIS[JOIN].request.codec(version).decode(body_bytes(JOIN, version, JOIN_BODY))


def test_empty_client_id_is_not_null():
    got = frames.encode_request(HEARTBEAT, 4, 1, HEARTBEAT_BODY, client_id="", framed=False)
    assert got[8:11] == b"\x00\x00\x00"  # length 0, then the v2 tag section
    assert frames.decode_request(got).header["client_id"] == ""


def test_framed_request_has_its_size_first():
    bare = frames.encode_request(HEARTBEAT, 4, 9, HEARTBEAT_BODY, client_id="c", framed=False)
    framed = frames.encode_request(HEARTBEAT, 4, 9, HEARTBEAT_BODY, client_id="c")
    assert framed == struct.pack(">i", len(bare)) + bare
    assert frames.frame(b"abc") == b"\x00\x00\x00\x03abc"


def test_unicode_client_id_is_utf8_with_a_byte_length():
    got = frames.encode_request(HEARTBEAT, 4, 9, HEARTBEAT_BODY, client_id="é", framed=False)
    assert got[8:12] == b"\x00\x02\xc3\xa9"
    assert frames.decode_request(got).client_id == "é"


# --------------------------------------------------------------------------
# response headers, byte for byte
# --------------------------------------------------------------------------

def test_response_header_v0_and_v1_bytes():
    body = {"throttle_time_ms": 5, "error_code": 27}
    v3 = frames.encode_response(HEARTBEAT, 3, 7, body, framed=False)
    assert v3 == bytes.fromhex("00000007") + bytes.fromhex("00000005" "001b")
    v4 = frames.encode_response(HEARTBEAT, 4, 7, body, framed=False)
    assert v4 == bytes.fromhex("00000007" "00") + bytes.fromhex("00000005" "001b" "00")
    assert frames.encode_response(HEARTBEAT, 4, 7, body) == struct.pack(">i", len(v4)) + v4


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_response_header_is_always_v0(version):
    body = {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}],
            "throttle_time_ms": 0}
    got = frames.encode_response(API_VERSIONS, version, 7, body, framed=False)
    # correlation id, then straight into the body: error code, compact array of one key...
    expected_body = (bytes.fromhex("0000") + b"\x02" + bytes.fromhex("0012" "0000" "0004") + b"\x00"
                     + bytes.fromhex("00000000") + b"\x00")
    assert got == bytes.fromhex("00000007") + expected_body
    assert frames.decode_response(API_VERSIONS, version, got) == (7, APIS[API_VERSIONS].response.codec(version).decode(expected_body))


def test_decode_response_reads_the_header_version_it_should():
    body = {"throttle_time_ms": 1, "error_code": 0}
    for version in range(5):
        data = frames.encode_response(HEARTBEAT, version, 123, body, framed=False)
        corr, got = frames.decode_response(HEARTBEAT, version, data)
        assert corr == 123
        assert got == APIS[HEARTBEAT].response.codec(version).decode(data[5 if version >= 4 else 4:])
    # a v1 header's tag byte where a v0 header is expected is a trailing byte
    with pytest.raises(DecodeError):
        frames.decode_response(HEARTBEAT, 3, bytes.fromhex("00000007" "00" "00000001" "0000"))


# --------------------------------------------------------------------------
# peek_header
# --------------------------------------------------------------------------

def test_peek_header():
    data = frames.encode_request(JOIN, 6, 424242, JOIN_BODY, client_id="x", framed=False)
    assert frames.peek_header(data) == (JOIN, 6, 424242)
    # only the first 8 bytes matter: the rest may be anything
    assert frames.peek_header(data[:8] + b"\xff" * 3) == (JOIN, 6, 424242)
    assert frames.peek_header(struct.pack(">hhi", -1, -2, -3)) == (-1, -2, -3)
    for n in range(8):
        with pytest.raises(DecodeError) as info:
            frames.peek_header(data[:n])
        assert (info.value.api, info.value.offset) == ("RequestHeader", 0)


# --------------------------------------------------------------------------
# frame round trips
# --------------------------------------------------------------------------

ROUND_TRIP_APIS = [JOIN, SYNC, HEARTBEAT, API_VERSIONS, METADATA, 8, 9, FIND_COORDINATOR, 13]


@pytest.mark.parametrize("api_key", ROUND_TRIP_APIS, ids=[APIS[k].name for k in ROUND_TRIP_APIS])
def test_frame_round_trips(api_key):
    api = APIS[api_key]
    for version in api.versions:
        for i, body in enumerate(fc.valid_messages(api.request, version)):
            client_id = (None, "", "client-1")[i % 3]
            corr = (0, -1, 2**31 - 1)[i % 3]
            framed = frames.encode_request(api_key, version, corr, body, client_id=client_id)
            size, = struct.unpack_from(">i", framed)
            assert size == len(framed) - 4
            req = frames.decode_request(framed[4:])
            assert (req.api_key, req.api_version, req.correlation_id) == (api_key, version, corr)
            assert req.client_id == (client_id or "")
            assert req.api_name == api.name
            assert req.body == body
            # the header occupies what precedes the body's own encoding
            assert framed[4:].endswith(api.request.codec(version).encode(body))
        for body in fc.valid_messages(api.response, version):
            data = frames.encode_response(api_key, version, 77, body)
            assert frames.decode_response(api_key, version, data[4:]) == (77, body)


# --------------------------------------------------------------------------
# kafka-python 3.0.12's own header encoding
# --------------------------------------------------------------------------

THEIR_REQUESTS = [
    (JoinGroupRequest, JOIN, range(10), JOIN_BODY),
    (HeartbeatRequest, HEARTBEAT, range(5), HEARTBEAT_BODY),
    (SyncGroupRequest, SYNC, range(6), {"group_id": "g", "generation_id": 1, "member_id": "m",
                                        "group_instance_id": None, "protocol_type": None,
                                        "protocol_name": None, "assignments": []}),
    (ApiVersionsRequest, API_VERSIONS, range(5), {"client_software_name": "kp", "client_software_version": "3"}),
    (MetadataRequest, METADATA, range(1, 13), {"topics": None, "allow_auto_topic_creation": True,
                                               "include_cluster_authorized_operations": False,
                                               "include_topic_authorized_operations": False}),
    (FindCoordinatorRequest, FIND_COORDINATOR, range(4), {"key": "g", "key_type": 0}),
]


def their(cls, version, body):
    """A kafka-python message from our body dict (struct arrays as its data classes)."""
    kwargs = {}
    for name, value in body.items():
        field = cls._struct.fields[name]
        if field.is_struct_array() and value is not None:
            value = [field.data_class(**x) for x in value]
        kwargs[name] = value
    return cls(version=version, **kwargs)


def _their_request(cls, version, body, corr, client_id):
    msg = their(cls, version, body)
    msg.with_header(correlation_id=corr, client_id=client_id)
    return msg


@pytest.mark.parametrize("cls,api_key,versions,body", THEIR_REQUESTS, ids=[c[0].__name__ for c in THEIR_REQUESTS])
def test_request_frames_match_kafka_python(cls, api_key, versions, body):
    for version in versions:
        for corr, client_id in ((7, "x"), (-5, "kafka-python"), (0, None)):
            theirs = bytes(_their_request(cls, version, body, corr, client_id).encode(header=True))
            ours = frames.encode_request(api_key, version, corr, body, client_id=client_id, framed=False)
            assert ours == theirs, f"v{version}: ours {ours.hex()} theirs {theirs.hex()}"
            theirs_framed = bytes(_their_request(cls, version, body, corr, client_id).encode(header=True, framed=True))
            assert frames.encode_request(api_key, version, corr, body, client_id=client_id) == theirs_framed
            req = frames.decode_request(theirs)
            assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (api_key, version, corr, client_id or "")


def test_join_group_request_header_as_in_the_brief():
    theirs = their(JoinGroupRequest, 6, JOIN_BODY)
    theirs.with_header(correlation_id=7, client_id="x")
    ours = frames.encode_request(JOIN, 6, 7, JOIN_BODY, client_id="x", framed=False)
    assert ours == bytes(theirs.encode(header=True))
    assert ours.startswith(bytes.fromhex("000b000600000007000178" "00"))


THEIR_RESPONSES = [
    (HeartbeatResponse, HEARTBEAT, range(5), {"throttle_time_ms": 3, "error_code": 25}),
    (JoinGroupResponse, JOIN, range(10), {"throttle_time_ms": 0, "error_code": 0, "generation_id": 4,
                                          "protocol_type": "consumer", "protocol_name": "range",
                                          "leader": "m", "skip_assignment": False, "member_id": "m",
                                          "members": [{"member_id": "m", "group_instance_id": None,
                                                       "metadata": b"\x00"}]}),
    (ApiVersionsResponse, API_VERSIONS, range(5), {"error_code": 0, "throttle_time_ms": 0,
                                                   "api_keys": [{"api_key": 11, "min_version": 0, "max_version": 9}]}),
]


@pytest.mark.parametrize("cls,api_key,versions,body", THEIR_RESPONSES, ids=[c[0].__name__ for c in THEIR_RESPONSES])
def test_response_frames_match_kafka_python(cls, api_key, versions, body):
    for version in versions:
        theirs_msg = their(cls, version, body)
        theirs_msg.with_header(correlation_id=99)
        theirs = bytes(theirs_msg.encode(header=True))
        ours = frames.encode_response(api_key, version, 99, body, framed=False)
        assert ours == theirs, f"v{version}: ours {ours.hex()} theirs {theirs.hex()}"
        corr, got = frames.decode_response(api_key, version, theirs)
        assert corr == 99
        assert got == APIS[api_key].response.codec(version).decode(ours[len(ours) - len(body_bytes(api_key, version, body, response=True)):])
        # and kafka-python reads ours, header included
        back = cls.decode(ours, version=version, header=True)
        assert back.header.correlation_id == 99


@pytest.mark.parametrize("version", [0, 3, 4])
def test_kafka_python_parses_our_api_versions_response_header_as_v0(version):
    body = {"error_code": 0, "throttle_time_ms": 0,
            "api_keys": [{"api_key": k, "min_version": a.request.valid[0], "max_version": a.request.valid[1]}
                         for k, a in sorted(APIS.items())]}
    ours = frames.encode_response(API_VERSIONS, version, 31337, body, framed=False)
    buf = io.BytesIO(ours)
    header = ApiVersionsResponse.parse_header(buf)      # kafka-python: always a v0 header
    assert header.correlation_id == 31337
    assert buf.tell() == 4                              # no tag byte consumed
    decoded = ApiVersionsResponse.decode(ours, version=version, header=True)
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == \
        [(x["api_key"], x["min_version"], x["max_version"]) for x in body["api_keys"]]
    assert BY_NAME["ApiVersions"].key == API_VERSIONS


def test_a_shared_body_is_framed_once_per_version_and_each_answer_has_its_own_correlation_id():
    # an answer shared by many requests (a heartbeat's error code) keeps its frame but for the
    # correlation id: every frame must equal one encoded from scratch
    shared = frames.SharedBody(throttle_time_ms=0, error_code=27)
    for version in (0, 4, 0, 4):                  # (v4: a flexible header, a tag byte after the id)
        for corr in (7, -1, 2**31 - 1):
            plain = frames.encode_response(12, version, corr, {"throttle_time_ms": 0, "error_code": 27})
            assert frames.encode_response(12, version, corr, shared) == plain
            assert frames.decode_response(12, version, plain[4:]) == (corr, {"throttle_time_ms": 0, "error_code": 27}
                                                                       if version else {"error_code": 27})
    assert set(shared.framed) == {(12, 0), (12, 4)}
    unframed = frames.encode_response(12, 4, 9, shared, framed=False)
    assert unframed == frames.encode_response(12, 4, 9, {"throttle_time_ms": 0, "error_code": 27})[4:]
