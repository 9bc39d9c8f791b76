"""One connection per address (GroupConsumer(share_connections=True)) and decoded answers shared
between connections (ResponseCache), against our real TCP coordinator (embed.running)."""
from __future__ import annotations


import pytest

from groupcoord.client import GroupConsumer
from groupcoord.client.assignors import RangeAssignor
from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.client.connection import BrokerConnection, ResponseCache
from groupcoord.client.member.metadata import _topic_tables
from groupcoord.coordinator.embed import running
from groupcoord.protocol import records as rc

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 100, "auto.offset.reset": "earliest"}


def _produce(gc, topic, partition, n):
    batch = rc.encode_batch([rc.Record(i, 0, None, f"v{i}".encode()) for i in range(n)])
    code, _ = gc.service.cluster.append(topic, partition, batch)
    assert code == 0


def _client_conns(gc, client_id):
    return [c for c in gc.server.connections.values() if c.client_id == client_id]


async def _run_one(gc, *, share, client_id):
    c = GroupConsumer("t", config={"bootstrap.servers": gc.bootstrap_servers, "group.id": client_id,
                                   "client.id": client_id, **FAST},
                      assignors=[RangeAssignor()], fetch=False, share_connections=share)
    await c.start()
    try:
        # Metadata, FindCoordinator, the group, OffsetFetch, then ListOffsets to the leader
        await c.wait_for(lambda: c.member.stable and len(c.member.positions) == 2)
        await c.commit()
        conns = _client_conns(gc, client_id)
        committed = await c.committed([TP("t", 0), TP("t", 1)])
        return c, dict(c.member.positions), conns, committed
    except BaseException:
        await c.close(timeout=1)
        raise


async def test_a_shared_consumer_uses_one_connection_where_the_java_layout_uses_three():
    async with running(topics={"t": 2}) as gc:
        for p in (0, 1):
            _produce(gc, "t", p, 3)
        shared, positions, conns, committed = await _run_one(gc, share=True, client_id="shared")
        assert positions == {TP("t", 0): 0, TP("t", 1): 0}               # earliest, from ListOffsets
        assert len(conns) == 1                           # bootstrap, broker and coordinator on it
        assert {tp: v.offset for tp, v in committed.items()} == {TP("t", 0): 0, TP("t", 1): 0}
        await shared.close(timeout=2)
        separate, positions, conns, _ = await _run_one(gc, share=False, client_id="separate")
        assert positions == {TP("t", 0): 0, TP("t", 1): 0}
        assert len(conns) == 3                           # one per role, as Kafka's Java client
        await separate.close(timeout=2)
        # a closed shared consumer left its group (LeaveGroup went out on the shared connection)
        assert gc.service.group_coordinator.group("shared").state == "Empty"


def test_sharing_is_refused_to_a_fetching_consumer():
    with pytest.raises(ValueError, match="fetch"):
        GroupConsumer("t", config={"bootstrap.servers": "127.0.0.1:9", "group.id": "g"}, share_connections=True)


async def test_a_request_stuck_on_the_shared_connection_closes_it_for_every_role():
    # the coordinator holds one Heartbeat longer than request.timeout.ms: the member gives up on
    # it, and since it holds the connection (answers come in order) the connection is closed,
    # every role is told, and the member carries on over a new one without losing its membership
    async with running(topics={"t": 2}) as gc:
        c = GroupConsumer("t", config={"bootstrap.servers": gc.bootstrap_servers, "group.id": "g",
                                       "client.id": "stuck", **FAST, "request.timeout.ms": 1000},
                          assignors=[RangeAssignor()], fetch=False, share_connections=True)
        await c.start()
        try:
            await c.wait_for(lambda: c.member.stable)
            [first] = _client_conns(gc, "stuck")
            generation = c.member.generation_id
            gc.service.faults.add({"api": "Heartbeat", "latency_ms": 3000, "count": 1})
            await c.wait_for(lambda: first.closed, timeout=10, poll=False)
            await c.wait_for(lambda: (len(_client_conns(gc, "stuck")) == 1 and c.member.stable
                                      and _client_conns(gc, "stuck")[0] is not first), timeout=10)
            group = gc.service.group_coordinator.group("g")
            assert group.state == "Stable" and c.member.member_id in group.members
            assert c.member.generation_id == generation          # never left the group
        finally:
            await c.close(timeout=2)


