"""The consumer group protocol's messages (KIP-848): ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69), v0-1, and the member-epoch fields of the older APIs.

kafka-python declares neither API, so the golden bytes here are written out by hand from
Kafka's encoding rules (every version of both is flexible: compact strings and arrays are
an unsigned varint length + 1, 0 for null; every struct ends with a tagged-field section, 00
when empty; a nullable struct field is an int8 marker, -1 null or 1 then the struct). Every
layout is commented field by field. Round trips run on all three codec paths (compiled,
construct-compiled, interpreted); test_consumer_heartbeat_client.py decodes a real client's
heartbeat.
"""
from __future__ import annotations

import struct
import uuid

import pytest

import fuzzcases as fc
from groupcoord.protocol import frames
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import DecodeError
from groupcoord.protocol.messages import APIS, BY_NAME

CGH, CGD = int(ApiKey.CONSUMER_GROUP_HEARTBEAT), int(ApiKey.CONSUMER_GROUP_DESCRIBE)
TOPIC_ID = uuid.UUID("5c0ffee0-0000-4000-8000-00000000abcd")
MEMBER_ID = "mK3w1RnkQ0qXk8cK4n7TAw"       # 22 characters: a base64 UUID, as librdkafka makes them


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def cstr(s: str) -> bytes:
    """A compact string: uvarint length + 1 (all lengths here are below 127), then UTF-8."""
    b = s.encode()
    assert len(b) < 127
    return bytes([len(b) + 1]) + b


def on_every_path(spec_name: str, version: int, obj: dict, wire: bytes) -> None:
    api = BY_NAME[spec_name.removesuffix("Request").removesuffix("Response")]
    spec = api.request if spec_name.endswith("Request") else api.response
    codec = spec.codec(version)
    for name, enc in (("compiled", codec.encode), ("construct-compiled", codec.compiled.build),
                      ("interpreted", codec.struct.build)):
        got = enc(obj)
        assert got == wire, f"{name} encoded\n {got.hex()}\nexpected\n {wire.hex()}"
    for name, dec in (("compiled", codec.decode), ("construct-compiled", codec.compiled.parse),
                      ("interpreted", codec.struct.parse)):
        assert dec(wire) == obj, f"{name} decoded {dec(wire)!r}"


# --------------------------------------------------------------------------
# declarations
# --------------------------------------------------------------------------

def test_keys_names_and_versions():
    assert APIS[CGH].name == "ConsumerGroupHeartbeat" and APIS[CGD].name == "ConsumerGroupDescribe"
    for key in (CGH, CGD):
        api = APIS[key]
        assert api.request.valid == api.response.valid == (0, 1)
        for v in (0, 1):
            assert api.request.is_flexible(v) and api.response.is_flexible(v)
            assert frames.request_header_version(key, v) == 2
            assert frames.response_header_version(key, v) == 1


def _keys(spec, v):
    s = spec.struct(v)
    return [f.key for f in s.fields]


