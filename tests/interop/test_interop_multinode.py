"""Three emulated brokers: every group lives on the node that Kafka's placement names, and clients
find it with FindCoordinator.

The coordinator of group g is the leader of partition abs(javaHash(g)) % offsets.topic.num.partitions
of __consumer_offsets, and partition p is led by node p % 3 (Kafka's Utils.abs maps
Integer.MIN_VALUE to 0). The expectation is computed here, independently of coordinator/cluster.py.
Several groups of different clients (librdkafka, kafka-python, aiokafka, and KafkaJS when it is
installed) run at once, their partitions' leaders spread over the three nodes; a spy on the
service notes which node received each group request and what FindCoordinator answered.
"""
from __future__ import annotations

import pytest

from clients import (TOPICS, ConfluentDriver, RequestSpy, all_partitions, assert_exactly_once, kafkajs_available,
                     wait_covered, wait_until)

pytestmark = pytest.mark.interop

NODES = 3


def java_hash(s: str) -> int:
    h = 0
    for ch in s:                    # BMP only: one UTF-16 code unit per character
        assert ord(ch) < 0x10000
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def expected_node(group_id: str, offsets_partitions: int = 50) -> int:
    h = java_hash(group_id)
    partition = (0 if h == -2**31 else abs(h)) % offsets_partitions
    return partition % NODES


def test_java_hash_reference_values():
    assert java_hash("hello") == 99162322
    assert java_hash("Aa") == java_hash("BB") == 2112
    assert java_hash("polygenelubricants") == -2**31


# group -> (client, members); two groups per node, two of them with a negative hash
PLAN = {
    "multinode-0": ("confluent-kafka", 2),
    "multinode-1": ("kafka-python", 2),
    "multinode-2": ("aiokafka", 1),
    "multinode-10": ("confluent-kafka", 1),
    "multinode-11": ("aiokafka", 2),
    "multinode-3": ("kafka-python", 1),
}
# with KafkaJS installed (make js), two more groups, one on node 0 and one on node 1
KAFKAJS_PLAN = {"multinode-4": ("kafkajs", 2), "multinode-5": ("kafkajs", 1)}
STRATEGY = {"confluent-kafka": "roundrobin", "kafka-python": "range", "aiokafka": "roundrobin",
            "kafkajs": "RoundRobinAssigner"}


def test_plan_covers_every_node():
    nodes = [expected_node(g) for g in PLAN]
    assert sorted(nodes) == [0, 0, 1, 1, 2, 2]
    assert any(java_hash(g) < 0 for g in PLAN)
    assert sorted(expected_node(g) for g in KAFKAJS_PLAN) == [0, 1]


def test_groups_live_on_the_node_the_hash_names(coord, driver_for, closing):
    plan = {**PLAN, **(KAFKAJS_PLAN if kafkajs_available() else {})}
    c = coord(nodes=NODES)
    assert len(c.bootstrap.split(",")) == NODES
    spy = RequestSpy(c)
    for g in plan:
        assert c.gc.call(c.gc.service.cluster.coordinator_for, g) == expected_node(g)

    drivers = {client: driver_for(client, c.bootstrap) for client, _ in plan.values()}
    topics = sorted(TOPICS)
    groups: dict[str, list] = {}
    for g, (client, n) in plan.items():
        groups[g] = [closing(drivers[client].member(f"{g}-{i}", g, topics, STRATEGY[client])).start()
                     for i in range(n)]
    for g, members in groups.items():
        view = wait_covered(c, g, members)
        assert view.protocol == STRATEGY[plan[g][0]]

    # partitions are led by all three nodes: every group consumes everything, exactly once
    produced = drivers["confluent-kafka"].produce(
        [(t, p, f"multinode/{i}") for i, (t, p) in enumerate(sorted(all_partitions()) * 3)])
    for g, members in groups.items():
        wait_until(lambda: sum(len(m.consumed()) for m in members) >= len(produced),
                   message=f"{g} consumed everything")
        assert_exactly_once([r for m in members for r in m.consumed()], produced)
    for members in groups.values():
        for m in members:
            m.close()

    end = {tp: 0 for tp in all_partitions()}
    for r in produced:
        end[r.tp] = max(end[r.tp], r.offset + 1)
    reader = ConfluentDriver(c.bootstrap)
    for g in plan:
        assert reader.committed(g, sorted(all_partitions())) == end

    seen = spy.snapshot()
    nodes = c.gc.service.cluster.nodes
    for g in plan:
        node = expected_node(g)
        found = [s for s in seen if s.api == "FindCoordinator" and s.group == g]
        assert found, f"nobody looked {g} up"
        for s in found:
            assert s.error == 0 and s.response["node_id"] == node, s
            assert s.response["port"] == nodes[node].port
        requests = [s for s in seen if s.api != "FindCoordinator" and s.group == g]
        misrouted = [s for s in requests if s.node != node]
        assert not misrouted, f"{g} (node {node}) requests sent elsewhere: {misrouted}"
        ok_apis = {s.api for s in requests if s.error == 0}
        assert {"JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch"} <= ok_apis, (g, ok_apis)


def test_min_value_hash_maps_to_partition_zero(coord, closing):
    """javaHash("polygenelubricants") is Integer.MIN_VALUE: Kafka's Utils.abs makes it 0, so with 7
    offsets partitions the group lives on node 0 (a plain abs would give 2**31 % 7 = 2: node 2)."""
    c = coord(nodes=NODES, config={"offsets.topic.num.partitions": 7})
    group = "polygenelubricants"
    assert expected_node(group, 7) == 0
    spy = RequestSpy(c)
    driver = closing(ConfluentDriver(c.bootstrap))
    member = closing(driver.member("pgl-0", group, sorted(TOPICS), "range")).start()
    wait_covered(c, group, [member])
    seen = [s for s in spy.snapshot() if s.group == group]
    assert {s.node for s in seen if s.api == "JoinGroup"} == {0}
    assert all(s.response["node_id"] == 0 for s in seen if s.api == "FindCoordinator")
