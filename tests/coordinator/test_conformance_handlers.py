"""The API handlers: service-level validation order, version shims, API-layer topic checks.

Every request goes through the real codec (encode at the version, decode) and every
response is encoded at the request's version and decoded again, so what is asserted is
what a client would read.
"""
from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.handlers import (
    delete_groups, describe_groups, heartbeat, join_group, leave_group, list_groups, offset_commit, offset_delete,
    offset_fetch, sync_group,
)
from groupcoord.protocol.messages import APIS
from group_harness import topic_uuid

GROUP = "group-id"


class Wire:
    """Calls a handler as the service would, through the codecs."""

    def __init__(self, svc, ctx_for):
        self.svc = svc
        self.ctx_for = ctx_for

    def __call__(self, module, version, body, *, node_id=0, client_id="client", client_host="/127.0.0.1"):
        api = APIS[module.API_KEY]
        decoded = api.request.decode(api.request.encode(body, version), version)
        out = []

        def respond(resp):
            out.append(api.response.decode(api.response.encode(resp, version), version))

        module.handle(self.ctx_for(self.svc, module.API_KEY, version, node_id=node_id, client_id=client_id,
                                   client_host=client_host), version, decoded, respond)
        return out


@pytest.fixture
def wire(svc, ctx):
    return Wire(svc, ctx)


def join_body(member_id="", session=10000, rebalance=30000, group_id=GROUP, instance_id=None, sub_bytes=None,
              protocol_type="consumer"):
    return {"group_id": group_id, "session_timeout_ms": session, "rebalance_timeout_ms": rebalance,
            "member_id": member_id, "group_instance_id": instance_id, "protocol_type": protocol_type,
            "protocols": [{"name": "range", "metadata": sub_bytes or b"\x00\x00\x00\x00\x00\x01\x00\x03foo\xff\xff\xff\xff"}],
            "reason": None}


# ---------------------------------------------------------------- JoinGroup
@pytest.mark.parametrize("version", range(0, 10))
def test_join_group_every_version_roundtrips(h, wire, version):
    out = wire(join_group, version, join_body(), client_id="app")
    if version >= 4:
        res, = out
        assert res["error_code"] == 79 and res["member_id"] == "app-1"
        assert res["protocol_name"] == ("" if version < 7 else None)
        out = wire(join_group, version, join_body(member_id="app-1"), client_id="app")
    assert out == []                                   # parked
    h.advance(0)
    m = h.group().members["app-1"]
    assert m.client_id == "app" and m.client_host == "/127.0.0.1"
    # v0: the rebalance timeout is the session timeout
    assert m.rebalance_timeout_ms == (10000 if version == 0 else 30000)


def test_join_group_response_fields_v7_vs_v6(h, wire, svc):
    for version in (6, 7):
        res, = wire(join_group, version, join_body(member_id="unknown"))
        assert res["error_code"] == 25
        assert res["protocol_name"] == ("" if version == 6 else None)
        if version >= 7:
            assert res["protocol_type"] is None


def test_join_group_validation_order(h, wire, svc):
    svc.owner = lambda g: 1                            # not the coordinator
    res, = wire(join_group, 5, join_body(group_id="", session=1, member_id="m"))
    assert (res["error_code"], res["member_id"]) == (24, "m")          # group id first
    res, = wire(join_group, 5, join_body(session=1, member_id="m"))
    assert (res["error_code"], res["member_id"]) == (26, "m")          # then the session timeout
    res, = wire(join_group, 5, join_body(member_id="m"))
    assert (res["error_code"], res["member_id"], res["generation_id"]) == (16, "", -1)
    assert h.group() is None


