"""The groups endpoints over HTTP, against groups formed by real consumers (our GroupConsumer),
with effects checked through Kafka's own APIs (kafka-python's admin client) and the events."""
from __future__ import annotations

import asyncio

import aiohttp

from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.client.connection import BrokerConnection
from groupcoord.coordinator.embed import running
from groupcoord.protocol.consumer import decode_assignment

from admin_helpers import Http, make_consumer, produce, stable


def kafka_admin(gc):
    from kafka import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=gc.bootstrap_servers, request_timeout_ms=10000)


def committed_by_kafka(gc, group: str) -> dict:
    """The group's committed offsets through OffsetFetch (kafka-python's admin client)."""
    admin = kafka_admin(gc)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
        return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
    finally:
        admin.close()


async def test_describe_a_real_group_members_assignments_offsets_and_lag(
        admin_gc, admin_http, admin_consumers):
    gc = admin_gc
    static = make_consumer(gc, "orders", group="billing", opened=admin_consumers, client_id="static-one",
                           group_instance_id="billing-1")
    dynamic = make_consumer(gc, "orders", "audit", group="billing", opened=admin_consumers, client_id="dyn")
    for c in (static, dynamic):
        await c.start()
    g = await stable(gc, [static, dynamic], "billing")
    await produce(gc, "orders", [(p, f"o{p}-{i}") for p in range(3) for i in range(4)])
    await produce(gc, "audit", [(p, f"a{p}-{i}") for p in range(2) for i in range(2)])
    # consume some and commit what was consumed (positions): lag is what is left
    got = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while len(got) < 16 and loop.time() < deadline:
        for c in (static, dynamic):
            got += await c.poll(0.02, max_records=1)
    for c in (static, dynamic):
        await c.commit()
    positions = {(tp.topic, tp.partition): c.position(tp) for c in (static, dynamic) for tp in c.assignment()}

    status, groups = await admin_http.get("/api/groups")
    assert status == 200
    [summary] = [x for x in groups if x["group_id"] == "billing"]
    assert summary == {"group_id": "billing", "type": "classic", "state": "Stable", "protocol_type": "consumer",
                       "protocol": g.protocol_name, "generation": g.generation_id, "leader": g.leader_id,
                       "members": 2, "coordinator": {"partition": gc.service.cluster.coordinator_partition("billing"),
                                                     "node": static.member.coordinator[0]}}
    assert summary["protocol"] == "range"

    status, detail = await admin_http.get("/api/groups/billing")
    assert status == 200
    members = {m["client_id"]: m for m in detail["members"]}
    assert set(members) == {"static-one", "dyn"}
    s, d = members["static-one"], members["dyn"]
    assert s["member_id"] == static.member.member_id and d["member_id"] == dynamic.member.member_id
    assert s["instance_id"] == "billing-1" and d["instance_id"] is None
    assert s["client_host"] == d["client_host"] == "/127.0.0.1"
    assert s["session_timeout_ms"] == 6000
    assert s["subscription"]["topics"] == ["orders"]
    assert sorted(d["subscription"]["topics"]) == ["audit", "orders"]
    for member, consumer in ((s, static), (d, dynamic)):
        assert {(p["topic"], p["partition"]) for p in member["assignment"]["partitions"]} == \
            {(tp.topic, tp.partition) for tp in consumer.assignment()}
        assert member["assignment_bytes"] == len(g.members[member["member_id"]].assignment) > 0
    # committed offsets as Kafka's OffsetFetch reports them, with the lag against the log end
    kafka = await asyncio.to_thread(committed_by_kafka, gc, "billing")
    assert {(o["topic"], o["partition"]): o["offset"] for o in detail["offsets"]} == kafka == positions
    ends = {("orders", p): 4 for p in range(3)} | {("audit", p): 2 for p in range(2)}
    for o in detail["offsets"]:
        assert o["log_end_offset"] == ends[(o["topic"], o["partition"])]
        assert o["lag"] == o["log_end_offset"] - o["offset"]
    assert sum(o["lag"] for o in detail["offsets"]) == 16 - len(got)
    assert detail["coordinator"] == summary["coordinator"]


