"""Our member against librdkafka's built-in mock cluster (an independent group coordinator).

The mock cluster lives in the librdkafka that confluent-kafka ships (rdkafka_mock.py beside
this file reaches it through ctypes). It advertises its own, older API ranges (JoinGroup 0-6,
FindCoordinator 0-3, OffsetFetch 0-6 ...), so this also checks version negotiation.

The mock advertises flexible versions of some group APIs it cannot parse: it reads the
protocol and assignment counts of JoinGroup v6 and SyncGroup v4 as int32 (compact arrays on
the wire) and LeaveGroup v3+ as a single member id (a batch on the wire), and closes the
connection ("Parse error"). librdkafka's own client never sends those versions, so the
members here are capped at what librdkafka uses: JoinGroup 5, SyncGroup 3, LeaveGroup 1.

Members of the consumer protocol (KIP-848) meet other deviations of the mock: see
test_consumer_protocol_members_split_a_topic_on_the_mock_cluster.
"""
from __future__ import annotations

import asyncio

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from rdkafka_mock import MockCluster  # noqa: E402

from groupcoord.client import GroupConsumer, OffsetAndMetadata  # noqa: E402
from groupcoord.protocol.errors import ErrorCode, KafkaError  # noqa: E402
from groupcoord.client.assignors import CooperativeStickyAssignor, RangeAssignor  # noqa: E402
from groupcoord.client.assignors.base import TopicPartition as TP  # noqa: E402
from groupcoord.client.member.consumer_protocol import CState  # noqa: E402
from groupcoord.client.member import (  # noqa: E402
    FIND_COORDINATOR, HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP,
)

#: what librdkafka's client sends; see the module docstring
MOCK_CAPS = {JOIN_GROUP: 5, SYNC_GROUP: 3, LEAVE_GROUP: 1}


@pytest.fixture
def mock():
    cluster = MockCluster(brokers=1)
    cluster.create_topic("t", 4)
    yield cluster
    cluster.close()


_OPEN: list[GroupConsumer] = []


@pytest.fixture(autouse=True)
async def close_consumers(mock):
    """Whatever a test did, its consumers are closed (a failed test must not leave pumps running)."""
    _OPEN.clear()
    yield
    for c in _OPEN:
        try:
            await asyncio.wait_for(c.close(timeout=1), 5)
        except Exception:
            pass
    _OPEN.clear()


def consumer(mock, group="mockgrp", **kw):
    config = {"bootstrap.servers": mock.bootstrap_servers, "group.id": group, "session.timeout.ms": 3500,
              "heartbeat.interval.ms": 300, "retry.backoff.ms": 50, "enable.auto.commit": False,
              "auto.offset.reset": "earliest"}
    config.update(kw.pop("config", {}))
    c = GroupConsumer("t", config=config, max_versions=MOCK_CAPS, **kw)
    _OPEN.append(c)
    return c


