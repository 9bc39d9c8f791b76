"""A share group's share-partitions through the admin API: in the group's detail and at
``/api/groups/{id}/share-partitions`` (SPSO and SPEO, records by state, delivery counts, who holds what
until when, the in-flight batches, the share sessions), conforming to the OpenAPI document; and the share
faults over HTTP (locks expired now, a member fenced, acknowledgements dropped). The records are acquired
and acknowledged with ShareFetch and ShareAcknowledge requests handed to the running service."""
from __future__ import annotations

import aiohttp
import pytest
from admin_helpers import Http
from share_client import ACCEPT, RELEASE, ShareClient, acquired
from test_admin_consumer_groups import conforms

from groupcoord.coordinator.admin.cluster_api import kafka_uuid
from groupcoord.coordinator.admin.events_api import EventHistory
from groupcoord.coordinator.embed import running
from groupcoord.coordinator.group.offsets import OffsetCommitRequest

GROUP = "queue"


@pytest.fixture
async def admin_gc():
    async with running(http=True, topics={"orders": 3}) as gc:
        gc.service.alter_group_configs(GROUP, {"share.auto.offset.reset": "earliest"})
        yield gc


@pytest.fixture
async def admin_http(admin_gc):
    async with aiohttp.ClientSession() as session:
        yield Http(session, admin_gc.admin_url)


def records_in_flight(gc) -> ShareClient:
    """Members a and b; orders-0 has 10 records: a acquired them, accepted 0-3 and released 4-5, which b
    acquired then (their second delivery). a holds 6-9, b 4-5."""
    c = ShareClient(gc.service, group=GROUP, topic="orders")
    c.join("a")
    c.join("b")
    c.produce(10)
    assert acquired(c.fetch("a", 0)) == [(0, 9, 1)]
    assert c.acknowledge("a", 1, {0: [(0, 3, ACCEPT), (4, 5, RELEASE)]})["error_code"] == 0
    b = ShareClient(gc.service, group=GROUP, topic="orders", conn=2)
    assert acquired(b.fetch("b", 0)) == [(4, 5, 2)]
    return c


def _runs(batches: list[dict], now: int) -> list[tuple]:
    """The batches as (first, last, state, delivery count, member), adjacent ones that differ only in
    their lock's deadline joined: records acquired one by one (after a partial acknowledgement) each get
    a lock of their own, as Kafka's, whose deadlines may fall a ms apart on the wall clock."""
    out: list[tuple] = []
    for b in batches:
        assert b["lock_deadline_ms"] is None or now < b["lock_deadline_ms"] <= now + 30_000
        run = (b["first_offset"], b["last_offset"], b["state"], b["delivery_count"], b["member_id"])
        if out and out[-1][1] + 1 == run[0] and out[-1][2:] == run[2:]:
            out[-1] = (out[-1][0], *run[1:])
        else:
            out.append(run)
    return out