async def test_multi_node_coordinator_is_the_node_clients_find():
    opened = []
    async with running(nodes=3, http=True, topics={"t": 3}) as gc, aiohttp.ClientSession() as session:
        http = Http(session, gc.admin_url)
        try:
            groups = [f"g{i}" for i in range(4)]
            consumers = [make_consumer(gc, "t", group=g, opened=opened) for g in groups]
            for c in consumers:
                await c.start()
            for g, c in zip(groups, consumers):
                await stable(gc, [c], g)
            status, nodes = await http.get("/api/nodes")
            assert status == 200 and [n["node_id"] for n in nodes] == [0, 1, 2]
            by_partition = {p: n["node_id"] for n in nodes for p in n["offsets_partitions"]}
            assert sorted(by_partition) == list(range(50))
            for g, c in zip(groups, consumers):
                status, detail = await http.get(f"/api/groups/{g}")
                node = c.member.coordinator[0]          # found with FindCoordinator
                assert detail["coordinator"]["node"] == node == by_partition[detail["coordinator"]["partition"]]
            assert len({c.member.coordinator[0] for c in consumers}) > 1
        finally:
            for c in opened:
                await c.close(timeout=1)


async def test_other_protocol_types_show_sizes_not_decoded_payloads(admin_gc, admin_http):
    host, port = admin_gc.bootstrap_servers.split(":")
    conn = await BrokerConnection(host, int(port), client_id="connect-worker").connect()
    try:
        metadata = b"\x00\x01worker-config"
        join = {"group_id": "connect-cluster", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                "member_id": "", "group_instance_id": None, "protocol_type": "connect",
                "protocols": [{"name": "sessioned", "metadata": metadata}], "reason": None}
        first = await conn.request(11, 9, join)               # MEMBER_ID_REQUIRED
        joined = await conn.request(11, 9, {**join, "member_id": first["member_id"]})
        assert joined["error_code"] == 0
        synced = await conn.request(14, 5, {
            "group_id": "connect-cluster", "generation_id": joined["generation_id"],
            "member_id": joined["member_id"], "group_instance_id": None, "protocol_type": "connect",
            "protocol_name": "sessioned", "assignments": [{"member_id": joined["member_id"], "assignment": b"xyz"}]})
        assert synced["error_code"] == 0
        status, detail = await admin_http.get("/api/groups/connect-cluster")
        assert status == 200
        assert detail["protocol_type"] == "connect" and detail["protocol"] == "sessioned"
        [m] = detail["members"]
        assert m["client_id"] == "connect-worker"
        assert m["subscription"] is None and m["subscription_bytes"] == len(metadata)
        assert m["assignment"] is None and m["assignment_bytes"] == 3
    finally:
        conn.close()


async def test_remove_a_member_and_a_static_member(admin_gc, admin_http, admin_consumers, admin_events):
    gc = admin_gc
    a = make_consumer(gc, "orders", group="workers", opened=admin_consumers, client_id="a")
    b = make_consumer(gc, "orders", group="workers", opened=admin_consumers, client_id="b",
                      group_instance_id="worker-b")
    for c in (a, b):
        await c.start()
    g = await stable(gc, [a, b], "workers")
    generation = g.generation_id
    removed = a.member.member_id

    status, body = await admin_http.delete(f"/api/groups/workers/members/{removed}?reason=drained")
    assert status == 200
    assert body["member_id"] == removed and body["instance_id"] is None
    assert body["members"] == 1 and body["state"] == "PreparingRebalance"
    [left] = [e for e in admin_events if e["event"] == "member.left"]
    assert left["member"] == removed and left["initiator"] == "admin" and left["reason"] == "drained"
    assert any(e["event"] == "rebalance.started" and e["reason"] == "member_left" for e in admin_events)
    # the removed consumer learns it (UNKNOWN_MEMBER_ID) and joins again with a new id, as with Kafka
    g = await stable(gc, [a, b], "workers")
    assert g.generation_id > generation and removed not in g.members and a.member.member_id != removed

    status, body = await admin_http.delete("/api/groups/workers/members/no-such-member")
    assert (status, body["error"]) == (404, "unknown_member_id")
    status, body = await admin_http.delete("/api/groups/nobody/members/x")
    assert (status, body["error"]) == (404, "group_id_not_found")

    static_id = b.member.member_id
    admin_events.clear()
    status, body = await admin_http.delete("/api/groups/workers/instances/worker-b")
    assert status == 200 and body["member_id"] == static_id and body["instance_id"] == "worker-b"
    [left] = [e for e in admin_events if e["event"] == "member.left"]
    assert left["instance_id"] == "worker-b" and left["initiator"] == "admin"
    assert left["reason"] == "member was removed by an admin"
    status, body = await admin_http.delete("/api/groups/workers/instances/worker-z")
    assert (status, body["error"]) == (404, "unknown_member_id")
    await stable(gc, [a, b], "workers")