def test_heartbeat_fields_per_version():
    req = APIS[CGH].request
    v0 = ["group_id", "member_id", "member_epoch", "instance_id", "rack_id", "rebalance_timeout_ms",
          "subscribed_topic_names", "server_assignor", "topic_partitions"]
    assert _keys(req, 0) == v0
    assert _keys(req, 1) == v0[:7] + ["subscribed_topic_regex"] + v0[7:]
    for v in (0, 1):
        assert _keys(APIS[CGH].response, v) == ["throttle_time_ms", "error_code", "error_message", "member_id",
                                                "member_epoch", "heartbeat_interval_ms", "assignment"]
    # Kafka's defaults: null for the "unchanged" fields, -1 for the rebalance timeout
    defaults = {f.key: f.default for f in req.struct(1).fields}
    assert {k: defaults[k] for k in ("instance_id", "rack_id", "rebalance_timeout_ms", "subscribed_topic_names",
                                     "subscribed_topic_regex", "server_assignor", "topic_partitions")} == {
        "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
        "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None}
    assert {f.key: f.default for f in APIS[CGH].response.struct(1).fields}["assignment"] is None


def test_describe_fields_per_version():
    resp = APIS[CGD].response
    for v in (0, 1):
        assert _keys(APIS[CGD].request, v) == ["group_ids", "include_authorized_operations"]
        group = resp.struct(v).fields[1].type.elem
        assert [f.key for f in group.fields] == [
            "error_code", "error_message", "group_id", "group_state", "group_epoch", "assignment_epoch",
            "assignor_name", "members", "authorized_operations"]
        member = group.fields[7].type.elem
        expected = ["member_id", "instance_id", "rack_id", "member_epoch", "client_id", "client_host",
                    "subscribed_topic_names", "subscribed_topic_regex", "assignment", "target_assignment"]
        assert [f.key for f in member.fields] == expected + (["member_type"] if v == 1 else [])
        assert group.fields[8].default == -2147483648
    member1 = resp.struct(1).fields[1].type.elem.fields[7].type.elem
    assert member1.fields[-1].default == -1     # MemberType: unknown


def test_member_epoch_fields_of_the_older_apis():
    """KIP-848's changes to APIs that existed before it, as Kafka's schemas declare them."""
    # ListGroups v5: TypesFilter in the request, GroupType per listed group
    lg = APIS[int(ApiKey.LIST_GROUPS)]
    assert _keys(lg.request, 5) == ["states_filter", "types_filter"]
    assert _keys(lg.request, 4) == ["states_filter"]
    assert [f.key for f in lg.response.struct(5).fields[2].type.elem.fields] == [
        "group_id", "protocol_type", "group_state", "group_type"]
    # OffsetCommit v9: GenerationIdOrMemberEpoch carries the member epoch (same layout as v8)
    oc = APIS[int(ApiKey.OFFSET_COMMIT)]
    assert _keys(oc.request, 9) == _keys(oc.request, 8) == [
        "group_id", "generation_id_or_member_epoch", "member_id", "group_instance_id", "topics"]
    # OffsetFetch v9: MemberId (nullable, default null) and MemberEpoch (default -1) per group
    of = APIS[int(ApiKey.OFFSET_FETCH)]
    group9 = of.request.struct(9).fields[0].type.elem
    assert [(f.key, f.default) for f in group9.fields] == [
        ("group_id", ""), ("member_id", None), ("member_epoch", -1), ("topics", [])]
    assert group9.fields[1].type.nullable
    assert [f.key for f in of.request.struct(8).fields[0].type.elem.fields] == ["group_id", "topics"]
    # librdkafka's OffsetFetch v9 (one group, MemberId null, MemberEpoch -1, all topics, RequireStable)
    wire = (b"\x02" + cstr("grp") + b"\x00" + i32(-1) + b"\x00" + b"\x00"   # groups: id, null member, -1, null topics, tags
            + b"\x01" + b"\x00")                                          # require_stable, tags
    obj = {"groups": [{"group_id": "grp", "member_id": None, "member_epoch": -1, "topics": None}],
           "require_stable": True}
    on_every_path("OffsetFetchRequest", 9, obj, wire)


# --------------------------------------------------------------------------
# golden bytes
# --------------------------------------------------------------------------

HEARTBEAT_V1 = {
    "group_id": "grp", "member_id": MEMBER_ID, "member_epoch": 0, "instance_id": None, "rack_id": None,
    "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["orders"], "subscribed_topic_regex": "",
    "server_assignor": "uniform", "topic_partitions": [],
}
HEARTBEAT_V1_WIRE = (
    b"\x04grp"                          # GroupId: compact string, length 3 + 1
    + b"\x17" + MEMBER_ID.encode()      # MemberId: 22 + 1 = 0x17
    + b"\x00\x00\x00\x00"               # MemberEpoch: int32 0 (join)
    + b"\x00"                           # InstanceId: null
    + b"\x00"                           # RackId: null
    + b"\x00\x04\x93\xe0"               # RebalanceTimeoutMs: 300000
    + b"\x02" + b"\x07orders"           # SubscribedTopicNames: 1 + 1 elements, "orders" (6 + 1)
    + b"\x01"                           # SubscribedTopicRegex (v1+): "" (0 + 1), not null
    + b"\x08uniform"                    # ServerAssignor: "uniform" (7 + 1)
    + b"\x01"                           # TopicPartitions: empty (0 + 1), not null
    + b"\x00"                           # tagged fields: none
)


def test_heartbeat_v1_request_golden_bytes():
    on_every_path("ConsumerGroupHeartbeatRequest", 1, HEARTBEAT_V1, HEARTBEAT_V1_WIRE)
    assert len(HEARTBEAT_V1_WIRE) == 4 + 23 + 4 + 1 + 1 + 4 + 8 + 1 + 8 + 1 + 1


def test_heartbeat_v0_request_is_v1_without_the_regex():
    v0 = {k: v for k, v in HEARTBEAT_V1.items() if k != "subscribed_topic_regex"}
    regex_at = HEARTBEAT_V1_WIRE.index(b"\x02\x07orders") + 8
    on_every_path("ConsumerGroupHeartbeatRequest", 0, v0,
                  HEARTBEAT_V1_WIRE[:regex_at] + HEARTBEAT_V1_WIRE[regex_at + 1:])


def test_heartbeat_request_with_owned_partitions_and_nulls():
    """A regular heartbeat: unchanged fields null/-1, the owned partitions acknowledged."""
    obj = {"group_id": "grp", "member_id": MEMBER_ID, "member_epoch": 7, "instance_id": "i-1", "rack_id": None,
           "rebalance_timeout_ms": -1, "subscribed_topic_names": None, "subscribed_topic_regex": None,
           "server_assignor": None, "topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 2]}]}
    wire = (b"\x04grp" + b"\x17" + MEMBER_ID.encode() + i32(7)
            + b"\x04i-1"                # InstanceId "i-1"
            + b"\x00"                   # RackId null
            + i32(-1)                   # RebalanceTimeoutMs -1: unchanged
            + b"\x00"                   # SubscribedTopicNames null: unchanged
            + b"\x00"                   # SubscribedTopicRegex null: unchanged
            + b"\x00"                   # ServerAssignor null
            + b"\x02"                   # TopicPartitions: one element
            + TOPIC_ID.bytes            #   TopicId: 16 raw bytes
            + b"\x03" + i32(0) + i32(2)  #   Partitions: 2 + 1 elements, int32 each
            + b"\x00"                   #   the element's tagged fields
            + b"\x00")                  # tagged fields
    on_every_path("ConsumerGroupHeartbeatRequest", 1, obj, wire)


RESPONSE_HEAD = (
    i32(0)                              # ThrottleTimeMs
    + i16(0)                            # ErrorCode: NONE
    + b"\x00"                           # ErrorMessage: null
    + b"\x17" + MEMBER_ID.encode()      # MemberId: nullable compact string, 22 + 1
    + i32(5)                            # MemberEpoch
    + i32(5000)                         # HeartbeatIntervalMs
)
RESPONSE_WITH_ASSIGNMENT = RESPONSE_HEAD + (
    b"\x01"                             # Assignment: int8 marker 1, the struct follows
    + b"\x02"                           #   TopicPartitions: 1 + 1 elements
    + TOPIC_ID.bytes                    #     TopicId
    + b"\x04" + i32(0) + i32(1) + i32(2)  # Partitions: 3 + 1 elements
    + b"\x00"                           #     TopicPartitions element's tagged fields
    + b"\x00"                           #   Assignment's own tagged fields
    + b"\x00"                           # the response's tagged fields
)
RESPONSE_WITHOUT_ASSIGNMENT = RESPONSE_HEAD + (
    b"\xff"                             # Assignment: int8 marker -1, null: nothing follows
    + b"\x00"                           # tagged fields
)
NULL_MARKER_AT = len(RESPONSE_HEAD)     # 4 + 2 + 1 + 23 + 4 + 4 = 38


def _response(assignment) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": MEMBER_ID,
            "member_epoch": 5, "heartbeat_interval_ms": 5000, "assignment": assignment}


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_response_golden_bytes(version):
    assignment = {"topic_partitions": [{"topic_id": TOPIC_ID, "partitions": [0, 1, 2]}]}
    on_every_path("ConsumerGroupHeartbeatResponse", version, _response(assignment), RESPONSE_WITH_ASSIGNMENT)
    on_every_path("ConsumerGroupHeartbeatResponse", version, _response(None), RESPONSE_WITHOUT_ASSIGNMENT)
    assert NULL_MARKER_AT == 38
    # an empty assignment is not a null one: marker 1, an empty array, the struct's tags
    on_every_path("ConsumerGroupHeartbeatResponse", version, _response({"topic_partitions": []}),
                  RESPONSE_HEAD + b"\x01" + b"\x01" + b"\x00" + b"\x00")


def test_heartbeat_response_error_without_assignment():
    obj = {"throttle_time_ms": 0, "error_code": 110, "error_message": "fenced", "member_id": None,
           "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    wire = i32(0) + i16(110) + b"\x07fenced" + b"\x00" + i32(0) + i32(0) + b"\xff" + b"\x00"
    on_every_path("ConsumerGroupHeartbeatResponse", 1, obj, wire)


def test_heartbeat_response_frame():
    data = frames.encode_response(CGH, 1, 42, _response(None), framed=False)
    assert data == i32(42) + b"\x00" + RESPONSE_WITHOUT_ASSIGNMENT     # response header v1: its tags
    assert frames.decode_response(CGH, 1, data) == (42, _response(None))


@pytest.mark.parametrize("marker", [0x00, 0x02, 0x7F, 0x80, 0xFE])
@pytest.mark.parametrize("version", [0, 1])
def test_malformed_assignment_marker(version, marker):
    for good in (RESPONSE_WITH_ASSIGNMENT, RESPONSE_WITHOUT_ASSIGNMENT):
        bad = good[:NULL_MARKER_AT] + bytes([marker]) + good[NULL_MARKER_AT + 1:]
        codec = APIS[CGH].response.codec(version)
        with pytest.raises(DecodeError) as info:
            codec.decode(bad)
        e = info.value
        assert type(e) is DecodeError
        assert (e.api, e.version, e.offset) == ("ConsumerGroupHeartbeatResponse", version, NULL_MARKER_AT)
        signed = marker - 256 if marker > 127 else marker
        assert str(e) == (f"cannot decode ConsumerGroupHeartbeatResponse v{version} at offset 38: "
                          f"invalid presence marker {signed} of a nullable struct (-1: null, 1: present)")
        # the interpreted construct path refuses it too
        with pytest.raises(DecodeError) as info:
            codec.struct.parse(bad)
        assert (info.value.api, info.value.version) == ("ConsumerGroupHeartbeatResponse", version)
        # in a whole frame, the offset counts the response header (correlation id, tags) too
        with pytest.raises(DecodeError) as info:
            frames.decode_response(CGH, version, i32(9) + b"\x00" + bad)
        assert (info.value.api, info.value.offset) == ("ConsumerGroupHeartbeatResponse", NULL_MARKER_AT + 5)


def test_truncated_at_the_marker():
    with pytest.raises(DecodeError) as info:
        APIS[CGH].response.codec(1).decode(RESPONSE_HEAD)
    assert info.value.offset == NULL_MARKER_AT and "truncated" in info.value.reason
    with pytest.raises(DecodeError):
        APIS[CGH].response.codec(1).decode(RESPONSE_WITH_ASSIGNMENT[:NULL_MARKER_AT + 1])


def test_describe_golden_bytes():
    request = {"group_ids": ["grp"], "include_authorized_operations": True}
    for v in (0, 1):
        on_every_path("ConsumerGroupDescribeRequest", v, request, b"\x02" + b"\x04grp" + b"\x01" + b"\x00")
    assignment = {"topic_partitions": [{"topic_id": TOPIC_ID, "topic_name": "orders", "partitions": [3]}]}
    member = {"member_id": MEMBER_ID, "instance_id": None, "rack_id": "r1", "member_epoch": 5,
              "client_id": "c", "client_host": "/127.0.0.1", "subscribed_topic_names": ["orders"],
              "subscribed_topic_regex": None, "assignment": assignment,
              "target_assignment": {"topic_partitions": []}, "member_type": 1}
    group = {"error_code": 0, "error_message": None, "group_id": "grp", "group_state": "Stable",
             "group_epoch": 5, "assignment_epoch": 5, "assignor_name": "uniform", "members": [member],
             "authorized_operations": -2147483648}
    assignment_wire = (b"\x02" + TOPIC_ID.bytes + b"\x07orders" + b"\x02" + i32(3) + b"\x00"  # one topic, its tags
                       + b"\x00")                                                          # Assignment's tags
    member_wire = (b"\x17" + MEMBER_ID.encode() + b"\x00" + b"\x03r1" + i32(5) + b"\x02c" + b"\x0b/127.0.0.1"
                   + b"\x02\x07orders" + b"\x00"      # SubscribedTopicNames, SubscribedTopicRegex null
                   + assignment_wire
                   + b"\x01" + b"\x00")               # TargetAssignment: no topics, its tags
    group_wire_head = (i16(0) + b"\x00" + b"\x04grp" + b"\x07Stable" + i32(5) + i32(5) + b"\x08uniform"
                       + b"\x02")                     # one member
    group_wire_tail = i32(-2147483648) + b"\x00"      # AuthorizedOperations, the group's tags
    for v, member_type in ((0, b""), (1, b"\x01")):   # MemberType (v1+): int8 1, a consumer member
        obj = {"throttle_time_ms": 0, "groups": [dict(group, members=[
            member if v == 1 else {k: x for k, x in member.items() if k != "member_type"}])]}
        wire = (i32(0) + b"\x02" + group_wire_head + member_wire + member_type + b"\x00"  # the member's tags
                + group_wire_tail + b"\x00")
        on_every_path("ConsumerGroupDescribeResponse", v, obj, wire)
    # writing v0 drops MemberType (Kafka: it is ignorable)
    obj1 = {"throttle_time_ms": 0, "groups": [dict(group, members=[member])]}
    assert APIS[CGD].response.codec(0).decode(APIS[CGD].response.codec(0).encode(obj1))["groups"][0]["members"][0] \
        == {k: x for k, x in member.items() if k != "member_type"}


@pytest.mark.parametrize("key", [CGH, CGD])
def test_round_trips_of_every_version(key):
    """Drawn messages (fuzzcases' strategies, unknown tags included) round-trip on every path,
    and as whole frames."""
    api = APIS[key]
    for v in api.versions:
        for spec in (api.request, api.response):
            codec = spec.codec(v)
            messages = fc.valid_messages(spec, v, n=8)
            assert len(messages) >= 4
            for obj in messages:
                data = codec.encode(obj)
                assert codec.decode(data) == obj
                assert codec.compiled.parse(data) == obj
                assert codec.struct.parse(data) == obj
                assert codec.struct.build(obj) == data
        if key == CGH:
            nulls = [m["assignment"] is None for m in fc.valid_messages(api.response, v, n=8)]
            assert any(nulls) and not all(nulls)        # both shapes drawn
        for body in fc.valid_messages(api.request, v):
            req = frames.decode_request(frames.encode_request(key, v, 3, body, client_id="rdkafka")[4:])
            assert (req.api_key, req.api_version, req.body) == (key, v, body)
        for body in fc.valid_messages(api.response, v):
            assert frames.decode_response(key, v, frames.encode_response(key, v, 3, body)[4:]) == (3, body)
