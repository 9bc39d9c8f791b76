"""Rack-aware sticky assignment (KIP-881): Kafka's AbstractStickyAssignorTest
testRackAwareAssignmentWithUniformSubscription / ...WithNonEqualSubscription, as facts, plus
validity on random rack layouts."""
from __future__ import annotations

import random

import pytest

from groupcoord.client.assignors import (ClusterMetadata, CooperativeStickyAssignor,
                                         GroupSubscription, StickyAssignor, Subscription,
                                         TopicPartition)

ALL_RACKS = ["a", "b", "c", "d", "e", "f"]


def racks(n):
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n):
    return [None] * n


def cluster_with_racks(ppt, replication, broker_racks):
    """AbstractPartitionAssignorTest.partitionsPerTopic (topics in the given order)."""
    rack_map = {}
    offset = 0
    for topic, n in ppt.items():
        for i in range(n):
            rs = {broker_racks[(i + j + offset) % len(broker_racks)] for j in range(replication)}
            rack_map[TopicPartition(topic, i)] = frozenset(r for r in rs if r is not None)
        offset += n
    return ClusterMetadata(ppt, rack_map)


def parse(spec):
    out = []
    for item in filter(None, (x.strip() for x in spec.split(","))):
        t, p = item.rsplit("-", 1)
        out.append(TopicPartition(t, int(p)))
    return out


def verify(assignor, ppt, replication, broker_racks, consumer_racks, consumer_topics, owned,
           expected, mismatches):
    """AbstractPartitionAssignorTest.verifyRackAssignment."""
    cluster = cluster_with_racks(ppt, replication, broker_racks)
    subs = {}
    for i, (topics, rack) in enumerate(zip(consumer_topics, consumer_racks)):
        mine = parse(owned[i]) if owned and i < len(owned) else []
        subs[f"consumer{i}"] = Subscription(list(topics), None, mine, -1, rack)
    result = assignor.assign(cluster, GroupSubscription(subs)).assignments
    actual = [", ".join(sorted(f"{tp.topic}-{tp.partition}" for tp in result[f"consumer{i}"].partitions))
              for i in range(len(subs))]
    assert actual == list(expected)
    if mismatches >= 0:
        bad = sum(1 for i, r in enumerate(consumer_racks) if r is not None
                  for tp in result[f"consumer{i}"].partitions if r not in cluster.partition_racks(tp))
        assert bad == mismatches


@pytest.fixture(params=["sticky", "cooperative"])
def assignor(request):
    return StickyAssignor() if request.param == "sticky" else CooperativeStickyAssignor()


def test_rack_aware_assignment_with_uniform_subscription(assignor):
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    topics = [["t1", "t2", "t3"]] * 3
    non_rack = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]

    def uniform(rf, brokers, consumers, expected, mismatches):
        verify(assignor, ppt, rf, brokers, consumers, topics, None, expected, mismatches)
        verify(assignor, ppt, rf, brokers, consumers, topics, expected, expected, mismatches)

    uniform(3, null_racks(3), racks(3), non_rack, -1)
    uniform(3, racks(3), null_racks(3), non_rack, -1)
    assignor.prefer_rack_aware = True
    uniform(3, racks(3), racks(3), non_rack, 0)
    uniform(4, racks(4), racks(3), non_rack, 0)
    assignor.prefer_rack_aware = False
    uniform(3, racks(3), racks(3), non_rack, 0)
    uniform(3, racks(3), ["d", "e", "f"], non_rack, -1)
    uniform(3, racks(3), [None, "e", "f"], non_rack, -1)
    # rack-aligned for lower replication factors
    uniform(1, racks(3), racks(3), non_rack, 0)
    uniform(2, racks(3), racks(3), non_rack, 0)
    # one consumer on a rack with no partitions: misaligned to keep the balance
    uniform(3, racks(2), racks(3), non_rack, 5)
    owned = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
    if isinstance(assignor, CooperativeStickyAssignor):
        # rack-awareness improves misaligned owned partitions (revoked first)
        verify(assignor, ppt, 1, racks(3), racks(3), topics, owned, ["t1-0, t1-3", "t2-1", "t2-5, t3-1"], 0)
        assignor.prefer_rack_aware = True
        verify(assignor, ppt, 3, racks(3), racks(3), topics, non_rack, non_rack, 0)
    else:
        verify(assignor, ppt, 1, racks(3), racks(3), topics, owned, non_rack, 0)
        assignor.prefer_rack_aware = True
        verify(assignor, ppt, 3, racks(3), racks(3), topics, non_rack, non_rack, 0)