async def test_delete_group_only_when_empty(admin_gc, admin_http, admin_consumers, admin_events):
    gc = admin_gc
    c = make_consumer(gc, "orders", group="gone", opened=admin_consumers)
    await c.start()
    await stable(gc, [c], "gone")
    await c.commit({TP("orders", 0): 0, TP("orders", 1): 0})
    status, body = await admin_http.delete("/api/groups/gone")
    assert (status, body["error"]) == (409, "non_empty_group")
    await c.close()
    status, body = await admin_http.delete("/api/groups/gone")
    assert status == 200 and body == {"group_id": "gone", "offsets_deleted": 2}
    assert [e["reason"] for e in admin_events if e["event"] == "group.deleted"] == ["delete_groups"]
    status, body = await admin_http.get("/api/groups/gone")
    assert (status, body["error"]) == (404, "group_id_not_found")
    status, body = await admin_http.delete("/api/groups/gone")
    assert status == 404

    def listed():
        admin = kafka_admin(gc)
        try:
            return [x["group_id"] for x in admin.list_groups()]
        finally:
            admin.close()
    assert "gone" not in await asyncio.to_thread(listed)


async def test_reset_offsets_like_kafka_consumer_groups(admin_gc, admin_http, admin_consumers):
    gc = admin_gc
    base = 1_700_000_000_000
    await produce(gc, "orders", [(p, f"v{i}", base + 1000 * i) for p in range(3) for i in range(10)])
    c = make_consumer(gc, "orders", group="replay", opened=admin_consumers)
    await c.start()
    await stable(gc, [c], "replay")
    await c.commit({TP("orders", p): 5 for p in range(3)})

    reset = "/api/groups/replay/offsets/reset"
    status, body = await admin_http.post(reset, {"topic": "orders", "to": "earliest"})
    assert status == 409 and body["error"] == "non_empty_group"
    assert "inactive, but the current state is Stable" in body["message"]
    status, body = await admin_http.post(reset, {"topic": "orders", "to": "earliest", "dry_run": True})
    assert status == 409
    await c.close()

    async def run(to, partitions=None, dry_run=False):
        request = {"topic": "orders", "to": to, "dry_run": dry_run}
        if partitions is not None:
            request["partitions"] = partitions
        status, body = await admin_http.post(reset, request)
        assert status == 200, body
        return {e["partition"]: (e["previous_offset"], e["offset"]) for e in body["offsets"]}

    assert await run("earliest", dry_run=True) == {p: (5, 0) for p in range(3)}
    assert await asyncio.to_thread(committed_by_kafka, gc, "replay") == {("orders", p): 5 for p in range(3)}
    assert await run({"shift_by": -2}, [0]) == {0: (5, 3)}
    assert await run({"shift_by": 100}, [1]) == {1: (5, 10)}               # clamped to the log end
    assert await run({"timestamp": base + 7000}, [2]) == {2: (5, 7)}
    assert await run({"timestamp": base + 99_000}, [0]) == {0: (3, 10)}     # none that late: log end
    assert await run({"offset": 4}, [1]) == {1: (10, 4)}
    assert await asyncio.to_thread(committed_by_kafka, gc, "replay") == {
        ("orders", 0): 10, ("orders", 1): 4, ("orders", 2): 7}
    assert await run("earliest") == {0: (10, 0), 1: (4, 0), 2: (7, 0)}
    assert await run("latest", [2]) == {2: (0, 10)}

    # a consumer of the group starts where the reset put it
    await run({"offset": 6}, [0, 1, 2])
    c2 = make_consumer(gc, "orders", group="replay", opened=admin_consumers)
    await c2.start()
    got = []
    await stable(gc, [c2], "replay", records=got)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while len(got) < 12 and loop.time() < deadline:
        got += await c2.poll(0.05)
    assert sorted((r.partition, r.offset) for r in got) == [(p, o) for p in range(3) for o in range(6, 10)]
    await c2.close()

    # a group that does not exist (Dead) gets its offsets: a simple group, as with Kafka
    status, body = await admin_http.post("/api/groups/fresh/offsets/reset",
                                         {"topic": "audit", "to": "latest", "partitions": [1]})
    assert status == 200 and body["offsets"] == [
        {"topic": "audit", "partition": 1, "previous_offset": None, "offset": 0}]
    status, detail = await admin_http.get("/api/groups/fresh")
    assert detail["state"] == "Empty" and detail["protocol_type"] is None
    assert detail["offsets"] == [{"topic": "audit", "partition": 1, "offset": 0, "metadata": "",
                                  "log_end_offset": 0, "lag": 0}]