def test_join_group_v9_static_leader_skip_assignment_through_handler(h, wire):
    out = wire(join_group, 9, join_body(instance_id="i1"))
    assert out == []
    h.advance(0)
    leader = h.group().static_members["i1"]
    wire(sync_group, 5, {"group_id": GROUP, "generation_id": 1, "member_id": leader, "group_instance_id": "i1",
                         "protocol_type": "consumer", "protocol_name": "range",
                         "assignments": [{"member_id": leader, "assignment": b"A"}]})
    res, = wire(join_group, 9, join_body(instance_id="i1"))
    assert res["skip_assignment"] is True and res["leader"] == res["member_id"] == "i1-2"
    res, = wire(join_group, 8, join_body(instance_id="i1"))
    assert "skip_assignment" not in res               # v8 has no such field
    assert res["leader"] == "i1-2" and res["member_id"] == "i1-3"


# ---------------------------------------------------------------- SyncGroup
def test_sync_group_v5_requires_protocol_type_and_name(h, wire, svc):
    svc.owner = lambda g: 1
    body = {"group_id": "", "generation_id": 1, "member_id": "m", "group_instance_id": None,
            "protocol_type": None, "protocol_name": "range", "assignments": []}
    res, = wire(sync_group, 5, body)
    assert res == {"throttle_time_ms": 0, "error_code": 23, "protocol_type": None, "protocol_name": None,
                   "assignment": b""}
    res, = wire(sync_group, 4, body)                   # v4 has no such fields: group id checked
    assert res["error_code"] == 24
    res, = wire(sync_group, 5, {**body, "group_id": GROUP, "protocol_type": "consumer"})
    assert res["error_code"] == 16


@pytest.mark.parametrize("version", range(0, 6))
def test_sync_group_every_version(h, wire, version):
    wire(join_group, 3, join_body())
    h.advance(0)
    body = {"group_id": GROUP, "generation_id": 1, "member_id": "client-1", "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": "client-1", "assignment": b"xyz"}]}
    res, = wire(sync_group, version, body)
    assert res["error_code"] == 0 and res["assignment"] == b"xyz"
    if version >= 5:
        assert (res["protocol_type"], res["protocol_name"]) == ("consumer", "range")


# ---------------------------------------------------------------- Heartbeat / LeaveGroup
def test_heartbeat_handler(h, wire, svc):
    leader, = h.stable_group(1)
    body = {"group_id": GROUP, "generation_id": 1, "member_id": leader, "group_instance_id": None}
    assert wire(heartbeat, 4, body) == [{"throttle_time_ms": 0, "error_code": 0}]
    assert wire(heartbeat, 0, {**body, "group_id": ""})[0]["error_code"] == 24
    svc.owner = lambda g: 1
    assert wire(heartbeat, 3, body)[0]["error_code"] == 16


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leave_group_single_member_shim(h, wire, version):
    a, b = h.stable_group(2)
    expected = [{"throttle_time_ms": 0, "error_code": 25}] if version else [{"error_code": 25}]
    assert wire(leave_group, version, {"group_id": GROUP, "member_id": "ghost"}) == expected
    res, = wire(leave_group, version, {"group_id": GROUP, "member_id": b})
    assert res["error_code"] == 0 and h.state() == "PreparingRebalance"
    assert wire(leave_group, version, {"group_id": "nope", "member_id": "x"})[0]["error_code"] == 25


def test_leave_group_batch_v5(h, wire, svc):
    a, b = h.stable_group(2)
    res, = wire(leave_group, 5, {"group_id": GROUP, "members": [
        {"member_id": a, "group_instance_id": None, "reason": "shutdown"},
        {"member_id": "ghost", "group_instance_id": None, "reason": None}]})
    assert res == {"throttle_time_ms": 0, "error_code": 0, "members": [
        {"member_id": a, "group_instance_id": None, "error_code": 0},
        {"member_id": "ghost", "group_instance_id": None, "error_code": 25}]}
    assert h.events_of("member.left")[-1]["reason"] == "shutdown"
    svc.owner = lambda g: 1
    res, = wire(leave_group, 3, {"group_id": GROUP, "members": [{"member_id": b, "group_instance_id": None}]})
    assert res == {"throttle_time_ms": 0, "error_code": 16, "members": []}
    res, = wire(leave_group, 1, {"group_id": "", "member_id": b})
    assert res == {"throttle_time_ms": 0, "error_code": 24}