async def test_a_share_groups_partitions_and_sessions(admin_gc, admin_http):
    records_in_flight(admin_gc)
    now = admin_gc.service.clock()
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert status == 200
    await conforms(admin_http, detail, "GroupDetail")
    orders = kafka_uuid(admin_gc.service.topic_id("orders"))
    zero, one, two = detail["share_partitions"]
    assert {k: zero[k] for k in ("topic", "topic_id", "partition", "loaded", "leader", "start_offset", "end_offset",
                                 "log_start_offset", "log_end_offset", "lag", "in_flight", "records")} == {
        "topic": "orders", "topic_id": orders, "partition": 0, "loaded": True, "leader": 0, "start_offset": 4,
        "end_offset": 9, "log_start_offset": 0, "log_end_offset": 10, "lag": 6, "in_flight": 6,
        "records": {"available": 0, "acquired": 6, "acknowledged": 0, "archived": 0}}
    assert zero["delivery_counts"] == [
        {"delivery_count": 1, "available": 0, "acquired": 4, "acknowledged": 0, "archived": 0},
        {"delivery_count": 2, "available": 0, "acquired": 2, "acknowledged": 0, "archived": 0}]
    holders = {h["member_id"]: h for h in zero["holders"]}
    assert {m: h["records"] for m, h in holders.items()} == {"a": 4, "b": 2}
    assert all(now < h["lock_deadline_ms"] <= now + 30_000 for h in holders.values())
    assert _runs(zero["batches"], now) == [(4, 5, "acquired", 2, "b"), (6, 9, "acquired", 1, "a")]
    assert (zero["counters"]["acquired"], zero["counters"]["acknowledged"], zero["counters"]["released"]) == (12, 4, 2)
    # no ShareFetch reached 1 and 2: their persisted state, the start offset not chosen yet
    for p, sp in ((1, one), (2, two)):
        assert (sp["partition"], sp["loaded"], sp["leader"], sp["start_offset"], sp["lag"], sp["counters"]) == (
            p, False, None, -1, None, None)
    assert detail["delivery_count_limit"] == 5
    assert [(s["member_id"], s["node"], s["epoch"], [tp["partition"] for tp in s["partitions"]])
            for s in detail["share_sessions"]] == [("a", 0, 2, [0]), ("b", 0, 1, [0])]

    status, body = await admin_http.get(f"/api/groups/{GROUP}/share-partitions")
    assert status == 200
    await conforms(admin_http, body, "SharePartitions")
    assert (body["group_id"], body["delivery_count_limit"], body["record_lock_duration_ms"]) == (GROUP, 5, 30_000)
    assert body["share_partitions"] == detail["share_partitions"] and body["share_sessions"] == detail["share_sessions"]

    # not a share group, no group: 404
    out: list = []
    admin_gc.service.group_coordinator.offset_commit(out.append, OffsetCommitRequest("simple", [
        {"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                           "committed_metadata": ""}]}], generation_id=-1, member_id=""))
    status, error = await admin_http.get("/api/groups/simple/share-partitions")
    assert (status, error["error"], error["message"]) == (404, "group_id_not_found", "Group simple is not a share group.")
    assert (await admin_http.get("/api/groups/nope/share-partitions"))[0] == 404
    status, detail = await admin_http.get("/api/groups/simple")
    assert "share_partitions" not in detail


async def test_expiring_locks_and_fencing_over_http(admin_gc, admin_http):
    records_in_flight(admin_gc)
    events: list[dict] = []
    admin_gc.service.bus.subscribe(events.append)
    status, body = await admin_http.post(f"/api/groups/{GROUP}/share-locks/expire", {"member": "a"})
    assert status == 200
    await conforms(admin_http, body, "ShareLocksExpired")
    assert body == {"group_id": GROUP, "member": "a", "records": 4,
                    "partitions": [{"topic": "orders", "partition": 0, "records": 4}]}
    [expired] = [e for e in events if e["event"] == "share.lock_expired"]
    assert (expired["records"], expired["cause"]) == (4, "fault")
    status, body = await admin_http.get(f"/api/groups/{GROUP}/share-partitions")
    assert body["share_partitions"][0]["records"] == {"available": 4, "acquired": 2, "acknowledged": 0, "archived": 0}
    assert [h["member_id"] for h in body["share_partitions"][0]["holders"]] == ["b"]
    # every lock of the partition, then nothing left to expire
    status, body = await admin_http.post(f"/api/groups/{GROUP}/share-locks/expire", {"topic": "orders", "partition": 0})
    assert (status, body["records"]) == (200, 2)
    assert (await admin_http.post(f"/api/groups/{GROUP}/share-locks/expire"))[1]["records"] == 0
    for payload, code in (({"partition": 0}, 400), ({"topic": "nope"}, 404), ({"member": 1}, 400),
                          ({"extra": True}, 400)):
        assert (await admin_http.post(f"/api/groups/{GROUP}/share-locks/expire", payload))[0] == code, payload
    assert (await admin_http.post("/api/groups/nope/share-locks/expire"))[0] == 404

    status, body = await admin_http.post(f"/api/groups/{GROUP}/members/b/fence")
    assert status == 200
    await conforms(admin_http, body, "MemberFenced")
    assert body == {"group_id": GROUP, "member_id": "b", "type": "share", "fault": None}
    assert set(admin_gc.service.group_coordinator.get(GROUP).members) == {"a"}
    assert [(e["member"], e["reason"]) for e in events if e["event"] == "share.member_fenced"] == [
        ("b", "session_timeout")]
    assert (await admin_http.post(f"/api/groups/{GROUP}/members/b/fence"))[0] == 404


async def test_a_dropped_acknowledgements_fault_over_http(admin_gc, admin_http):
    status, fault = await admin_http.post("/api/faults", {"api": "ShareAcknowledge", "group": GROUP,
                                                          "drop_acknowledgements": True, "count": 1})
    assert status == 201
    await conforms(admin_http, fault, "Fault")
    assert (fault["api"], fault["group"], fault["drop_acknowledgements"], fault["remaining"]) == (
        "ShareAcknowledge", GROUP, True, 1)
    c = ShareClient(admin_gc.service, group=GROUP, topic="orders")
    c.join("a")
    c.produce(3)
    c.fetch("a", 0)
    resp = c.acknowledge("a", 1, {0: [(0, 2, ACCEPT)]})
    assert resp["responses"][0]["partitions"][0]["error_code"] == 0
    status, body = await admin_http.get(f"/api/groups/{GROUP}/share-partitions")
    assert body["share_partitions"][0]["records"]["acquired"] == 3                    # not acknowledged
    status, fault = await admin_http.get(f"/api/faults/{fault['id']}")
    assert (fault["fired"], fault["active"]) == (1, False)
    status, error = await admin_http.post("/api/faults", {"api": "Heartbeat", "drop_acknowledgements": True})
    assert status == 400 and "ShareFetch and ShareAcknowledge" in error["message"]


def test_the_rebalance_history_keeps_share_group_events_not_share_records():
    for kind, kept in (("share.member_joined", True), ("share.group_epoch_bumped", True), ("share.member_fenced", True),
                       ("share.records_acquired", False), ("share.records_acknowledged", False),
                       ("share.lock_expired", False), ("share.session_opened", False)):
        assert EventHistory.keeps({"event": kind}) is kept, kind