async def test_reset_offsets_errors(admin_gc, admin_http):
    reset = "/api/groups/nobody/offsets/reset"
    cases = [
        ({"topic": "nope", "to": "earliest"}, 404, "unknown_topic_or_partition"),
        ({"topic": "orders", "to": "earliest", "partitions": [3]}, 404, "unknown_topic_or_partition"),
        ({"topic": "orders", "to": {"shift_by": 1}}, 409, "no_committed_offset"),
        ({"topic": "orders", "to": "newest"}, 400, "invalid_request"),
        ({"topic": "orders", "to": {"offset": -1}}, 400, "invalid_request"),
        ({"topic": "orders", "to": {"offset": 1, "timestamp": 2}}, 400, "invalid_request"),
        ({"topic": "orders"}, 400, "invalid_request"),
        ({"topic": "orders", "to": "latest", "dry_run": 1}, 400, "invalid_request"),
        ({"topic": "orders", "to": "latest", "partitions": [0, 0]}, 400, "invalid_request"),
        ({"topic": "orders", "to": "latest", "partitions": [True]}, 400, "invalid_request"),
        ({"topic": "orders", "to": "latest", "extra": 1}, 400, "invalid_request"),
    ]
    for request, status, error in cases:
        got, body = await admin_http.post(reset, request)
        assert (got, body["error"]) == (status, error), request
        assert body["message"]
    status, body = await admin_http.post(reset, raw=b"{not json")
    assert (status, body["error"]) == (400, "invalid_json")
    status, body = await admin_http.post(reset, raw=b"[1, 2]")
    assert (status, body["error"]) == (400, "invalid_body")
    for deep in (b"[" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000):    # json's RecursionError
        status, body = await admin_http.post(reset, raw=deep)
        assert (status, body["error"]) == (400, "invalid_json")
    # nothing was committed by the failed requests
    assert admin_gc.service.group_coordinator.group("nobody") is None


def test_decoded_assignment_matches_the_codec():
    """The API decodes with groupcoord.protocol.consumer; user data is reported by size."""
    from groupcoord.coordinator.group.classic.view import assignment_json, subscription_json
    from groupcoord.protocol.consumer import encode_assignment, encode_subscription
    data = encode_assignment({"assigned_partitions": [{"topic": "t", "partitions": [2, 0]}], "user_data": b"1234"})
    assert decode_assignment(data)["assigned_partitions"] == [{"topic": "t", "partitions": [2, 0]}]
    assert assignment_json(data, "consumer") == {
        "partitions": [{"topic": "t", "partition": 2}, {"topic": "t", "partition": 0}], "user_data_bytes": 4}
    assert assignment_json(data, "connect") is None and assignment_json(b"", "consumer") is None
    sub = encode_subscription({"topics": ["a", "b"], "user_data": None,
                               "owned_partitions": [{"topic": "a", "partitions": [1]}],
                               "generation_id": 3, "rack_id": None})
    assert subscription_json(sub, "consumer") == {"topics": ["a", "b"], "owned_partitions": [
        {"topic": "a", "partition": 1}], "user_data_bytes": 0}
    assert subscription_json(b"\x00\x00\xff", "consumer") is None          # malformed: not decoded