async def test_other_roles_wait_for_a_parked_join_instead_of_timing_out_behind_it():
    # b joins a group whose other member (a) only learns of the rebalance at its next heartbeat,
    # 2.5 s later: b's JoinGroup is parked that long. b refreshes its metadata every 300 ms with a
    # 1 s request timeout: sent behind the parked JoinGroup those requests would time out and close
    # the connection, JoinGroup included. Held back until the JoinGroup is answered, they don't.
    events = []
    async with running(topics={"t": 2}, config={"group.initial.rebalance.delay.ms": 0}, emit=events.append) as gc:
        a = GroupConsumer("t", config={"bootstrap.servers": gc.bootstrap_servers, "group.id": "g",
                                       "client.id": "a", **FAST, "heartbeat.interval.ms": 2500,
                                       "session.timeout.ms": 10000},
                          assignors=[RangeAssignor()], fetch=False)
        b = GroupConsumer("t", config={"bootstrap.servers": gc.bootstrap_servers, "group.id": "g",
                                       "client.id": "b", **FAST, "request.timeout.ms": 1000,
                                       "metadata.max.age.ms": 300},
                          assignors=[RangeAssignor()], fetch=False, share_connections=True)
        await a.start()
        try:
            await a.wait_for(lambda: a.member.stable)
            conns_seen = set()
            gc.service.before_request.append(
                lambda ctx, body: conns_seen.add(ctx.connection_id) if ctx.client_id == "b" else None)
            await b.start()
            await b.wait_for(lambda: b.member.stable and a.member.stable and len(b.assignment()) == 1
                             and b.member.generation_id == a.member.generation_id, timeout=20)
            joins = [e for e in events if e["event"] == "member.joined" and e["client_id"] == "b"]
            assert len(conns_seen) == 1 and len(joins) == 1
        finally:
            await b.close(timeout=2)
            await a.close(timeout=2)


async def test_response_cache_decodes_identical_answers_once_and_only_those():
    async with running(topics={"t": 4}) as gc:
        host, port = gc.bootstrap_servers.split(":")
        cache = ResponseCache()
        a = await BrokerConnection(host, int(port), response_cache=cache).connect()
        b = await BrokerConnection(host, int(port), response_cache=cache).connect()
        try:
            assert cache.hits == 1 and cache.misses == 1        # ApiVersions: the same answer twice
            req = {"topics": [{"name": "t"}], "allow_auto_topic_creation": False,
                   "include_topic_authorized_operations": False}
            one = await a.request(3, 12, req)
            two = await b.request(3, 12, req)
            assert one is two and len(one["topics"][0]["partitions"]) == 4
            gc.service.cluster.add_partitions("t", 6)
            three = await a.request(3, 12, req)
            assert three is not one and len(three["topics"][0]["partitions"]) == 6
            # what is not cached (FindCoordinator) decodes every time
            f1 = await a.request(10, 4, {"key_type": 0, "coordinator_keys": ["x"]})
            f2 = await b.request(10, 4, {"key_type": 0, "coordinator_keys": ["x"]})
            assert f1 == f2 and f1 is not f2
        finally:
            a.close()
            b.close()


def test_topic_tables_are_shared_for_one_entry_and_rebuilt_for_a_changed_one():
    entry = {"name": "t", "error_code": 0, "partitions": [
        {"partition_index": i, "error_code": 0, "leader_id": i % 2, "replica_nodes": [i % 2, 1 - i % 2]}
        for i in range(3)]}
    leaders, replicas, unled = _topic_tables(entry)
    assert leaders == {0: 0, 1: 1, 2: 0} and replicas[1] == (1, 0) and not unled
    assert _topic_tables(entry)[0] is leaders              # one entry, one table, for every member
    entry["partitions"].append({"partition_index": 3, "error_code": 5, "leader_id": -1, "replica_nodes": [0]})
    leaders2, _, unled2 = _topic_tables(entry)             # the entry grew: built afresh
    assert leaders2 is not leaders and leaders2[3] == -1 and unled2
    copy = {**entry, "partitions": list(entry["partitions"])}
    assert _topic_tables(copy)[0] is not leaders2          # an equal but distinct entry: its own table