# ---------------------------------------------------------------- OffsetCommit
def commit_body(topics, generation=-1, member_id="", group_id=GROUP, retention=-1, instance_id=None):
    return {"group_id": group_id, "generation_id_or_member_epoch": generation, "member_id": member_id,
            "group_instance_id": instance_id, "retention_time_ms": retention,
            "topics": [{"name": t, "partitions": [{"partition_index": p, "committed_offset": o,
                                                   "committed_leader_epoch": 4, "commit_timestamp": -1,
                                                   "committed_metadata": "md"} for p, o in parts]}
                       for t, parts in topics]}


def test_offset_commit_unknown_topics_and_partitions_are_merged_first(h, wire):
    res, = wire(offset_commit, 8, commit_body([("foo", [(0, 1), (3, 2), (1, 3)]), ("nope", [(0, 1)]),
                                               ("bar", [(1, 5)])]))
    assert res["topics"] == [
        {"name": "foo", "partitions": [{"partition_index": 3, "error_code": 3}, {"partition_index": 0, "error_code": 0},
                                       {"partition_index": 1, "error_code": 0}]},
        {"name": "nope", "partitions": [{"partition_index": 0, "error_code": 3}]},
        {"name": "bar", "partitions": [{"partition_index": 1, "error_code": 0}]}]
    assert h.offsets() == {("foo", 0): 1, ("foo", 1): 3, ("bar", 1): 5}
    stored = h.gc.offsets.of(GROUP)["foo"][0]
    assert (stored.leader_epoch, stored.metadata) == (4, "md")


def test_offset_commit_all_unknown_skips_group_validation(h, wire, svc):
    svc.owner = lambda g: 1
    res, = wire(offset_commit, 8, commit_body([("nope", [(0, 1)])], generation=5, member_id="m"))
    assert res["topics"] == [{"name": "nope", "partitions": [{"partition_index": 0, "error_code": 3}]}]


def test_offset_commit_group_error_on_every_coordinator_partition(h, wire, svc):
    res, = wire(offset_commit, 8, commit_body([("foo", [(0, 1), (9, 1)]), ("bar", [(0, 1)])], generation=3,
                                              member_id="m"))
    assert res["topics"] == [
        {"name": "foo", "partitions": [{"partition_index": 9, "error_code": 3}, {"partition_index": 0, "error_code": 22}]},
        {"name": "bar", "partitions": [{"partition_index": 0, "error_code": 22}]}]
    res, = wire(offset_commit, 9, commit_body([("foo", [(0, 1)])], generation=3, member_id="m"))
    assert res["topics"][0]["partitions"][0]["error_code"] == 69
    svc.owner = lambda g: 1
    res, = wire(offset_commit, 9, commit_body([("foo", [(0, 1)])], generation=3, member_id="m"))
    assert res["topics"][0]["partitions"][0]["error_code"] == 16


@pytest.mark.parametrize("version", range(0, 10))
def test_offset_commit_every_version(h, wire, version):
    res, = wire(offset_commit, version, commit_body([("foo", [(0, 11)])], retention=5000))
    assert res["topics"][0]["partitions"][0]["error_code"] == 0
    stored = h.gc.offsets.of(GROUP)["foo"][0]
    assert stored.expire_timestamp == (5000 if 2 <= version <= 4 else None)
    assert stored.leader_epoch == (4 if version >= 6 else -1)


def test_offset_commit_v0_ignores_member_fields_and_uses_simple_semantics(h, wire):
    h.stable_group(1)
    res, = wire(offset_commit, 0, commit_body([("foo", [(0, 1)])]))
    assert res["topics"][0]["partitions"][0]["error_code"] == 25      # no member, group is active


