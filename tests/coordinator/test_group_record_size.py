"""A group metadata record over message.max.bytes is refused, as Kafka refuses it.

Kafka appends a group's metadata (members, their subscriptions and assignments) to the offsets
topic, whose max.message.bytes is the broker's message.max.bytes (1,048,588 by default). A larger
record fails the append (RecordTooLargeException): the parked SyncGroups get UNKNOWN_SERVER_ERROR
(appendGroupMetadataErrorToResponseError maps MESSAGE_TOO_LARGE), nothing is written and the group
rebalances; a static member's replacement is reverted. Measured before: one JoinGroup with 65 MB
of metadata wrote a record over the log's frame limit, and the next start dropped the commits of
another group that followed it in the same log.
"""
from __future__ import annotations

import asyncio
import struct

from hypothesis import given
from hypothesis import strategies as st_

from groupcoord.coordinator import storage as st
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.storage import LogStore
from groupcoord.protocol import frames
from groupcoord.protocol.errors import ErrorCode

from group_harness import GROUP, Harness
from test_conformance_static import static_stable
from test_conformance_sync_heartbeat import completing

LIMIT = 1000


_text = st_.text(max_size=12)
_maybe = st_.none() | _text
_member = st_.builds(st.MemberMetadata, _text, _maybe, _text, _text, st_.integers(-1, 2**31 - 1),
                     st_.integers(-1, 2**31 - 1), st_.binary(max_size=40), st_.binary(max_size=40))


@given(st_.builds(st.GroupMetadataKey, _text),
       st_.builds(st.GroupMetadataValue, _maybe, st_.integers(-1, 2**31 - 1), _maybe, _maybe,
                  st_.integers(-1, 2**62), st_.lists(_member, max_size=5).map(tuple)))
def test_payload_size_is_the_encoded_length(key, value):
    assert st.payload_size(key, value) == len(st.encode_payload(key, value))


def test_a_sync_whose_record_is_too_large_fails_every_member_and_rebalances():
    h = Harness(message_max_bytes=LIMIT)
    leader, follower = completing(h)
    f = h.sync(member_id=follower, generation=1)
    lead = h.sync(member_id=leader, generation=1, assignments=[(leader, b"L" * LIMIT), (follower, b"F")])
    for call in (f, lead):
        assert call.result == {"throttle_time_ms": 0, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                               "protocol_type": None, "protocol_name": None, "assignment": b""}
    assert h.state() == "PreparingRebalance"
    assert h.events_of("rebalance.started")[-1]["reason"] == "group_record_too_large"
    assert not h.events_of("group.sync_completed")
    # the members rejoin and a leader's assignment that fits is stored
    calls = [h.join(member_id=m) for m in (leader, follower)]
    h.advance(0)
    assert [c.result["generation_id"] for c in calls] == [2, 2]
    h.sync(member_id=follower, generation=2)
    assert h.sync(member_id=leader, generation=2, assignments=[(leader, b"L")]).result["error_code"] == 0
    assert h.state() == "Stable"


def test_a_static_replacement_whose_record_is_too_large_is_reverted():
    h = Harness(message_max_bytes=LIMIT)
    ids = static_stable(h)
    before = dict(h.group().members)
    big = [("range", b"\x00" * LIMIT)]
    res = h.join(instance_id="follower", protocols=big).result
    assert (res["error_code"], res["member_id"]) == (ErrorCode.UNKNOWN_SERVER_ERROR, "")
    assert (res["generation_id"], res["leader"], res["protocol_name"]) == (1, ids["leader"], "range")
    g = h.group()
    assert set(g.members) == set(before) and g.static_members["follower"] == ids["follower"]
    assert g.members[ids["follower"]].protocols != big and g.state == "Stable"
    assert g.leader_id == ids["leader"]
    assert h.timers.is_scheduled(("hb", GROUP, ids["follower"]))
    assert not h.events_of("member.replaced")
    # the member, fenced by nothing, goes on heartbeating with its old id
    assert h.heartbeat(member_id=ids["follower"]) == 0


def _join_body(member_id: str, metadata: bytes) -> dict:
    return {"group_id": "huge", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": metadata}]}


async def _call(reader, writer, corr: int, api_key: int, version: int, body: dict) -> dict:
    writer.write(frames.encode_request(api_key, version, corr, body, "huge-client"))
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    got, resp = frames.decode_response(api_key, version, await reader.readexactly(size))
    assert got == corr
    return resp


def test_nothing_is_written_for_a_refused_group_and_other_commits_survive(tmp_path):
    # one offsets partition: the refused group and the committing one share a log
    config = {"offsets.topic.num.partitions": 1, "message.max.bytes": 100_000}

    async def scenario():
        async with running(topics={"t": 1}, config=config, data_dir=tmp_path) as gc:
            reader, writer = await asyncio.open_connection(*gc.bootstrap_servers.split(":"))
            first = await _call(reader, writer, 1, 11, 5, _join_body("", b"\x00" * 200_000))
            joined = await _call(reader, writer, 2, 11, 5, _join_body(first["member_id"], b"\x00" * 200_000))
            member = joined["member_id"]
            sync = await _call(reader, writer, 3, 14, 3, {
                "group_id": "huge", "generation_id": joined["generation_id"], "member_id": member,
                "group_instance_id": None, "assignments": [{"member_id": member, "assignment": b"a"}]})
            assert sync["error_code"] == ErrorCode.UNKNOWN_SERVER_ERROR
            commit = await _call(reader, writer, 4, 8, 8, {
                "group_id": "other", "generation_id_or_member_epoch": -1, "member_id": "",
                "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                    {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                     "committed_metadata": None}]}]})
            assert commit["topics"][0]["partitions"][0]["error_code"] == 0
            writer.close()
    asyncio.run(scenario())
    records = LogStore(str(tmp_path)).load(0)
    assert not [k for k, v in records if isinstance(k, st.GroupMetadataKey) and k.group == "huge" and v and v.members]
    offsets = {(k.group, k.topic, k.partition): v.offset for k, v in records if isinstance(k, st.OffsetCommitKey)}
    assert offsets == {("other", "t", 0): 7}