async def wait_split(cs, total, timeout=20.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await asyncio.gather(*(c.poll(0.05) for c in cs))
        owned = [tp for c in cs for tp in c.assignment()]
        if (len(owned) == total == len(set(owned)) and all(c.member.stable for c in cs)
                and len({c.member.generation_id for c in cs}) == 1):
            return
        if loop.time() > deadline:
            raise AssertionError(f"no split: {[c.member for c in cs]}")


def record_versions(c) -> dict:
    """api key -> versions the member sent."""
    used: dict[int, set] = {}
    orig = c.member.net.send

    def spy(key, api_key, build, handler, now, **kw):
        rid = orig(key, api_key, build, handler, now, **kw)
        if rid is not None:
            used.setdefault(api_key, set()).add(c.member.net.inflight[rid].version)
        return rid
    c.member.net.send = spy
    return used


async def test_member_forms_a_group_commits_and_fetches_offsets_on_the_mock_cluster(mock):
    a = consumer(mock, assignors=[RangeAssignor()], client_id="ours-a")
    used = record_versions(a)
    await a.start()
    await wait_split([a], 4)
    assert a.member.generation_id >= 1 and a.member.is_leader
    tps = sorted(a.assignment())
    await a.commit({tp: OffsetAndMetadata(10 + tp.partition, "m") for tp in tps})
    got = await a.committed(tps)
    assert {tp: (om.offset, om.metadata) for tp, om in got.items()} == {tp: (10 + tp.partition, "m") for tp in tps}
    # the mock answers a partition that does not exist with UNKNOWN_TOPIC_OR_PARTITION, which
    # fails the call, as in Kafka's client
    with pytest.raises(KafkaError) as info:
        await a.committed([TP("t", 99)])
    assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # a second member: the mock rebalances, the newcomer starts from the committed offsets
    b = consumer(mock, assignors=[RangeAssignor()], client_id="ours-b")
    await b.start()
    await wait_split([a, b], 4)
    assert len(a.assignment()) == len(b.assignment()) == 2
    await b.wait_for(lambda: all(b.position(tp) is not None for tp in b.assignment()))
    assert {tp: b.position(tp) for tp in b.assignment()} == {tp: 10 + tp.partition for tp in b.assignment()}
    await b.close()
    await wait_split([a], 4)
    await a.close()
    # the highest versions both sides speak, within the caps: the mock's FindCoordinator tops
    # out at 3 (single key), OffsetFetch at 6 (single group), OffsetCommit at 9
    mock_max = {FIND_COORDINATOR: 3, OFFSET_FETCH: 6, OFFSET_COMMIT: 9, HEARTBEAT: 4}
    for key, hi in {**mock_max, **MOCK_CAPS}.items():
        assert used.get(key, {hi}) == {hi}, (key, used.get(key))
    assert used[JOIN_GROUP] == {5} and used[OFFSET_FETCH] == {6}


async def test_cooperative_members_on_the_mock_cluster(mock):
    cs = [consumer(mock, group="coop", assignors=[CooperativeStickyAssignor()], client_id=f"c{i}") for i in range(2)]
    await cs[0].start()
    await wait_split(cs[:1], 4)
    await cs[1].start()
    await wait_split(cs, 4)
    assert sorted(len(c.assignment()) for c in cs) == [2, 2]
    assert all(set(p) <= {TP("t", i) for i in range(4)} for k, p in cs[0].rebalance_log if k == "revoked")
    assert not any(k == "lost" for c in cs for k, _ in c.rebalance_log)
    for c in cs:
        await c.close()



def librdkafka_subscription(c):
    """Our heartbeats as librdkafka's client shapes them: an empty SubscribedTopicRegex sent along
    with SubscribedTopicNames (the mock aborts the process on names without a regex)."""
    build = c.member.heartbeat.build

    def shaped():
        body = build()
        if "subscribed_topic_names" in body:
            body.setdefault("subscribed_topic_regex", "")
        return body
    c.member.heartbeat.build = shaped



def answers(c) -> list[dict]:
    """The ConsumerGroupHeartbeat responses the member got, in order."""
    got: list[dict] = []
    on_heartbeat = c.member.heartbeat.on_heartbeat

    def spy(resp, req, now):
        if resp is not None:
            got.append(resp)
        return on_heartbeat(resp, req, now)
    c.member.heartbeat.on_heartbeat = spy
    return got


async def wait_consumer_split(cs, total, timeout=20.0):
    """Until the members' assignments partition the topic's ``total`` partitions and each is
    STABLE at one member epoch."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await asyncio.gather(*(c.poll(0.05) for c in cs))
        owned = [tp for c in cs for tp in c.assignment()]
        if (len(owned) == total == len(set(owned)) and all(c.assignment() for c in cs)
                and all(c.member.membership.cstate is CState.STABLE for c in cs)
                and len({c.member.membership.epoch for c in cs}) == 1):
            return
        if loop.time() > deadline:
            raise AssertionError(f"no split: {[(c.member, c.member.membership.cstate) for c in cs]}")


async def test_consumer_protocol_members_split_a_topic_on_the_mock_cluster(mock):
    """Two of our members with group.protocol=consumer (KIP-848) on the mock: each gets two of the
    four partitions, then the one left takes all four.

    The mock's deviations from Kafka's brokers, as found here (librdkafka 2.16):

    - it aborts the whole process (an assert in validate_subscription) on a heartbeat that carries
      SubscribedTopicNames without SubscribedTopicRegex, which Kafka's Java client sends for a
      subscription to names; librdkafka's client sends an empty regex along. Our members here do
      the same (``librdkafka_subscription``);
    - a member joining a running group whose partitions must first be revoked from the others is
      answered with member epoch 0 and no assignment (a Kafka broker answers a join with a new
      epoch and an assignment, empty if need be); the member must stay joining and send the full
      join again, at once as Kafka's does, until it gets its epoch and partitions;
    - its group epochs start at 2, and its consumer heartbeat interval is 3 s unless set
      (``set_group_consumer_heartbeat_interval_ms``, 200 ms here).
    """
    mock.set_group_consumer_heartbeat_interval_ms(200)
    cs = [GroupConsumer("t", bootstrap_servers=mock.bootstrap_servers, group_id="kip848", client_id=f"k{i}",
                        group_protocol="consumer", enable_auto_commit=False, retry_backoff_ms=50)
          for i in range(2)]
    _OPEN.extend(cs)
    got = []
    for c in cs:
        librdkafka_subscription(c)
        got.append(answers(c))
    await cs[0].start()
    await wait_consumer_split(cs[:1], 4)
    assert cs[0].assignment() == {TP("t", p) for p in range(4)}
    assert got[0][0]["member_epoch"] == 2 and got[0][0]["heartbeat_interval_ms"] == 200
    await cs[1].start()
    await wait_consumer_split(cs, 4)
    assert sorted(len(c.assignment()) for c in cs) == [2, 2]
    assert not cs[0].assignment() & cs[1].assignment()
    # the newcomer: epoch 0 without an assignment first (again for each full join, sent at once
    # as Kafka's JOINING member does, until the other revoked), then its epoch and an assignment
    first = got[1][0]
    assert (first["error_code"], first["member_epoch"], first["assignment"]) == (0, 0, None)
    k = next(i for i, r in enumerate(got[1]) if r["member_epoch"] > 0)
    assert all((r["error_code"], r["member_epoch"], r["assignment"]) == (0, 0, None) for r in got[1][:k])
    assert got[1][k]["assignment"] is not None
    assert [k for k, _ in cs[0].rebalance_log] == ["assigned", "revoked", "assigned"]
    assert [k for k, _ in cs[1].rebalance_log] == ["assigned"]
    # one leaves (epoch -1): the other takes everything
    await cs[0].close()
    await wait_consumer_split(cs[1:], 4)
    assert cs[1].assignment() == {TP("t", p) for p in range(4)}
    await cs[1].close()