# ---------------------------------------------------------------- OffsetFetch
def test_offset_fetch_versions(h, wire, svc):
    h.commit(offsets={("foo", 0): 9})
    for version in range(1, 8):
        res, = wire(offset_fetch, version, {"group_id": GROUP, "topics": [{"name": "foo", "partition_indexes": [0, 1]}],
                                             "require_stable": True})
        parts = res["topics"][0]["partitions"]
        assert [p["committed_offset"] for p in parts] == [9, -1]
        assert res.get("error_code", 0) == 0
    res, = wire(offset_fetch, 2, {"group_id": GROUP, "topics": None})
    assert res["topics"][0]["partitions"][0]["committed_offset"] == 9


def test_offset_fetch_group_errors_by_version(h, wire, svc):
    svc.owner = lambda g: 1
    body = {"group_id": GROUP, "topics": [{"name": "foo", "partition_indexes": [0]}]}
    res, = wire(offset_fetch, 3, body)
    assert (res["error_code"], res["topics"]) == (16, [])
    # v0-1: the group error is copied into the partitions of the group response, which Kafka
    # leaves empty for a failed group
    res, = wire(offset_fetch, 1, body)
    assert res["topics"] == []


def test_offset_fetch_v1_error_copied_into_partitions(h, wire, svc, monkeypatch):
    def failing(respond, request):
        respond({"group_id": request.group_id, "error_code": 14, "topics": [
            {"name": "foo", "partitions": [{"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 1,
                                            "metadata": "x", "error_code": 0}]}]})
    monkeypatch.setattr(h.gc, "offset_fetch", failing)
    res, = wire(offset_fetch, 1, {"group_id": GROUP, "topics": [{"name": "foo", "partition_indexes": [0]}]})
    assert res["topics"][0]["partitions"] == [{"partition_index": 0, "committed_offset": -1, "metadata": "",
                                               "error_code": 14}]


def test_offset_fetch_v8_multiple_groups(h, wire, svc):
    h.commit("a", offsets={("foo", 0): 1})
    svc.owner = lambda g: 1 if g == "c" else 0
    res, = wire(offset_fetch, 8, {"groups": [
        {"group_id": "a", "topics": None},
        {"group_id": "b", "topics": [{"name": "foo", "partition_indexes": [0]}]},
        {"group_id": "c", "topics": None}], "require_stable": False})
    a, b, c = res["groups"]
    assert a["topics"][0]["partitions"][0]["committed_offset"] == 1 and a["error_code"] == 0
    assert b["topics"][0]["partitions"][0]["committed_offset"] == -1 and b["error_code"] == 0
    assert (c["error_code"], c["topics"]) == (16, [])


# ---------------------------------------------------------------- v10: topics by id (Kafka 4.2+)
def test_offset_commit_v10_names_topics_by_id(h, wire):
    # KafkaApis.handleOffsetCommitRequest with useTopicIds: an unknown id is UNKNOWN_TOPIC_ID for
    # each of its partitions, before the topic checks; the response names topics by id
    ghost = uuid.uuid4()
    body = {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"topic_id": topic_uuid("foo"), "partitions": [
                            {"partition_index": p, "committed_offset": 7, "committed_leader_epoch": -1,
                             "committed_metadata": ""} for p in (0, 5)]},
                       {"topic_id": ghost, "partitions": [
                            {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                             "committed_metadata": ""}]}]}
    res, = wire(offset_commit, 10, body)
    assert res["topics"] == [
        {"topic_id": topic_uuid("foo"), "partitions": [{"partition_index": 5, "error_code": 3},
                                                       {"partition_index": 0, "error_code": 0}]},
        {"topic_id": ghost, "partitions": [{"partition_index": 0, "error_code": 100}]}]
    assert h.offsets() == {("foo", 0): 7}
    # a group error goes on every partition that reached the coordinator, by id too (the group is
    # the simple one the first commit made: UNKNOWN_MEMBER_ID)
    res, = wire(offset_commit, 10, {**body, "generation_id_or_member_epoch": 3, "member_id": "m",
                                     "topics": body["topics"][:1]})
    assert res["topics"] == [{"topic_id": topic_uuid("foo"), "partitions": [
        {"partition_index": 5, "error_code": 3}, {"partition_index": 0, "error_code": 25}]}]


