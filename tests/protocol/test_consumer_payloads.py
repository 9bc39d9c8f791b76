"""Consumer-protocol payloads: golden vectors of the reference spec (§10) and kafka-python."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from groupcoord.protocol import consumer
from groupcoord.protocol.errors import DecodeError

SUB_V3 = bytes.fromhex(
    "0003" "00000002" "0003626172" "0003666f6f" "ffffffff"
    "00000001" "0003666f6f" "00000001" "00000000" "00000005" "ffff")
ASSIGN_V3 = bytes.fromhex("0003" "00000001" "0003666f6f" "00000002" "00000000" "00000001" "ffffffff")
STICKY_V1 = bytes.fromhex("00000001" "0003666f6f" "00000002" "00000000" "00000001" "00000004")


def test_subscription_v3_golden():
    obj = {"topics": ["bar", "foo"], "user_data": None,
           "owned_partitions": [{"topic": "foo", "partitions": [0]}],
           "generation_id": 5, "rack_id": None}
    assert consumer.encode_subscription(obj, 3) == SUB_V3
    assert consumer.decode_subscription(SUB_V3) == {**obj, "version": 3}


def test_assignment_v3_golden():
    obj = {"assigned_partitions": [{"topic": "foo", "partitions": [0, 1]}], "user_data": None}
    assert consumer.encode_assignment(obj, 3) == ASSIGN_V3
    assert consumer.decode_assignment(ASSIGN_V3) == {**obj, "version": 3}


def test_sticky_user_data_golden():
    prev = [{"topic": "foo", "partitions": [0, 1]}]
    assert consumer.encode_sticky_user_data(prev, 4) == STICKY_V1
    assert consumer.decode_sticky_user_data(STICKY_V1) == {"previous_assignment": prev, "generation": 4}
    # the layout without a generation
    v0 = STICKY_V1[:-4]
    assert consumer.encode_sticky_user_data(prev, None) == v0
    assert consumer.decode_sticky_user_data(v0) == {"previous_assignment": prev, "generation": None}
    # trailing bytes are ignored, as Kafka's reader does
    assert consumer.decode_sticky_user_data(STICKY_V1 + b"\x00\x01\x02")["generation"] == 4
    # garbage and absence: an empty previous assignment
    for junk in (None, b"", b"\x00\x01", b"\xff\xff\xff\xff\x00"):
        assert consumer.decode_sticky_user_data(junk) == {"previous_assignment": [], "generation": None}


def test_newer_version_is_read_with_newest_known_and_trailing_bytes_ignored():
    future = b"\x00\x07" + SUB_V3[2:] + b"\x01\x02\x03 future fields"
    obj = consumer.decode_subscription(future)
    assert obj["version"] == 7
    assert obj["topics"] == ["bar", "foo"] and obj["generation_id"] == 5
    # a known version must be exact
    with pytest.raises(DecodeError) as e:
        consumer.decode_subscription(SUB_V3 + b"\x00")
    assert e.value.api == "ConsumerProtocolSubscription" and e.value.version == 3
    future_assignment = b"\x00\x09" + ASSIGN_V3[2:] + b"xyz"
    assert consumer.decode_assignment(future_assignment)["assigned_partitions"][0]["partitions"] == [0, 1]


def test_older_versions_have_fewer_fields():
    obj = {"topics": ["t"], "user_data": b"u"}
    data = consumer.encode_subscription(obj, 0)
    assert data == bytes.fromhex("0000" "00000001" "000174" "00000001" "75")
    assert consumer.decode_subscription(data) == {**obj, "version": 0}
    with pytest.raises(DecodeError):
        consumer.decode_subscription(b"\xff\xff" + data[2:])  # negative version


def test_subscribed_topics_reads_only_the_v0_prefix():
    assert consumer.subscribed_topics(SUB_V3) == ["bar", "foo"]
    assert consumer.subscribed_topics(b"\x00\x63" + SUB_V3[2:] + b"junk") == ["bar", "foo"]
    assert consumer.subscribed_topics(b"\x00") is None
    assert consumer.subscribed_topics(b"\x00\x00\x00\x00\x00\x05\x00") is None


def test_partition_grouping_helpers():
    pairs = [("b", 2), ("a", 1), ("b", 0)]
    grouped = consumer.group_partitions(pairs)
    assert grouped == [{"topic": "a", "partitions": [1]}, {"topic": "b", "partitions": [0, 2]}]
    assert sorted(consumer.flatten_partitions(grouped)) == sorted(pairs)


topics = st.lists(st.text(min_size=1, max_size=8), max_size=4, unique=True)
parts = st.lists(st.fixed_dictionaries({"topic": st.text(max_size=6),
                                        "partitions": st.lists(st.integers(0, 2**31 - 1), max_size=5)}),
                 max_size=3)


@settings(max_examples=150, deadline=None)
@given(version=st.integers(0, 3), topics=topics, user_data=st.none() | st.binary(max_size=20),
       owned=parts, generation=st.integers(-1, 2**31 - 1), rack=st.none() | st.text(max_size=5))
def test_subscription_against_kafka_python(version, topics, user_data, owned, generation, rack):
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as Theirs
    obj = {"topics": topics, "user_data": user_data, "owned_partitions": owned,
           "generation_id": generation, "rack_id": rack}
    ours = consumer.encode_subscription(obj, version)
    back = consumer.decode_subscription(ours)
    assert back["topics"] == topics and back["user_data"] == user_data
    theirs = Theirs.decode(ours)
    assert list(theirs.topics) == topics
    assert (None if theirs.user_data is None else bytes(theirs.user_data)) == user_data
    if version >= 1:
        assert [(p.topic, list(p.partitions)) for p in theirs.owned_partitions] == \
               [(p["topic"], p["partitions"]) for p in owned]
    if version >= 2:
        assert theirs.generation_id == generation
    if version >= 3:
        assert theirs.rack_id == rack
    assert bytes(theirs.encode()) == ours
