"""The asyncio driver (GroupConsumer) with group.protocol=consumer against our real TCP coordinator."""
from __future__ import annotations

import asyncio

import pytest

from groupcoord.client import GroupConsumer
from groupcoord.client.assignors.base import TopicPartition as TP
from groupcoord.client.consumer_config import ConfigError
from groupcoord.client.member.consumer_protocol import CState
from groupcoord.coordinator.embed import running


class Listener:
    def __init__(self):
        self.calls = []

    def on_partitions_revoked(self, partitions):
        self.calls.append(("revoked", frozenset(partitions)))

    def on_partitions_assigned(self, partitions):
        self.calls.append(("assigned", frozenset(partitions)))


async def settled(gc, consumers, group="grp", timeout=20.0):
    """Poll every consumer until the consumer group is at one epoch with all of them reconciled
    to it and their assignments a partitioning of the topic."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    topics = set().union(*(c.subscription() for c in consumers))
    expected = {TP(t, p) for t in topics for p in range(gc.service.partition_count(t))}
    while True:
        await asyncio.gather(*(c.poll(0.02) for c in consumers))
        g = gc.service.group_coordinator.consumer_group(group)
        owned = [tp for c in consumers for tp in c.assignment()]
        if (g is not None and len(g.members) == len(consumers)
                and all(c.member.stable and c.member.membership.cstate is CState.STABLE
                        and g.members.get(c.member.member_id) is not None
                        and g.members[c.member.member_id].reconciled_to(g.group_epoch) for c in consumers)
                and len(owned) == len(set(owned)) and set(owned) == expected):
            return g
        if loop.time() > deadline:
            raise AssertionError(f"not settled: {g!r} {[c.member for c in consumers]}")


async def test_two_group_consumers_split_a_topic_with_the_consumer_protocol():
    async with running(topics={"orders": 6}) as gc:
        listeners = [Listener(), Listener()]
        cs = [GroupConsumer("orders", listener=listeners[i], bootstrap_servers=gc.bootstrap_servers,
                            group_id="grp", client_id=f"c{i}", group_protocol="consumer",
                            group_remote_assignor="range", enable_auto_commit=False) for i in range(2)]
        try:
            await cs[0].start()
            await settled(gc, cs[:1])
            assert cs[0].assignment() == {TP("orders", p) for p in range(6)}
            await cs[1].start()
            g = await settled(gc, cs)
            assert sorted(len(c.assignment()) for c in cs) == [3, 3]
            assert not cs[0].assignment() & cs[1].assignment()
            assert {m.member_id for m in g.members.values()} == {c.member.member_id for c in cs}
            # the first gave up exactly what the second got, nothing more
            assert ("revoked", frozenset(cs[1].assignment())) in listeners[0].calls
            assert [k for k, _ in listeners[0].calls] == ["assigned", "revoked", "assigned"]
            # one leaves (epoch -1): the other takes everything
            await cs[0].close()
            await settled(gc, cs[1:])
            assert cs[1].assignment() == {TP("orders", p) for p in range(6)}
        finally:
            for c in cs:
                await asyncio.wait_for(c.close(timeout=1), 5)


def test_group_consumer_refuses_classic_settings_with_the_consumer_protocol():
    with pytest.raises(ConfigError, match="session.timeout.ms cannot be set when group.protocol=CONSUMER"):
        GroupConsumer("orders", bootstrap_servers="localhost:9092", group_id="grp", group_protocol="consumer",
                      session_timeout_ms=10000)


async def test_a_group_consumer_subscribed_to_a_pattern_gets_the_matching_topics():
    async with running(topics={"orders-eu": 2, "orders-us": 1, "payments": 2}) as gc:
        c = GroupConsumer(pattern="orders-.*", bootstrap_servers=gc.bootstrap_servers, group_id="grp",
                          client_id="c0", group_protocol="consumer", enable_auto_commit=False)
        try:
            await c.start()
            expected = {TP("orders-eu", 0), TP("orders-eu", 1), TP("orders-us", 0)}
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while not (c.assignment() == expected and c.member.stable
                       and c.member.membership.cstate is CState.STABLE):
                assert loop.time() < deadline, repr(c.member)
                await c.poll(0.02)
            assert c.subscription() == set() and c.subscription_pattern() == "orders-.*"
            g = gc.service.group_coordinator.consumer_group("grp")
            assert g.members[c.member.member_id].subscribed_topic_regex == "orders-.*"
        finally:
            await asyncio.wait_for(c.close(timeout=1), 5)


def test_group_consumer_subscribe_takes_topics_or_a_pattern_and_classic_refuses_a_pattern():
    from groupcoord.client import UnsupportedOperationError
    c = GroupConsumer(bootstrap_servers="localhost:9092", group_id="grp")
    with pytest.raises(UnsupportedOperationError, match="not supported when using the CLASSIC protocol"):
        c.subscribe(pattern="t.*")
    with pytest.raises(UnsupportedOperationError):
        GroupConsumer(pattern="t.*", bootstrap_servers="localhost:9092", group_id="grp")
    with pytest.raises(ValueError):
        c.subscribe(["t"], pattern="t.*")
    k = GroupConsumer(bootstrap_servers="localhost:9092", group_id="grp", group_protocol="consumer")
    k.subscribe(pattern="t.*")
    assert k.subscription_pattern() == "t.*" and k.subscription() == set()
    k.subscribe(["t"])
    assert k.subscription_pattern() is None and k.subscription() == {"t"}