def test_offset_fetch_v10_names_topics_by_id(h, wire, svc):
    h.commit(offsets={("foo", 0): 9, ("gone", 0): 4})
    ghost = uuid.uuid4()
    res, = wire(offset_fetch, 10, {"groups": [
        {"group_id": GROUP, "member_id": None, "member_epoch": -1, "topics": [
            {"topic_id": topic_uuid("foo"), "partition_indexes": [0, 1]},
            {"topic_id": ghost, "partition_indexes": [2]}]}], "require_stable": False})
    group, = res["groups"]
    assert [(t["topic_id"], [(p["partition_index"], p["committed_offset"], p["error_code"]) for p in t["partitions"]])
            for t in group["topics"]] == [(topic_uuid("foo"), [(0, 9, 0), (1, -1, 0)]), (ghost, [(2, -1, 100)])]
    # all topics: "gone" has offsets but no topic any more, so no id to name it by
    res, = wire(offset_fetch, 10, {"groups": [{"group_id": GROUP, "member_id": None, "member_epoch": -1,
                                               "topics": None}], "require_stable": False})
    assert [t["topic_id"] for t in res["groups"][0]["topics"]] == [topic_uuid("foo")]
    res, = wire(offset_fetch, 9, {"groups": [{"group_id": GROUP, "topics": None}], "require_stable": False})
    assert sorted(t["name"] for t in res["groups"][0]["topics"]) == ["foo", "gone"]


# ---------------------------------------------------------------- OffsetDelete
def test_offset_delete_handler_merge(h, wire, svc):
    leader, = h.stable_group(1)
    h.commit(member_id=leader, generation=1, offsets={("foo", 0): 1, ("bar", 0): 2})
    body = {"group_id": GROUP, "topics": [
        {"name": "foo", "partitions": [{"partition_index": 0}]},
        {"name": "bar", "partitions": [{"partition_index": 0}, {"partition_index": 5}]},
        {"name": "nope", "partitions": [{"partition_index": 0}]}]}
    res, = wire(offset_delete, 0, body)
    assert res == {"error_code": 0, "throttle_time_ms": 0, "topics": [
        {"name": "bar", "partitions": [{"partition_index": 5, "error_code": 3}, {"partition_index": 0, "error_code": 0}]},
        {"name": "nope", "partitions": [{"partition_index": 0, "error_code": 3}]},
        {"name": "foo", "partitions": [{"partition_index": 0, "error_code": 86}]}]}
    assert h.offsets() == {("foo", 0): 1}
    # a top-level error replaces the API-layer partition errors
    res, = wire(offset_delete, 0, {**body, "group_id": "missing"})
    assert res == {"error_code": 69, "throttle_time_ms": 0, "topics": []}
    res, = wire(offset_delete, 0, {**body, "group_id": ""})
    assert res["error_code"] == 24
    svc.owner = lambda g: 1
    assert wire(offset_delete, 0, body)[0]["error_code"] == 16


# ---------------------------------------------------------------- DescribeGroups / ListGroups / DeleteGroups
def test_describe_groups_handler(h, wire, svc):
    h.stable_group(1)
    svc.owner = lambda g: 1 if g == "elsewhere" else 0
    for version in range(0, 7):
        res, = wire(describe_groups, version, {"groups": [GROUP, "nope", "elsewhere"],
                                               "include_authorized_operations": True})
        mine, nope, elsewhere = res["groups"]
        assert mine["group_state"] == "Stable" and mine["protocol_data"] == "range"
        if version >= 3:
            assert mine["authorized_operations"] == 3400
            assert nope["authorized_operations"] == (-2147483648 if version >= 6 else 3400)
        if version >= 6:
            assert (nope["error_code"], nope["error_message"]) == (69, "Group nope not found.")
        else:
            assert (nope["error_code"], nope["group_state"]) == (0, "Dead")
        assert elsewhere["error_code"] == 16
    res, = wire(describe_groups, 5, {"groups": [GROUP], "include_authorized_operations": False})
    assert res["groups"][0]["authorized_operations"] == -2147483648


