"""The asyncio driver (GroupConsumer) against our real TCP coordinator (embed.running)."""
from __future__ import annotations

import asyncio

import pytest

from groupcoord.client import FatalConsumerError, GroupConsumer, OffsetAndMetadata
from groupcoord.client.assignors import CooperativeStickyAssignor, RangeAssignor
from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.client.connection import BrokerConnection
from groupcoord.coordinator.embed import running
from groupcoord.protocol import records as rc
from groupcoord.protocol.errors import ErrorCode

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "retry.backoff.ms": 50}


_OPEN: list[GroupConsumer] = []


@pytest.fixture(autouse=True)
async def close_consumers():
    """Whatever a test did, its consumers are closed (a failed test must not leave pumps running)."""
    _OPEN.clear()
    yield
    for c in _OPEN:
        try:
            await asyncio.wait_for(c.close(timeout=1), 5)
        except Exception:
            pass
    _OPEN.clear()


def consumer(gc, *topics, group="grp", **cfg):
    config = {"bootstrap.servers": gc.bootstrap_servers, "group.id": group, **FAST}
    config.update({k.replace("_", "."): v for k, v in cfg.pop("config", {}).items()})
    c = GroupConsumer(*topics, config=config, **cfg)
    _OPEN.append(c)
    return c


async def stable(gc, consumers, group="grp", timeout=20.0):
    """Poll every consumer until the coordinator is Stable with all of them and each one's
    assignment is the group's partitioning of its topics."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    topics = set().union(*(c.subscription() for c in consumers))
    expected = {TP(t, p) for t in topics for p in range(gc.service.partition_count(t))}
    while True:
        await asyncio.gather(*(c.poll(0.02) for c in consumers))
        g = gc.service.group_coordinator.group(group)
        owned = [tp for c in consumers for tp in c.assignment()]
        if (g is not None and g.state == "Stable" and len(g.members) == len(consumers)
                and all(c.member.stable and c.member.generation_id == g.generation_id for c in consumers)
                and len(owned) == len(set(owned)) and set(owned) == expected):
            return g
        if loop.time() > deadline:
            raise AssertionError(f"not stable: {g!r} {[c.member for c in consumers]}")


def produce(gc, topic, partition, values):
    batch = rc.encode_batch([rc.Record(i, 0, None, v.encode()) for i, v in enumerate(values)])
    code, base = gc.service.cluster.append(topic, partition, batch)
    assert code == 0
    return base


class Listener:
    def __init__(self):
        self.calls = []

    def on_partitions_revoked(self, partitions):
        self.calls.append(("revoked", frozenset(partitions)))

    async def on_partitions_assigned(self, partitions):
        await asyncio.sleep(0)
        self.calls.append(("assigned", frozenset(partitions)))


async def test_connection_negotiates_api_versions_and_matches_responses():
    async with running(topics={"t": 1}) as gc:
        host, port = gc.bootstrap_servers.split(":")
        conn = await BrokerConnection(host, int(port)).connect()
        assert conn.api_versions[11] == (0, 9)
        # pipelined requests come back to the right futures
        futs = [conn.send(3, 12, {"topics": [{"name": "t"}], "allow_auto_topic_creation": False,
                                  "include_topic_authorized_operations": False}) for _ in range(3)]
        futs.append(conn.send(10, 4, {"key_type": 0, "coordinator_keys": ["x"]}))
        bodies = await asyncio.gather(*futs)
        assert all(b["topics"][0]["name"] == "t" for b in bodies[:3])
        assert bodies[3]["coordinators"][0]["key"] == "x"
        conn.close()
        # a broker that does not speak ApiVersions v3 answers v0; we retry at its version
        conn = await BrokerConnection(host, int(port)).connect(api_versions_max=3)
        assert conn.api_versions
        conn.close()


async def test_three_consumers_form_a_group_consume_commit_and_rebalance():
    async with running(topics={"orders": 6}) as gc:
        listeners = [Listener() for _ in range(3)]
        cs = [consumer(gc, "orders", listener=listeners[i], client_id=f"c{i}",
                       config={"auto.offset.reset": "earliest", "enable.auto.commit": False})
              for i in range(3)]
        for c in cs:
            await c.start()
        g = await stable(gc, cs)
        assert sorted(len(c.assignment()) for c in cs) == [2, 2, 2]
        assert g.protocol_name == "range"                 # Kafka's default: [range, cooperative-sticky]
        for p in range(6):                                 # produced now: stable() drops what it polls
            produce(gc, "orders", p, [f"p{p}-{i}" for i in range(3)])
        # consume everything, each from its own partitions
        got = {i: [] for i in range(3)}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while sum(len(v) for v in got.values()) < 18 and loop.time() < deadline:
            for i, c in enumerate(cs):
                got[i] += await c.poll(0.02)
        for i, c in enumerate(cs):
            assert {(r.topic, r.partition) for r in got[i]} <= c.assignment()
        assert sorted(r.value.decode() for v in got.values() for r in v) == sorted(
            f"p{p}-{i}" for p in range(6) for i in range(3))
        # commits: sync (consumed positions), async with a callback, committed()
        await cs[0].commit()
        done = asyncio.get_running_loop().create_future()
        tp = sorted(cs[1].assignment())[0]
        cs[1].commit_async({tp: OffsetAndMetadata(2, "half")}, lambda offsets, err: done.set_result((offsets, err)))
        offsets, err = await asyncio.wait_for(done, 5)
        assert err is None and offsets == {tp: OffsetAndMetadata(2, "half")}
        mine = sorted(cs[0].assignment())
        committed = await cs[2].committed(mine + [tp])
        assert committed[tp] == OffsetAndMetadata(2, "half")
        assert all(committed[x].offset == 3 for x in mine)
        # one leaves: the other two take its partitions, starting from its commits
        leaving = cs[0]
        await leaving.close()
        assert listeners[0].calls[-1] == ("revoked", frozenset(mine))
        await stable(gc, cs[1:])
        assert sorted(len(c.assignment()) for c in cs[1:]) == [3, 3]
        for c in cs[1:]:
            moved = set(mine) & c.assignment()
            await c.wait_for(lambda: all(c.position(x) is not None for x in moved))
            assert all(c.position(x) == 3 for x in moved)       # from cs[0]'s commit
        for lst in listeners[1:]:
            kinds = [k for k, _ in lst.calls]
            # first join: nothing to revoke (no generation yet); eager rebalance: revoke all, assign
            assert kinds[0] == "assigned" and kinds[-2:] == ["revoked", "assigned"]
        for c in cs[1:]:
            await c.close()
        assert gc.service.group_coordinator.group("grp").state == "Empty"


async def test_cooperative_consumers_over_tcp_rebalance_incrementally():
    async with running(topics={"t": 6}) as gc:
        cs = [consumer(gc, "t", client_id=f"c{i}", assignors=[CooperativeStickyAssignor()],
                       config={"enable.auto.commit": True, "auto.commit.interval.ms": 100})
              for i in range(3)]
        await cs[0].start()
        await stable(gc, cs[:1])
        first = cs[0].assignment()
        await cs[1].start()
        await cs[2].start()
        await stable(gc, cs)
        # cs[0] only ever gave partitions away; it never got everything revoked
        revoked = [p for k, p in cs[0].rebalance_log if k == "revoked"]
        assert revoked and all(p and p < first for p in revoked), (first, [c.rebalance_log for c in cs])
        assert cs[0].assignment() <= first
        for c in cs:
            await c.close()


async def test_fatal_error_is_raised_by_poll():
    async with running(topics={"t": 2}) as gc:
        a = consumer(gc, "t", config={"group.instance.id": "same"})
        await a.start()
        await stable(gc, [a])
        b = consumer(gc, "t", config={"group.instance.id": "same"})
        await b.start()
        with pytest.raises(FatalConsumerError) as info:
            for _ in range(200):
                await a.poll(0.05)
        assert info.value.code == ErrorCode.FENCED_INSTANCE_ID
        with pytest.raises(FatalConsumerError):
            await a.commit()
        await stable(gc, [b])
        await a.close()
        await b.close()


async def test_session_ends_when_the_coordinator_goes_away():
    async with running(topics={"t": 2}) as gc:
        a = consumer(gc, "t", assignors=[RangeAssignor()], config={"session.timeout.ms": 1500})
        await a.start()
        await stable(gc, [a])
        owned = a.assignment()
        await gc.server.stop()                      # every connection drops, nobody answers
        await a.wait_for(lambda: ("lost", frozenset(owned)) in a.rebalance_log, timeout=10)
        assert a.assignment() == set()
        await a.close(timeout=1)


async def test_three_nodes_fetch_from_each_leader_and_commit_inside_the_revoke_callback():
    async with running(nodes=3, topics={"t": 6}) as gc:
        committed_in_callback = []

        class CommitOnRevoke:
            def __init__(self):
                self.consumer = None

            async def on_partitions_revoked(self, partitions):
                if partitions:
                    mine = {tp: self.consumer.position(tp) for tp in partitions}
                    await self.consumer.commit(mine)        # a sync commit inside the callback
                    committed_in_callback.append(mine)

            def on_partitions_assigned(self, partitions):
                pass
        listener = CommitOnRevoke()
        a = consumer(gc, "t", listener=listener, client_id="a",
                     config={"auto.offset.reset": "earliest", "enable.auto.commit": False})
        listener.consumer = a
        await a.start()
        await stable(gc, [a])
        for p in range(6):                      # produced now: stable() polls (and drops) records
            produce(gc, "t", p, [f"{p}:{i}" for i in range(4)])
        got = []
        for _ in range(200):
            got += await a.poll(0.05)
            if len(got) == 24:
                break
        assert sorted(r.value for r in got) == sorted(f"{p}:{i}".encode() for p in range(6) for i in range(4))
        leaders = {tp.partition % 3 for tp in a.assignment()}
        broker_conns = [c for c in a.member.net.conns.values() if isinstance(c.key, tuple)]
        assert leaders == {0, 1, 2} and {c.node_id for c in broker_conns} == {0, 1, 2}
        coordinator = gc.service.cluster.coordinator_for("grp")
        assert a.member.coordinator[0] == coordinator
        b = consumer(gc, "t", client_id="b", config={"auto.offset.reset": "earliest", "enable.auto.commit": False})
        await b.start()
        await stable(gc, [a, b])
        assert committed_in_callback and all(off == 4 for off in committed_in_callback[0].values())
        await b.wait_for(lambda: all(b.position(tp) == 4 for tp in b.assignment()))
        assert await b.poll(0.2) == []                      # b starts after what a consumed
        await a.close()
        await b.close()
