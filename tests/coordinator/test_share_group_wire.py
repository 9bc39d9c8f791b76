"""Share groups over TCP: ApiVersions lists ShareGroupHeartbeat and ShareGroupDescribe at v1 (not in
Kafka 3.9); a member joins, gets its partitions and leaves with raw requests; and confluent-kafka's
ShareConsumer (librdkafka's share consumer) joins a share group, gets its share of the partitions,
and is seen in ShareGroupDescribe. (ShareFetch is not served yet: the consumers get no records, and
librdkafka's ShareFetch closes its connection to the partition leader, not the coordinator's.)"""
from __future__ import annotations

import socket
import struct
import time

from test_server import Client

from groupcoord.coordinator.embed import ThreadedCoordinator, running
from groupcoord.protocol import frames

HEARTBEAT, DESCRIBE, API_VERSIONS = 76, 77, 18


async def test_api_versions_lists_the_share_group_apis():
    for release, listed in (("4.3", True), ("4.1", True), ("3.9", False)):
        async with running(config={"groupcoord.kafka.version": release, "group.share.enable": True}) as gc:
            c = await Client.connect(gc.bootstrap_servers)
            keys = {k["api_key"]: (k["min_version"], k["max_version"]) for k in (await c.call(API_VERSIONS, 3, {
                "client_software_name": "test", "client_software_version": "1"}))["api_keys"]}
            assert (keys.get(HEARTBEAT), keys.get(DESCRIBE)) == (((1, 1), (1, 1)) if listed else (None, None))
            c.close()


async def test_a_member_joins_gets_its_partitions_and_leaves_over_tcp():
    # ShareGroupHeartbeatRequestTest testMemberLeavingAndRejoining's first steps, with the test profile
    async with running(topics={"orders": 3}, config={"group.share.enable": True}) as gc:
        c = await Client.connect(gc.bootstrap_servers)

        async def heartbeat(epoch: int, topics=None) -> dict:
            return await c.call(HEARTBEAT, 1, {"group_id": "q", "member_id": "m-1", "member_epoch": epoch,
                                               "rack_id": None, "subscribed_topic_names": topics})
        first = await heartbeat(0, ["orders"])
        assert (first["error_code"], first["member_epoch"], first["heartbeat_interval_ms"], first["assignment"]) == (
            0, 2, 250, {"topic_partitions": []})
        second = await heartbeat(first["member_epoch"])
        assert second["member_epoch"] == 3
        [tp] = second["assignment"]["topic_partitions"]
        assert (tp["topic_id"], tp["partitions"]) == (gc.service.topic_id("orders"), [0, 1, 2])
        [group] = (await c.call(DESCRIBE, 1, {"group_ids": ["q"], "include_authorized_operations": True}))["groups"]
        assert (group["group_state"], group["members"][0]["member_id"], group["authorized_operations"]) == (
            "Stable", "m-1", (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11))
        left = await heartbeat(-1)
        assert (left["error_code"], left["member_epoch"], left["assignment"]) == (0, -1, None)
        c.close()


def _describe(bootstrap: str, group_id: str) -> dict:
    """ShareGroupDescribe over a socket of its own (the service runs on another thread)."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(frames.encode_request(DESCRIBE, 1, 1, {"group_ids": [group_id],
                                                         "include_authorized_operations": False}, "test"))
        size = struct.unpack(">i", _read(s, 4))[0]
        _, response = frames.decode_response(DESCRIBE, 1, _read(s, size))
    return response["groups"][0]


def _read(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def test_confluent_kafka_share_consumers_join_and_share_the_partitions():
    from confluent_kafka import ShareConsumer

    with ThreadedCoordinator(topics={"orders": 4}, config={"group.share.enable": True}) as gc:
        consumers = [ShareConsumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": "queue",
                                    "client.id": f"share-{i}"}) for i in range(3)]
        try:
            for c in consumers:
                c.subscribe(["orders"])
            deadline = time.monotonic() + 20
            group = None
            while time.monotonic() < deadline:
                for c in consumers:
                    c.poll(0.05)
                group = _describe(gc.bootstrap_servers, "queue")
                if len(group["members"]) == 3 and all(m["assignment"]["topic_partitions"] for m in group["members"]):
                    break
            assert group is not None and group["error_code"] == 0 and group["group_state"] == "Stable", group
            members = group["members"]
            assert sorted(m["client_id"] for m in members) == ["share-0", "share-1", "share-2"]
            assert {m["member_epoch"] for m in members} == {group["assignment_epoch"]}
            held = [p for m in members for tp in m["assignment"]["topic_partitions"] for p in tp["partitions"]]
            assert sorted(set(held)) == [0, 1, 2, 3] and all(m["subscribed_topic_names"] == ["orders"] for m in members)
        finally:
            for c in consumers:
                c.close()
        deadline = time.monotonic() + 10
        while _describe(gc.bootstrap_servers, "queue")["group_state"] != "Empty" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _describe(gc.bootstrap_servers, "queue")["group_state"] == "Empty"     # they left (epoch -1)


def test_confluent_kafka_share_consumers_get_every_record_once():
    """Kafka 4.3 by default (share groups on): three ShareConsumers on four partitions receive every
    produced record, each once (none redelivered: implicit acknowledgement accepts them)."""
    from confluent_kafka import Producer, ShareConsumer

    with ThreadedCoordinator(topics={"orders": 4}) as gc:
        # (the default, latest, would skip what is produced before the share-partitions are first fetched)
        gc.call(gc.service.alter_group_configs, "q", {"share.auto.offset.reset": "earliest"})
        consumers = [ShareConsumer({"bootstrap.servers": gc.bootstrap_servers, "group.id": "q", "client.id": f"s{i}"})
                     for i in range(3)]
        try:
            for c in consumers:
                c.subscribe(["orders"])
            producer = Producer({"bootstrap.servers": gc.bootstrap_servers})
            for i in range(300):
                producer.produce("orders", value=b"%d" % i, partition=i % 4)
            producer.flush(10)
            deliveries: dict[tuple[int, int], list[int]] = {}
            deadline = time.monotonic() + 30
            while len(deliveries) < 300 and time.monotonic() < deadline:
                for c in consumers:
                    for m in c.poll(0.1):
                        assert m.error() is None, m.error()
                        deliveries.setdefault((m.partition(), m.offset()), []).append(m.delivery_count())
        finally:
            for c in consumers:
                c.close()
    assert sorted(deliveries) == sorted((i % 4, i // 4) for i in range(300))
    assert all(counts == [1] for counts in deliveries.values())