def test_list_groups_handler(h, wire, svc):
    h.stable_group(1)
    h.commit("mine-simple", offsets={("foo", 0): 1})
    h.commit("theirs", offsets={("foo", 0): 1})
    svc.owner = lambda g: 1 if g == "theirs" else 0
    res, = wire(list_groups, 0, {})
    assert res == {"error_code": 0, "groups": [{"group_id": GROUP, "protocol_type": "consumer"},
                                               {"group_id": "mine-simple", "protocol_type": ""}]}
    res, = wire(list_groups, 4, {"states_filter": ["stable"]})
    assert res["groups"] == [{"group_id": GROUP, "protocol_type": "consumer", "group_state": "Stable"}]
    res, = wire(list_groups, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert res["groups"] == []
    res, = wire(list_groups, 5, {"states_filter": ["EMPTY"], "types_filter": ["CLASSIC"]})
    assert res["groups"] == [{"group_id": "mine-simple", "protocol_type": "", "group_state": "Empty",
                              "group_type": "classic"}]


def test_delete_groups_handler(h, wire, svc):
    h.stable_group(1, group_id="busy")
    h.commit("idle", offsets={("foo", 0): 1})
    svc.owner = lambda g: 1 if g == "elsewhere" else 0
    res, = wire(delete_groups, 2, {"groups_names": ["idle", "busy", "idle", "nope", "elsewhere"]})
    assert res == {"throttle_time_ms": 0, "results": [
        {"group_id": "idle", "error_code": 0}, {"group_id": "busy", "error_code": 68},
        {"group_id": "nope", "error_code": 69}, {"group_id": "elsewhere", "error_code": 16}]}


# ---------------------------------------------------------------- a whole session through the handlers
@pytest.mark.parametrize("join_v,sync_v,hb_v,leave_v", [(0, 0, 0, 0), (3, 2, 2, 1), (5, 3, 3, 3), (7, 4, 4, 4),
                                                        (9, 5, 4, 5)])
def test_two_member_session_through_handlers(h, wire, join_v, sync_v, hb_v, leave_v):
    ids = []
    parked = []
    for client in ("c1", "c2"):
        out = wire(join_group, join_v, join_body(), client_id=client)
        if join_v >= 4:
            mid = out[0]["member_id"]
            out = wire(join_group, join_v, join_body(member_id=mid), client_id=client)
        assert out == []
        parked.append(client)
    h.advance(0)
    g = h.group()
    ids = list(g.members)
    leader = g.leader_id
    sync = lambda mid, assignments: wire(sync_group, sync_v, {  # noqa: E731
        "group_id": GROUP, "generation_id": 1, "member_id": mid, "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range", "assignments": assignments})
    follower = [m for m in ids if m != leader][0]
    assert sync(follower, []) == []
    res, = sync(leader, [{"member_id": m, "assignment": m.encode()} for m in ids])
    assert res["assignment"] == leader.encode()
    hb = {"group_id": GROUP, "generation_id": 1, "member_id": follower, "group_instance_id": None}
    assert wire(heartbeat, hb_v, hb)[0]["error_code"] == 0
    if leave_v >= 3:
        body = {"group_id": GROUP, "members": [{"member_id": follower, "group_instance_id": None, "reason": None}]}
    else:
        body = {"group_id": GROUP, "member_id": follower}
    assert wire(leave_group, leave_v, body)[0]["error_code"] == 0
    assert wire(heartbeat, hb_v, {**hb, "member_id": leader})[0]["error_code"] == 27
