"""The groups endpoints on consumer groups of the new protocol (KIP-848), driven step by step with
ConsumerGroupHeartbeat requests on the wire: a member that must give a partition up, a member
waiting for it, their epochs, reconciliation states and target assignments as the API shows them,
and deleting the group once it is empty."""
from __future__ import annotations

import pytest

from consumer_wire import WireMember, connect, topic_ids
from groupcoord.coordinator.admin.cluster_api import kafka_uuid
from groupcoord.coordinator.admin.errors import validate

GROUP = "kip848"


@pytest.fixture
async def wire(admin_gc):
    conn = await connect(admin_gc)
    yield conn
    conn.close()


def resolved(doc: dict, schema):
    """The schema with its $refs into the document's components replaced by what they name."""
    if isinstance(schema, list):
        return [resolved(doc, s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return resolved(doc, doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    return {k: resolved(doc, v) for k, v in schema.items()}


async def conforms(http, body, schema_name: str) -> None:
    status, doc = await http.get("/openapi.json")
    validate(body, resolved(doc, doc["components"]["schemas"][schema_name]), schema_name)


def partitions(member_json: dict, key: str) -> list[tuple]:
    return [(tp["topic"], tp["partition"]) for tp in member_json[key]["partitions"]]


async def test_consumer_group_epochs_reconciliation_and_targets(admin_gc, admin_http, wire, admin_events):
    ids = topic_ids(admin_gc)
    a = WireMember(wire, GROUP, "member-a", ["orders"], ids)
    await a.heartbeat()
    assert a.owns("orders") == [0, 1, 2]

    status, groups = await admin_http.get("/api/groups")
    assert status == 200
    [summary] = [g for g in groups if g["group_id"] == GROUP]
    assert summary == {"group_id": GROUP, "type": "consumer", "state": "Stable", "protocol_type": "consumer",
                       "protocol": "uniform", "generation": 2, "leader": None, "members": 1,
                       "coordinator": {"partition": admin_gc.service.cluster.coordinator_partition(GROUP), "node": 0},
                       "group_epoch": 2, "assignment_epoch": 2}     # (a new group starts at 1: Kafka 4.3)
    await conforms(admin_http, summary, "GroupSummary")

    # b joins: epoch 3; b's target partition is still a's, so b waits for it (unreleased)
    b = WireMember(wire, GROUP, "member-b", ["orders"], ids)
    await b.heartbeat()
    assert b.epoch == 3 and b.owns("orders") == []
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert status == 200
    assert (detail["type"], detail["state"], detail["group_epoch"], detail["assignment_epoch"]) == \
        ("consumer", "Reconciling", 3, 3)
    members = {m["member_id"]: m for m in detail["members"]}
    ma, mb = members["member-a"], members["member-b"]
    [moving] = partitions(mb, "target_assignment")
    keep = [tp for tp in [("orders", p) for p in range(3)] if tp != moving]
    assert (ma["member_epoch"], ma["previous_member_epoch"], ma["state"]) == (2, 0, "stable")
    assert partitions(ma, "assignment") == [("orders", 0), ("orders", 1), ("orders", 2)]
    assert partitions(ma, "target_assignment") == keep and partitions(ma, "pending_revocation") == []
    assert (mb["member_epoch"], mb["state"], partitions(mb, "assignment")) == (3, "unreleased_partitions", [])
    assert mb["client_id"] == "kip848-client" and mb["subscribed_topic_names"] == ["orders"]
    assert mb["target_assignment"]["partitions"][0]["topic_id"] == kafka_uuid(ids["orders"])

    # a heartbeats: it must revoke the partition first (unrevoked), at its old epoch
    await a.heartbeat()
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    ma = {m["member_id"]: m for m in detail["members"]}["member-a"]
    assert (ma["member_epoch"], ma["state"]) == (2, "unrevoked_partitions")
    await conforms(admin_http, detail, "GroupDetail")
    assert partitions(ma, "pending_revocation") == [moving] and partitions(ma, "assignment") == keep

    # a lets it go, b takes it: Stable at epoch 3
    await a.heartbeat(owned={"orders": [p for _, p in keep]})
    await b.heartbeat()
    assert b.owns("orders") == [moving[1]]
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert detail["state"] == "Stable"
    for m in detail["members"]:
        assert (m["member_epoch"], m["state"]) == (3, "stable")
        assert partitions(m, "assignment") == partitions(m, "target_assignment")
        assert partitions(m, "pending_revocation") == []

    # no deletion while it has members; a member removed as an admin LeaveGroup does (Kafka's
    # removeMembersFromConsumerGroup on a consumer group), then the group can go
    status, body = await admin_http.delete(f"/api/groups/{GROUP}")
    assert (status, body["error"]) == (409, "non_empty_group")
    assert "Reconciling" not in body["message"] and "Stable" in body["message"]
    status, body = await admin_http.delete(f"/api/groups/{GROUP}/members/nobody")
    assert (status, body["error"]) == (404, "unknown_member_id")
    status, body = await admin_http.delete(f"/api/groups/{GROUP}/members/member-a")
    assert status == 200 and body["members"] == 1
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert [m["member_id"] for m in detail["members"]] == ["member-b"] and detail["group_epoch"] == 4

    # the other leaves: Empty, its offsets reset through the API, then deleted with them
    await b.heartbeat(epoch=-1)
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert (detail["state"], detail["members"], detail["group_epoch"]) == ("Empty", [], 5)
    status, reset = await admin_http.post(f"/api/groups/{GROUP}/offsets/reset", {"topic": "orders", "to": "latest"})
    assert status == 200 and len(reset["offsets"]) == 3
    status, detail = await admin_http.get(f"/api/groups/{GROUP}")
    assert sorted((o["topic"], o["partition"]) for o in detail["offsets"]) == [("orders", p) for p in range(3)]
    status, body = await admin_http.delete(f"/api/groups/{GROUP}")
    assert status == 200 and body == {"group_id": GROUP, "offsets_deleted": 3}
    assert [e["reason"] for e in admin_events if e["event"] == "group.deleted"] == ["delete_groups"]
    assert admin_gc.service.group_coordinator.consumer_group(GROUP) is None
    status, body = await admin_http.get(f"/api/groups/{GROUP}")
    assert (status, body["error"]) == (404, "group_id_not_found")
    status, groups = await admin_http.get("/api/groups")
    assert GROUP not in [g["group_id"] for g in groups]


async def test_classic_and_consumer_groups_are_listed_together_by_id(admin_gc, admin_http, wire, admin_consumers):
    from admin_helpers import make_consumer, stable

    await WireMember(wire, GROUP, "m", ["audit"], topic_ids(admin_gc)).heartbeat()
    classic = make_consumer(admin_gc, "orders", group="a-classic", opened=admin_consumers)
    await classic.start()
    await stable(admin_gc, [classic], "a-classic")
    status, groups = await admin_http.get("/api/groups")
    assert [(g["group_id"], g["type"]) for g in groups] == [("a-classic", "classic"), (GROUP, "consumer")]
    assert "group_epoch" not in groups[0] and groups[1]["group_epoch"] == 2
