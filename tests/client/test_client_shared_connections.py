"""One connection per address (GroupConsumer(share_connections=True)) and decoded answers shared
between connections (ResponseCache), against our real TCP coordinator (embed.running)."""
from __future__ import annotations

import asyncio

from groupcoord.client import GroupConsumer
from groupcoord.client.assignors import RangeAssignor
from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.client.connection import BrokerConnection, ResponseCache
from groupcoord.client.member import _topic_tables
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


async def _consume(consumer, want, timeout=15.0):
    got = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(got) < want:
        got += await consumer.poll(0.05)
        assert loop.time() < deadline, f"only {len(got)} of {want} records"
    return got


async def _run_one(gc, *, share, client_id):
    c = GroupConsumer("t", config={"bootstrap.servers": gc.bootstrap_servers, "group.id": client_id,
                                   "client.id": client_id, **FAST},
                      assignors=[RangeAssignor()], share_connections=share)
    await c.start()
    try:
        records = await _consume(c, 6)                  # Metadata, group, OffsetFetch, ListOffsets, Fetch
        await c.commit()
        conns = _client_conns(gc, client_id)
        committed = await c.committed([TP("t", 0), TP("t", 1)])
        return c, records, conns, committed
    except BaseException:
        await c.close(timeout=1)
        raise


async def test_a_shared_consumer_uses_one_connection_where_the_java_layout_uses_three():
    async with running(topics={"t": 2}) as gc:
        for p in (0, 1):
            _produce(gc, "t", p, 3)
        shared, records, conns, committed = await _run_one(gc, share=True, client_id="shared")
        assert len(records) == 6
        assert len(conns) == 1                           # bootstrap, broker and coordinator on it
        assert {tp: v.offset for tp, v in committed.items()} == {TP("t", 0): 3, TP("t", 1): 3}
        await shared.close(timeout=2)
        separate, records, conns, _ = await _run_one(gc, share=False, client_id="separate")
        assert len(records) == 6
        assert len(conns) == 3                           # one per role, as Kafka's Java client
        await separate.close(timeout=2)
        # a closed shared consumer left its group (LeaveGroup went out on the shared connection)
        assert gc.service.group_coordinator.group("shared").state == "Empty"


async def test_losing_the_shared_connection_tells_every_role_and_the_member_carries_on():
    async with running(topics={"t": 2}) as gc:
        c = GroupConsumer("t", config={"bootstrap.servers": gc.bootstrap_servers, "group.id": "g",
                                       "client.id": "solo", **FAST},
                          assignors=[RangeAssignor()], share_connections=True)
        await c.start()
        try:
            await c.wait_for(lambda: c.member.stable and len(c.assignment()) == 2)
            [conn] = _client_conns(gc, "solo")
            roles = set(c._conns)
            assert len(roles) >= 2 and len({id(x) for x in c._conns.values()}) == 1
            assert gc.server.drop_connections(client_id="solo") == 1
            # every member connection on it is gone at once, then a new shared one carries on
            await c.wait_for(lambda: not (roles & set(c._conns)), timeout=5, poll=False)
            _produce(gc, "t", 0, 2)
            await c.wait_for(lambda: (len(_client_conns(gc, "solo")) == 1
                                      and _client_conns(gc, "solo")[0] is not conn), timeout=10)
            await c.commit({TP("t", 0): 1})
            assert (await c.committed([TP("t", 0)]))[TP("t", 0)].offset == 1
            assert len(_client_conns(gc, "solo")) == 1
        finally:
            await c.close(timeout=2)


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