def test_rack_aware_assignment_with_non_equal_subscription(assignor):
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    topics = [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]]
    non_rack = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]

    def non_equal(rf, brokers, consumers, expected, mismatches):
        verify(assignor, ppt, rf, brokers, consumers, topics, None, expected, mismatches)
        verify(assignor, ppt, rf, brokers, consumers, topics, expected, expected, mismatches)

    non_equal(3, null_racks(3), racks(3), non_rack, -1)
    non_equal(3, racks(3), null_racks(3), non_rack, -1)
    assignor.prefer_rack_aware = True
    non_equal(3, racks(3), racks(3), non_rack, 0)
    non_equal(4, racks(4), racks(3), non_rack, 0)
    assignor.prefer_rack_aware = False
    non_equal(3, racks(3), racks(3), non_rack, 0)
    non_equal(3, racks(3), ["d", "e", "f"], non_rack, -1)
    non_equal(3, racks(3), [None, "e", "f"], non_rack, -1)
    # best-effort alignment for lower replication factors
    non_equal(1, racks(3), racks(3),
              ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"], 4)
    non_equal(2, racks(3), racks(3),
              ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"], 0)
    non_equal(3, racks(2), racks(3), non_rack, 5)
    owned = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
    rf1 = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
    if isinstance(assignor, StickyAssignor):
        verify(assignor, ppt, 1, racks(3), racks(3), topics, owned, rf1, 4)
        assignor.prefer_rack_aware = False
        verify(assignor, ppt, 3, racks(3), racks(3), topics, owned, non_rack, 0)
        assignor.prefer_rack_aware = True
        verify(assignor, ppt, 3, racks(3), racks(3), topics, owned, non_rack, 0)
    else:
        intermediate = ["t1-3", "t2-1", "t3-1"]
        verify(assignor, ppt, 1, racks(3), racks(3), topics, owned, intermediate, 0)
        verify(assignor, ppt, 1, racks(3), racks(3), topics, intermediate, rf1, 4)
        final = ["t1-2, t1-3, t1-4, t2-4, t2-5", "t2-0, t2-1, t2-2, t2-3, t2-6", "t1-0, t1-1, t1-5, t3-0, t3-1"]
        intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        assignor.prefer_rack_aware = False
        verify(assignor, ppt, 3, racks(3), racks(3), topics, owned, intermediate, 0)
        verify(assignor, ppt, 3, racks(3), racks(3), topics, intermediate, final, 0)
        assignor.prefer_rack_aware = True
        verify(assignor, ppt, 3, racks(3), racks(3), topics, owned, intermediate, 0)
        verify(assignor, ppt, 3, racks(3), racks(3), topics, intermediate, final, 0)


@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
def test_random_rack_layouts_stay_valid_and_balanced(cls):
    rnd = random.Random(11)
    for _ in range(150):
        ppt = {f"t{i}": rnd.randint(1, 9) for i in range(rnd.randint(1, 4))}
        cluster = cluster_with_racks(ppt, rnd.randint(1, 3), racks(rnd.randint(1, 4)))
        uniform = rnd.random() < 0.5
        members = [f"c{i}" for i in range(rnd.randint(1, 6))]
        subs = {m: Subscription(sorted(ppt) if uniform else rnd.sample(sorted(ppt), rnd.randint(1, len(ppt))),
                                rack_id=rnd.choice([None, "a", "b", "c", "z"])) for m in members}
        assignor = cls()
        assignor.prefer_rack_aware = rnd.random() < 0.5
        result = assignor.assign(cluster, GroupSubscription(subs)).assignments
        owner = {}
        for m, a in result.items():
            for tp in a.partitions:
                assert tp.topic in subs[m].topics and tp not in owner
                owner[tp] = m
        assert len(owner) == sum(n for t, n in ppt.items() if any(t in s.topics for s in subs.values()))
        sizes = {m: len(a.partitions) for m, a in result.items()}
        if uniform:
            assert max(sizes.values()) - min(sizes.values()) <= 1
