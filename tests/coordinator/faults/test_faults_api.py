"""The fault endpoints of the admin API, over HTTP, against a running service spoken to with raw
Kafka frames."""
from __future__ import annotations

import asyncio
import struct
import time

import aiohttp
import pytest

from groupcoord.coordinator.embed import running
from groupcoord.protocol import frames
from groupcoord.protocol.consumer import encode_subscription
from groupcoord.protocol.errors import ErrorCode

E = ErrorCode
SUB = encode_subscription({"topics": ["t"], "user_data": None}, 0)


class Kafka:
    """A raw Kafka connection to one node."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.corr = 0

    @classmethod
    async def connect(cls, host: str, port: int) -> "Kafka":
        return cls(*await asyncio.open_connection(host, port))

    async def call(self, api_key: int, version: int, body: dict, client_id: str = "test") -> dict:
        self.corr += 1
        self.writer.write(frames.encode_request(api_key, version, self.corr, body, client_id))
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 5))[0]
        corr, resp = frames.decode_response(api_key, version, await asyncio.wait_for(self.reader.readexactly(size), 5))
        assert corr == self.corr
        return resp

    async def closed(self) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(1), 5) == b""
        except ConnectionError:
            return True

    def close(self):
        self.writer.close()


async def connect(gc, node: int) -> Kafka:
    n = gc.service.cluster.nodes[node]
    return await Kafka.connect(n.host, n.port)


async def join_stable(gc, group: str) -> tuple[Kafka, str, int]:
    """One member, Stable: (its connection to the coordinator, member id, generation)."""
    conn = await connect(gc, gc.service.cluster.coordinator_for(group))
    body = {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUB}]}
    first = await conn.call(11, 9, body)
    assert first["error_code"] == E.MEMBER_ID_REQUIRED
    joined = await conn.call(11, 9, {**body, "member_id": first["member_id"]})
    member, generation = joined["member_id"], joined["generation_id"]
    synced = await conn.call(14, 5, {"group_id": group, "generation_id": generation, "member_id": member,
                                     "protocol_type": "consumer", "protocol_name": "range",
                                     "assignments": [{"member_id": member, "assignment": b""}]})
    assert synced["error_code"] == 0
    return conn, member, generation


def heartbeat(group, member, generation) -> dict:
    return {"group_id": group, "generation_id": generation, "member_id": member}


async def find(conn: Kafka, group: str) -> dict:
    return await conn.call(10, 3, {"key": group, "key_type": 0})


async def wait_for(cond, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = await cond()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_fault_crud_and_errors():
    async with running(http=True) as gc, aiohttp.ClientSession(gc.admin_url) as http:
        async with http.post("/api/faults", json={"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS",
                                                  "count": 2}) as r:
            assert r.status == 201
            fault = await r.json()
        assert fault["id"] == "f1" and fault["remaining"] == 2 and fault["active"]
        async with http.post("/api/faults", json={"id": "later", "when": {"event": "member.joined"},
                                                  "do": {"action": "expire_member"}, "times": None}) as r:
            assert r.status == 201
        async with http.get("/api/faults") as r:
            assert [f["id"] for f in await r.json()] == ["f1", "later"]
        async with http.get("/api/faults/later") as r:
            assert (await r.json())["kind"] == "scheduled"
        for spec, status, text in [
            ({"api": "Heartbeat", "error": "NO_SUCH"}, 400, "unknown Kafka error"),
            ({"id": "later", "error": 27}, 409, "exists already"),
            ({"error": 27, "node": 5}, 404, "no node 5"),
            ([1, 2], 400, "JSON object"),
        ]:
            async with http.post("/api/faults", json=spec) as r:
                body = await r.json()
                assert r.status == status and text in body["message"], body
        async with http.post("/api/faults", data=b"{oops", headers={"Content-Type": "application/json"}) as r:
            assert r.status == 400 and (await r.json())["error"] == "invalid_json"
        async with http.delete("/api/faults/f1") as r:
            assert r.status == 200 and (await r.json())["id"] == "f1"
        async with http.delete("/api/faults/f1") as r:
            assert r.status == 404 and (await r.json())["error"] == "not_found"
        async with http.delete("/api/faults") as r:
            assert (await r.json()) == {"deleted": 1}
        assert gc.service.faults.before_request not in gc.service.before_request
        assert gc.service.faults.list() == []
        async with http.get("/openapi.json") as r:
            doc = await r.json()
        for path in ("/api/faults", "/api/faults/{fault_id}", "/api/nodes/{node_id}/down", "/api/nodes/{node_id}/up",
                     "/api/offsets-partitions/{partition}/move", "/api/groups/{group_id}/coordinator/move",
                     "/api/connections/drop"):
            assert path in doc["paths"], path
        assert {"FaultSpec", "Fault", "NodeChange"} <= set(doc["components"]["schemas"])


async def test_injected_errors_latency_and_drop_on_the_wire():
    async with running(http=True, topics={"t": 2}) as gc, aiohttp.ClientSession(gc.admin_url) as http:
        conn, member, generation = await join_stable(gc, "g")
        async with http.post("/api/faults", json={"api": "Heartbeat", "group": "g", "count": 1,
                                                  "error": "NOT_COORDINATOR"}) as r:
            assert r.status == 201
        assert (await conn.call(12, 4, heartbeat("g", member, generation)))["error_code"] == E.NOT_COORDINATOR
        assert (await conn.call(12, 4, heartbeat("g", member, generation)))["error_code"] == 0
        # latency: the response comes no sooner
        async with http.post("/api/faults", json={"api": "Heartbeat", "latency_ms": 300, "count": 1}) as r:
            assert r.status == 201
        started = time.monotonic()
        assert (await conn.call(12, 4, heartbeat("g", member, generation)))["error_code"] == 0
        assert time.monotonic() - started >= 0.3
        # OffsetCommit: the error in every partition
        async with http.post("/api/faults", json={"api": "OffsetCommit", "error": 15, "count": 1}) as r:
            assert r.status == 201
        commit = await conn.call(8, 8, {"group_id": "g", "generation_id_or_member_epoch": generation,
                                        "member_id": member, "topics": [{"name": "t", "partitions": [
                                            {"partition_index": 0, "committed_offset": 1},
                                            {"partition_index": 1, "committed_offset": 1}]}]})
        assert [p["error_code"] for p in commit["topics"][0]["partitions"]] == [15, 15]
        # drop: the connection is closed instead of answered
        async with http.post("/api/faults", json={"api": "Heartbeat", "drop": True, "client_id": "test"}) as r:
            assert r.status == 201
        conn.writer.write(frames.encode_request(12, 4, 99, heartbeat("g", member, generation), "test"))
        assert await conn.closed()
        async with http.get("/api/faults/log") as r:
            log = await r.json()
        assert [(e["fault"], e["api"]) for e in log] == [
            ("f1", "Heartbeat"), ("f2", "Heartbeat"), ("f3", "OffsetCommit"), ("f4", "Heartbeat")]


async def test_node_down_and_up_over_http():
    async with running(nodes=3, http=True, topics={"t": 3}) as gc, aiohttp.ClientSession(gc.admin_url) as http:
        cluster = gc.service.cluster
        group = next(f"g{i}" for i in range(100) if cluster.coordinator_for(f"g{i}") == 1)
        conn, member, generation = await join_stable(gc, group)
        port = cluster.nodes[1].port
        async with http.post("/api/nodes/1/down") as r:
            assert r.status == 200
            down = await r.json()
        assert down["node"] == 1 and not down["up"]
        moved = {(m["topic"], m["partition"]) for m in down["moves"]}
        assert moved >= {("t", 1), (None, cluster.coordinator_partition(group))}
        assert await conn.closed()
        with pytest.raises(OSError):
            await Kafka.connect(cluster.nodes[1].host, port)
        other = await connect(gc, 0)
        found = await find(other, group)
        assert found["error_code"] == 0 and found["node_id"] in (0, 2)
        new = await connect(gc, found["node_id"])
        assert (await new.call(12, 4, heartbeat(group, member, generation)))["error_code"] == 0   # the group went on
        meta = await other.call(3, 12, {"topics": [{"name": "t"}]})
        assert sorted(b["node_id"] for b in meta["brokers"]) == [0, 2]
        async with http.get("/api/nodes") as r:
            if r.status == 200:      # the cluster endpoints' view agrees
                assert [n["up"] for n in await r.json()] == [True, False, True]
        async with http.post("/api/nodes/1/down") as r:
            assert r.status == 409
        async with http.post("/api/nodes/7/down") as r:
            assert r.status == 404
        async with http.post("/api/nodes/x/down") as r:
            assert r.status == 400
        async with http.post("/api/nodes/1/up", json={"preferred_election": "yes"}) as r:
            assert r.status == 400
        async with http.post("/api/nodes/1/up") as r:
            assert r.status == 200
            up = await r.json()
        assert up["up"] and up["moves"] == []
        back = await Kafka.connect(cluster.nodes[1].host, port)          # listening again, same port
        assert (await find(back, group))["node_id"] == found["node_id"]   # leadership stayed
        async with http.post("/api/nodes/1/down") as r:
            assert r.status == 200
        async with http.post("/api/nodes/1/up", json={"preferred_election": True}) as r:
            up = await r.json()
        assert (None, cluster.coordinator_partition(group), 1) in {
            (m["topic"], m["partition"], m["to"]) for m in up["moves"]}
        assert cluster.coordinator_for(group) == 1
        for c in (other, new, back):
            c.close()


async def test_coordinator_move_and_connection_drop_over_http():
    async with running(nodes=3, http=True) as gc, aiohttp.ClientSession(gc.admin_url) as http:
        cluster = gc.service.cluster
        conn, member, generation = await join_stable(gc, "g")
        old = cluster.coordinator_for("g")
        target = (old + 1) % 3
        async with http.post("/api/groups/g/coordinator/move", json={"node": target}) as r:
            assert r.status == 200
            moved = await r.json()
        assert moved == {"group": "g", "partition": cluster.coordinator_partition("g"), "from": old, "to": target,
                         "groups": ["g"]}
        assert (await conn.call(12, 4, heartbeat("g", member, generation)))["error_code"] == E.NOT_COORDINATOR
        assert (await find(conn, "g"))["node_id"] == target
        new = await connect(gc, target)
        assert (await new.call(12, 4, heartbeat("g", member, generation)))["error_code"] == 0
        async with http.post(f"/api/offsets-partitions/{moved['partition']}/move", json={"node": old}) as r:
            assert r.status == 200 and (await r.json())["to"] == old
        assert (await new.call(12, 4, heartbeat("g", member, generation)))["error_code"] == E.NOT_COORDINATOR
        for path, body, status in [("/api/offsets-partitions/50/move", {}, 404),
                                   ("/api/offsets-partitions/1/move", {"node": 9}, 404),
                                   ("/api/offsets-partitions/1/move", {"node": "1"}, 400),
                                   ("/api/groups/g/coordinator/move", {"nodes": 1}, 400)]:
            async with http.post(path, json=body) as r:
                assert r.status == status, (path, body, await r.text())
        # connections: only the client id asked for
        other = await Kafka.connect(cluster.nodes[target].host, cluster.nodes[target].port)
        await other.call(18, 3, {"client_software_name": "x", "client_software_version": "1"}, client_id="keep")
        async with http.post("/api/connections/drop", json={"client_id": "test"}) as r:
            assert (await r.json()) == {"closed": 2}
        assert await conn.closed() and await new.closed()
        assert (await other.call(18, 3, {"client_software_name": "x", "client_software_version": "1"},
                                 client_id="keep"))["error_code"] == 0
        other.close()


async def test_scheduled_fault_over_http_fires_on_the_event():
    async with running(http=True) as gc, aiohttp.ClientSession(gc.admin_url) as http:
        async with http.post("/api/faults", json={"when": {"event": "group.created", "group": "g"},
                                                  "do": {"action": "inject", "fault": {
                                                      "api": "JoinGroup", "count": 1,
                                                      "error": "COORDINATOR_LOAD_IN_PROGRESS"}}}) as r:
            assert r.status == 201
        conn = await connect(gc, 0)
        body = {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000, "member_id": "",
                "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": SUB}]}
        assert (await conn.call(11, 9, body))["error_code"] == E.MEMBER_ID_REQUIRED    # creates g
        assert (await conn.call(11, 9, body))["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
        async with http.get("/api/faults") as r:
            faults = await r.json()
        assert [(f["id"], f["fired"], f["active"]) for f in faults] == [("f1", 1, False), ("f2", 1, False)]
        conn.close()


async def test_mutations_need_the_token():
    async with running(http=True, http_token="s3cret") as gc, aiohttp.ClientSession(gc.admin_url) as http:
        async with http.post("/api/faults", json={"error": 27}) as r:
            assert r.status == 401
        async with http.post("/api/nodes/0/down") as r:
            assert r.status == 401
        assert gc.service.cluster.nodes[0].up
        async with http.post("/api/faults", json={"error": 27}, headers={"Authorization": "Bearer s3cret"}) as r:
            assert r.status == 201
        async with http.get("/api/faults") as r:
            assert r.status == 200 and len(await r.json()) == 1


async def test_scheduled_node_down_and_up():
    """A node taken down when a group is created, and brought back (on the loop) when it is deleted."""
    async with running(nodes=2, http=True) as gc:
        cluster = gc.service.cluster
        faults = gc.service.faults
        group = next(f"s{i}" for i in range(100) if cluster.coordinator_for(f"s{i}") == 1)
        faults.add({"when": {"event": "group.created", "group": group}, "do": {"action": "node_down", "node": 1}})
        faults.add({"when": {"event": "group.deleted", "group": group},
                    "do": {"action": "node_up", "node": 1, "preferred_election": True}})
        conn = await connect(gc, 1)
        commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                  "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 3}]}]}
        gc.service.create_topic("t", 1)
        # the commit creates the group (answered first), then node 1 goes down
        assert (await conn.call(8, 8, commit))["topics"][0]["partitions"][0]["error_code"] == 0
        assert await conn.closed() and not cluster.nodes[1].up
        other = await connect(gc, 0)
        assert (await find(other, group))["node_id"] == 0
        assert (await other.call(42, 2, {"groups_names": [group]}))["results"][0]["error_code"] == 0
        await wait_for(lambda: _async(cluster.nodes[1].up and cluster.coordinator_for(group) == 1))
        back = await connect(gc, 1)
        assert (await find(back, group))["node_id"] == 1
        for c in (other, back):
            c.close()


async def _async(value):
    return value


async def test_consumer_group_heartbeat_faults_over_http():
    async with running(http=True, topics={"t": 2}) as gc, aiohttp.ClientSession(gc.admin_url) as http:
        conn = await connect(gc, 0)

        async def heartbeat(member: str, epoch: int) -> dict:
            return await conn.call(68, 1, {
                "group_id": "g", "member_id": member, "member_epoch": epoch, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
                "subscribed_topic_names": ["t"] if epoch == 0 else None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": [] if epoch == 0 else None})
        async with http.post("/api/faults", json={"api": "ConsumerGroupHeartbeat", "member": "a", "count": 1,
                                                  "error": "NOT_COORDINATOR"}) as r:
            fault = await r.json()
            assert r.status == 201 and (fault["api"], fault["member"]) == ("ConsumerGroupHeartbeat", "a")
        assert (await heartbeat("a", 0))["error_code"] == E.NOT_COORDINATOR
        assert (await heartbeat("a", 0))["member_epoch"] == 2       # (a new group starts at 1: Kafka 4.3)
        async with http.post("/api/faults", json={
                "when": {"event": "consumer.group_epoch_bumped", "group": "g", "reason": "member_joined"},
                "do": {"action": "fence_member", "member": "a"}, "times": None}) as r:
            scheduled = await r.json()
            assert r.status == 201 and scheduled["do"]["action"] == "fence_member"
        assert (await heartbeat("b", 0))["member_epoch"] == 3
        assert (await heartbeat("a", 2))["error_code"] == E.FENCED_MEMBER_EPOCH
        assert (await heartbeat("a", 0))["error_code"] == 0
        async with http.get("/api/faults/log") as r:
            log = await r.json()
        assert [(e["kind"], e.get("error")) for e in log] == [
            ("request", "NOT_COORDINATOR"), ("scheduled", None), ("request", "FENCED_MEMBER_EPOCH")]
        async with http.post("/api/faults", json={"api": "Metadata", "member": "a", "error": 27}) as r:
            assert r.status == 400 and "carry no member id" in (await r.json())["message"]
        conn.close()