async def test_reset_agrees_with_kafka_pythons_admin_client(admin_gc, admin_http):
    """The same resets through our endpoint and through kafka-python's reset_group_offsets
    (ListOffsets + OffsetCommit) commit the same offsets."""
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec, OffsetTimestamp
    gc = admin_gc
    base = 1_600_000_000_000
    await produce(gc, "orders", [(p, f"v{i}", base + 10 * i) for p in range(3) for i in range(4 + p)])
    specs = [("earliest", OffsetSpec.EARLIEST), ("latest", OffsetSpec.LATEST),
             ({"timestamp": base + 25}, OffsetTimestamp(base + 25)),
             ({"timestamp": base + 10_000}, OffsetTimestamp(base + 10_000)),
             ({"offset": 2}, 2), ({"offset": 5}, 5)]

    def kafka_reset(group, spec):
        admin = kafka_admin(gc)
        try:
            result = admin.reset_group_offsets(group, {TopicPartition("orders", p): spec for p in range(3)})
            return {tp.partition: r["offset"] for tp, r in result.items()}
        finally:
            admin.close()
    for i, (ours, theirs) in enumerate(specs):
        status, body = await admin_http.post(f"/api/groups/ours-{i}/offsets/reset", {"topic": "orders", "to": ours})
        assert status == 200
        expected = await asyncio.to_thread(kafka_reset, f"theirs-{i}", theirs)
        assert {e["partition"]: e["offset"] for e in body["offsets"]} == expected, ours
        assert await asyncio.to_thread(committed_by_kafka, gc, f"ours-{i}") == \
            await asyncio.to_thread(committed_by_kafka, gc, f"theirs-{i}")


async def test_changes_are_logged_to_the_store_and_survive_a_restart(tmp_path):
    """A reset commits through the coordinator (records in the offsets-topic log); a deleted
    group leaves tombstones: after a restart from the same data directory both hold."""
    async with running(http=True, topics={"t": 2}, data_dir=tmp_path) as gc, aiohttp.ClientSession() as session:
        http = Http(session, gc.admin_url)
        for group in ("kept", "dropped"):
            status, _ = await http.post(f"/api/groups/{group}/offsets/reset", {"topic": "t", "to": {"offset": 0}})
            assert status == 200
        status, body = await http.delete("/api/groups/dropped")
        assert status == 200 and body["offsets_deleted"] == 2
    async with running(http=True, topics={"t": 2}, data_dir=tmp_path) as gc, aiohttp.ClientSession() as session:
        http = Http(session, gc.admin_url)
        status, groups = await http.get("/api/groups")
        assert [g["group_id"] for g in groups] == ["kept"]
        status, detail = await http.get("/api/groups/kept")
        assert [(o["topic"], o["partition"], o["offset"]) for o in detail["offsets"]] == [("t", 0, 0), ("t", 1, 0)]


async def test_a_groups_configs_are_shown_and_set_over_http(admin_gc, admin_http):
    # the admin API's view of kafka-configs --entity-type groups: the same checks as IncrementalAlterConfigs
    status, body = await admin_http.get("/api/groups/cfg-group/configs")
    assert status == 200 and body["configs"]["consumer.heartbeat.interval.ms"] == {"value": 250,
                                                                                    "source": "DEFAULT_CONFIG"}
    status, body = await admin_http.call("PATCH", "/api/groups/cfg-group/configs",
                                         {"configs": {"consumer.heartbeat.interval.ms": 1000}})
    assert status == 200 and body["configs"]["consumer.heartbeat.interval.ms"] == {
        "value": 1000, "source": "DYNAMIC_GROUP_CONFIG"}
    assert admin_gc.service.group_coordinator.group_configs.values == {
        "cfg-group": {"consumer.heartbeat.interval.ms": 1000}}
    status, body = await admin_http.call("PATCH", "/api/groups/cfg-group/configs",
                                         {"configs": {"consumer.session.timeout.ms": 500}})
    assert (status, body["error"], body["message"]) == (
        400, "invalid_config",
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    status, body = await admin_http.call("PATCH", "/api/groups/cfg-group/configs",
                                         {"configs": {"consumer.heartbeat.interval.ms": None}})
    assert status == 200 and body["configs"]["consumer.heartbeat.interval.ms"]["source"] == "DEFAULT_CONFIG"
    status, body = await admin_http.call("PATCH", "/api/groups/cfg-group/configs", {"configs": {"x": "1"}})
    assert status == 400
