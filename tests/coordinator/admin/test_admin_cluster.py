"""Nodes and topics over HTTP; effects checked through Kafka's APIs (kafka-python's admin client)."""
from __future__ import annotations

import asyncio
import base64

from groupcoord.client.assignors.base import TopicPartition as TP

from admin_helpers import make_consumer, produce, stable


def described(gc, topic: str) -> dict:
    """The topic through Metadata (kafka-python's admin client)."""
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=gc.bootstrap_servers, request_timeout_ms=10000)
    try:
        return admin.describe_topics([topic])[0]
    finally:
        admin.close()


async def test_nodes(admin_gc, admin_http):
    status, nodes = await admin_http.get("/api/nodes")
    host, port = admin_gc.bootstrap_servers.split(":")
    assert status == 200
    assert nodes == [{"node_id": 0, "host": host, "port": int(port), "rack": None, "up": True,
                      "offsets_partitions": list(range(50))}]


async def test_list_and_describe_topics(admin_gc, admin_http):
    await produce(admin_gc, "orders", [(1, "x"), (1, "y"), (2, "z")])
    status, topics = await admin_http.get("/api/topics")
    assert status == 200 and [t["name"] for t in topics] == ["audit", "orders"]
    kafka = await asyncio.to_thread(described, admin_gc, "orders")
    status, orders = await admin_http.get("/api/topics/orders")
    assert status == 200
    assert orders["partitions"] == len(kafka["partitions"]) == 3
    assert orders["replication_factor"] == 1 and orders["internal"] is False
    # Kafka prints topic ids as URL-safe base64 of the 16 bytes
    topic_id = admin_gc.service.cluster.topics["orders"].topic_id
    assert base64.urlsafe_b64decode(orders["topic_id"] + "==") == topic_id.bytes
    assert {k: orders[k] for k in ("name", "topic_id", "partitions", "replication_factor", "internal")} \
        in topics
    assert [(p["partition"], p["leader"], p["log_start_offset"], p["log_end_offset"])
            for p in orders["partition_info"]] == [(0, 0, 0, 0), (1, 0, 0, 2), (2, 0, 0, 1)]
    status, body = await admin_http.get("/api/topics/nope")
    assert (status, body["error"]) == (404, "unknown_topic_or_partition")


async def test_create_topic_and_add_partitions(admin_gc, admin_http):
    status, body = await admin_http.post("/api/topics", {"name": "events", "partitions": 2,
                                                         "configs": {"cleanup.policy": "compact"}})
    assert status == 201 and body["partitions"] == 2 and body["configs"] == {"cleanup.policy": "compact"}
    kafka = await asyncio.to_thread(described, admin_gc, "events")
    assert len(kafka["partitions"]) == 2 and kafka["error_code"] == 0
    status, body = await admin_http.post("/api/topics", {"name": "defaults"})
    assert status == 201 and body["partitions"] == admin_gc.service.config["num.partitions"]

    status, body = await admin_http.post("/api/topics/events/partitions", {"count": 5})
    assert status == 200 and body["partitions"] == 5 and len(body["partition_info"]) == 5
    kafka = await asyncio.to_thread(described, admin_gc, "events")
    assert sorted(p["partition_index"] for p in kafka["partitions"]) == [0, 1, 2, 3, 4]

    for path, request, status, error in [
        ("/api/topics", {"name": "events"}, 409, "topic_already_exists"),
        ("/api/topics", {"name": "bad name!"}, 400, "invalid_topic_exception"),
        ("/api/topics", {"name": ".."}, 400, "invalid_topic_exception"),
        ("/api/topics", {"name": "x", "replication_factor": 2}, 400, "invalid_replication_factor"),
        ("/api/topics", {"name": "x", "partitions": 0}, 400, "invalid_request"),
        ("/api/topics", {"name": "x", "partitions": "3"}, 400, "invalid_request"),
        ("/api/topics", {"name": "x", "partitions": True}, 400, "invalid_request"),
        ("/api/topics", {"name": "x", "partitions": 10**9}, 400, "invalid_request"),
        ("/api/topics", {"partitions": 1}, 400, "invalid_request"),
        ("/api/topics", {"name": "x", "color": "red"}, 400, "invalid_request"),
        ("/api/topics", None, 400, "invalid_request"),
        ("/api/topics/events/partitions", {"count": 5}, 400, "invalid_partitions"),
        ("/api/topics/events/partitions", {"count": 3}, 400, "invalid_partitions"),
        ("/api/topics/events/partitions", {}, 400, "invalid_request"),
        ("/api/topics/nope/partitions", {"count": 3}, 404, "unknown_topic_or_partition"),
    ]:
        got, body = await admin_http.post(path, request)
        assert (got, body["error"]) == (status, error), (path, request, body)
    assert "x" not in admin_gc.service.cluster.topics


async def test_delete_topic_drops_every_groups_offsets(admin_gc, admin_http, admin_consumers, admin_events):
    gc = admin_gc
    # subscribed to orders only: a consumer's Metadata for a deleted topic would auto-create it again
    c = make_consumer(gc, "orders", group="both", opened=admin_consumers)
    await c.start()
    await stable(gc, [c], "both")
    await c.commit({TP("orders", 0): 0, TP("audit", 0): 0, TP("audit", 1): 0})
    status, body = await admin_http.delete("/api/topics/audit")
    assert status == 200 and body["name"] == "audit" and body["offsets_deleted"] == 2
    assert [(e["group"], e["partitions"]) for e in admin_events if e["event"] == "offsets.deleted"] == [("both", 2)]
    status, detail = await admin_http.get("/api/groups/both")
    assert [(o["topic"], o["partition"]) for o in detail["offsets"]] == [("orders", 0)]
    status, body = await admin_http.get("/api/topics/audit")
    assert status == 404
    kafka = await asyncio.to_thread(described, gc, "audit")
    assert kafka["error_code"] == 3                           # UNKNOWN_TOPIC_OR_PARTITION
    status, body = await admin_http.delete("/api/topics/audit")
    assert (status, body["error"]) == (404, "unknown_topic_or_partition")


async def test_added_partitions_reach_the_group(admin_gc, admin_http, admin_consumers):
    """As after CreatePartitions: the consumers' metadata shows the new partitions, the leader
    rejoins and the group's assignment covers them."""
    gc = admin_gc
    c = make_consumer(gc, "orders", group="growing", opened=admin_consumers, metadata_max_age_ms=300)
    await c.start()
    await stable(gc, [c], "growing")
    status, _ = await admin_http.post("/api/topics/orders/partitions", {"count": 5})
    assert status == 200
    await stable(gc, [c], "growing")
    status, detail = await admin_http.get("/api/groups/growing")
    [member] = detail["members"]
    assert sorted(p["partition"] for p in member["assignment"]["partitions"]) == [0, 1, 2, 3, 4]
