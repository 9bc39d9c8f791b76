"""Range and RoundRobin: equal to kafka-python 3.0.12's on random scenarios, and Kafka's
documented examples and RangeAssignorTest / RoundRobinAssignorTest facts.

kafka-python quirks worked around (both are bugs of kafka-python, not of Kafka):
- its RoundRobin raises KeyError when members' subscriptions differ (``member_id =
  next(member_iter)`` in the skip loop rebinds to a tuple), so it is compared only on uniform
  subscriptions; with mixed subscriptions ours is compared with a literal port of Kafka's loop;
- its ordering of static members uses ``itertools.groupby`` without sorting first, which drops
  members when static and dynamic members are interleaved, so members are handed to it static
  first.
"""
from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from groupcoord.client.assignors import (ClusterMetadata, GroupSubscription, RangeAssignor,
                                         RoundRobinAssignor, Subscription, TopicPartition, plan)
from groupcoord.client.assignors.base import member_order_key

EXAMPLES = 2000        # seeded scenarios per bulk test
BATCH = 20             # ... per hypothesis example
SHRINKABLE = 100       # structured (shrinkable) hypothesis examples per test


# -- kafka-python oracle ---------------------------------------------------------------------

class _Cluster:
    def __init__(self, ppt):
        self.ppt = ppt

    def topics(self):
        return set(self.ppt)

    def partitions_for_topic(self, topic):
        n = self.ppt.get(topic)
        return None if n is None else set(range(n))


def kafka_python(cls, subscriptions, ppt, instance_ids=None):
    instance_ids = instance_ids or {}
    members = [SimpleNamespace(member_id=m, group_instance_id=instance_ids.get(m),
                               metadata=SimpleNamespace(topics=list(t), user_data=b""))
               for m, t in subscriptions.items()]
    members.sort(key=lambda x: x.group_instance_id is None)    # static first (see module doc)
    result = cls.assign(_Cluster(ppt), members)
    return {m: sorted((t, p) for t, ps in a.assigned_partitions for p in ps) for m, a in result.items()}


def ours(assignor, subscriptions, ppt, instance_ids=None):
    instance_ids = instance_ids or {}
    subs = {m: Subscription(list(t), group_instance_id=instance_ids.get(m)) for m, t in subscriptions.items()}
    cluster = ClusterMetadata({t: n for t, n in ppt.items()})
    result = assignor.assign(cluster, GroupSubscription(subs))
    out = {}
    for m, a in result.assignments.items():
        assert all(type(tp) is TopicPartition for tp in a.partitions)
        out[m] = sorted(tuple(tp) for tp in a.partitions)
    return out


def kafka_roundrobin_loop(subscriptions, ppt, instance_ids=None):
    """Kafka's RoundRobinAssignor.assign, line by line (CircularIterator and all)."""
    instance_ids = instance_ids or {}
    subs = {m: Subscription(list(t), group_instance_id=instance_ids.get(m)) for m, t in subscriptions.items()}
    circle = sorted(subs, key=lambda m: member_order_key(m, subs[m]))
    assignment = {m: [] for m in subs}
    topics = sorted({t for s in subs.values() for t in s.topics})
    partitions = [(t, p) for t in topics if ppt.get(t) for p in range(ppt[t])]
    i = 0
    for t, p in partitions:
        while t not in subs[circle[i % len(circle)]].topics:
            i += 1
        assignment[circle[i % len(circle)]].append((t, p))
        i += 1
    return {m: sorted(v) for m, v in assignment.items()}


# -- scenarios -------------------------------------------------------------------------------

TOPICS = ["t0", "t1", "t2", "t3", "t4", "t5"]
member_names = st.text(alphabet="abcAB-_.0123456789", min_size=1, max_size=6)


@st.composite
def scenarios(draw, uniform=None, static=True):
    ppt = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 13), min_size=1, max_size=6))
    known = sorted(ppt)
    candidates = known + ["missing"]     # a subscribed topic the cluster doesn't have
    members = draw(st.lists(member_names, min_size=1, max_size=9, unique=True))
    if uniform is None:
        uniform = draw(st.booleans())
    if uniform:
        topics = draw(st.lists(st.sampled_from(candidates), unique=True, max_size=len(candidates)))
        subs = {m: list(topics) for m in members}
    else:
        subs = {m: draw(st.lists(st.sampled_from(candidates), unique=True, max_size=len(candidates)))
                for m in members}
    instance_ids = {}
    if static:
        for m in members:
            if draw(st.booleans()):
                instance_ids[m] = draw(st.text(alphabet="xyz0123", min_size=1, max_size=4))
        # instance ids are unique within a group
        seen = set()
        for m in list(instance_ids):
            if instance_ids[m] in seen:
                del instance_ids[m]
            else:
                seen.add(instance_ids[m])
    return subs, ppt, instance_ids


def random_scenario(rnd: random.Random, uniform=None, static=True):
    """The same kind of scenario as ``scenarios()``, from a seeded Random (cheap to make in
    bulk; hypothesis drives the seeds and the structured, shrinkable ``scenarios()``)."""
    ppt = {t: rnd.choice([0, 1, 2, 3, rnd.randint(0, 13), rnd.randint(0, 40)])
           for t in rnd.sample(TOPICS, rnd.randint(1, len(TOPICS)))}
    candidates = sorted(ppt) + ["missing"]
    members = list(dict.fromkeys(
        "".join(rnd.choice("abcAB-_.0123456789") for _ in range(rnd.randint(1, 6)))
        for _ in range(rnd.randint(1, 12))))
    if uniform is None:
        uniform = rnd.random() < 0.5

    def some_topics():
        return rnd.sample(candidates, rnd.randint(0, len(candidates)))

    if uniform:
        topics = some_topics()
        subs = {m: list(topics) for m in members}
    else:
        subs = {m: some_topics() for m in members}
    ids = {}
    if static:
        pool = [f"i{k}" for k in range(len(members))]
        rnd.shuffle(pool)
        for m in members:
            if rnd.random() < 0.3:
                ids[m] = pool.pop()
    return subs, ppt, ids


def bulk(check, uniform=None, per_example=BATCH):
    """Run ``check`` on ``per_example`` seeded scenarios per hypothesis example."""
    @settings(max_examples=EXAMPLES // per_example, deadline=None, database=None)
    @given(st.integers(0, 2**32 - 1))
    def run(seed):
        rnd = random.Random(seed)
        for i in range(per_example):
            scenario = random_scenario(rnd, uniform)
            assert check(*scenario), f"seed={seed} #{i}: {scenario}"
    return run


fuzz = settings(max_examples=SHRINKABLE, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def range_same(subs, ppt, ids):
    return ours(RangeAssignor(), subs, ppt, ids) == kafka_python(RangePartitionAssignor, subs, ppt, ids)


def roundrobin_same(subs, ppt, ids):
    return ours(RoundRobinAssignor(), subs, ppt, ids) == kafka_python(RoundRobinPartitionAssignor, subs, ppt, ids)


def roundrobin_same_as_loop(subs, ppt, ids):
    return ours(RoundRobinAssignor(), subs, ppt, ids) == kafka_roundrobin_loop(subs, ppt, ids)


@fuzz
@given(scenarios())
def test_range_equals_kafka_python(scenario):
    assert range_same(*scenario)


test_range_equals_kafka_python_bulk = bulk(range_same)


@fuzz
@given(scenarios(uniform=True))
def test_roundrobin_equals_kafka_python_on_uniform_subscriptions(scenario):
    assert roundrobin_same(*scenario)


test_roundrobin_equals_kafka_python_on_uniform_subscriptions_bulk = bulk(roundrobin_same, uniform=True)


@fuzz
@given(scenarios(uniform=False))
def test_roundrobin_equals_kafkas_loop_on_mixed_subscriptions(scenario):
    assert roundrobin_same_as_loop(*scenario)


test_roundrobin_equals_kafkas_loop_on_mixed_subscriptions_bulk = bulk(roundrobin_same_as_loop, uniform=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_plan_matches_assign(scenario):
    subs, ppt, _ = scenario
    for name, assignor in (("range", RangeAssignor()), ("roundrobin", RoundRobinAssignor())):
        assert plan(name, subs, ppt) == ours(assignor, subs, ppt)


def test_kafka_python_roundrobin_breaks_on_mixed_subscriptions():
    """The reason for the split above (if kafka-python fixes it, compare with it too)."""
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    with pytest.raises(KeyError):
        kafka_python(RoundRobinPartitionAssignor, subs, {"t0": 1, "t1": 2, "t2": 3})


# -- Kafka's javadoc examples --------------------------------------------------------------------

def tps(spec: str):
    """'t0p0, t1p2' -> [('t0', 0), ('t1', 2)]"""
    out = []
    for item in filter(None, (x.strip() for x in spec.split(","))):
        t, p = item.rsplit("p", 1)
        out.append((t, int(p)))
    return sorted(out)


def test_range_javadoc_example():
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    assert plan("range", subs, {"t0": 3, "t1": 3}) == {
        "C0": tps("t0p0, t0p1, t1p0, t1p1"), "C1": tps("t0p2, t1p2")}


def test_range_javadoc_static_example():
    # C0 -> C3, C1 -> C2 after a bounce: dynamic member ids reorder the ranges...
    subs = {"C3": ["t0", "t1"], "C2": ["t0", "t1"]}
    assert plan("range", subs, {"t0": 3, "t1": 3}) == {
        "C2": tps("t0p0, t0p1, t1p0, t1p1"), "C3": tps("t0p2, t1p2")}
    # ...but instance ids I0, I1 keep them
    a = ours(RangeAssignor(), subs, {"t0": 3, "t1": 3}, {"C3": "I0", "C2": "I1"})
    assert a == {"C3": tps("t0p0, t0p1, t1p0, t1p1"), "C2": tps("t0p2, t1p2")}


def test_roundrobin_javadoc_examples():
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    assert plan("roundrobin", subs, {"t0": 3, "t1": 3}) == {
        "C0": tps("t0p0, t0p2, t1p1"), "C1": tps("t0p1, t1p0, t1p2")}
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    assert plan("roundrobin", subs, {"t0": 1, "t1": 2, "t2": 3}) == {
        "C0": tps("t0p0"), "C1": tps("t1p0"), "C2": tps("t1p1, t2p0, t2p1, t2p2")}
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"], "C2": ["t0", "t1"]}
    assert plan("roundrobin", subs, {"t0": 3, "t1": 3}) == {
        "C0": tps("t0p0, t1p0"), "C1": tps("t0p1, t1p1"), "C2": tps("t0p2, t1p2")}
    # after a bounce C0 -> C5, C1 -> C3, C2 -> C4 the assignment shuffles...
    subs = {"C5": ["t0", "t1"], "C3": ["t0", "t1"], "C4": ["t0", "t1"]}
    assert plan("roundrobin", subs, {"t0": 3, "t1": 3}) == {
        "C3": tps("t0p0, t1p0"), "C4": tps("t0p1, t1p1"), "C5": tps("t0p2, t1p2")}
    # ...unless the members are static: I0, I1, I2 keep theirs
    a = ours(RoundRobinAssignor(), subs, {"t0": 3, "t1": 3}, {"C5": "I0", "C3": "I1", "C4": "I2"})
    assert a == {"C5": tps("t0p0, t1p0"), "C3": tps("t0p1, t1p1"), "C4": tps("t0p2, t1p2")}


# -- RangeAssignorTest / RoundRobinAssignorTest ----------------------------------------------

@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_one_consumer_no_topic_and_nonexistent_topic(name):
    assert plan(name, {"consumer1": []}, {}) == {"consumer1": []}
    assert plan(name, {"consumer1": ["topic1"]}, {}) == {"consumer1": []}


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_one_consumer_only_assigns_partitions_from_subscribed_topics(name):
    assert plan(name, {"consumer1": ["topic1"]}, {"topic1": 3, "other": 3}) == {
        "consumer1": [("topic1", 0), ("topic1", 1), ("topic1", 2)]}


@pytest.mark.parametrize("name", ["range", "roundrobin"])
def test_two_consumers_one_topic_one_and_two_partitions(name):
    subs = {"consumer1": ["topic1"], "consumer2": ["topic1"]}
    assert plan(name, subs, {"topic1": 1}) == {"consumer1": [("topic1", 0)], "consumer2": []}
    assert plan(name, subs, {"topic1": 2}) == {"consumer1": [("topic1", 0)], "consumer2": [("topic1", 1)]}


def test_range_multiple_consumers_mixed_topics():
    subs = {"consumer1": ["topic1"], "consumer2": ["topic1", "topic2"], "consumer3": ["topic1"]}
    assert plan("range", subs, {"topic1": 3, "topic2": 2}) == {
        "consumer1": [("topic1", 0)], "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 1)],
        "consumer3": [("topic1", 2)]}


def test_roundrobin_multiple_consumers_mixed_topics():
    subs = {"consumer1": ["topic1"], "consumer2": ["topic1", "topic2"], "consumer3": ["topic1"]}
    assert plan("roundrobin", subs, {"topic1": 3, "topic2": 2}) == {
        "consumer1": [("topic1", 0)], "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 1)],
        "consumer3": [("topic1", 2)]}


def test_range_static_consumers_order_by_instance_id():
    # "consumer-b" has instance1 and "consumer-a" instance2: the instance ids decide
    subs = {"consumer-b": ["topic1", "topic2"], "consumer-a": ["topic1", "topic2"]}
    a = ours(RangeAssignor(), subs, {"topic1": 3, "topic2": 3}, {"consumer-b": "instance1", "consumer-a": "instance2"})
    assert a["consumer-b"] == [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]
    # a static member comes before a dynamic one whatever their member ids
    a = ours(RangeAssignor(), subs, {"topic1": 3, "topic2": 3}, {"consumer-b": "instance1"})
    assert a["consumer-b"] == [("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)]
    assert a["consumer-a"] == [("topic1", 2), ("topic2", 2)]


def test_range_static_member_assignment_persistent():
    subs = {m: ["topic1", "topic2"] for m in ("consumer1", "consumer2", "consumer3", "consumer4")}
    ids = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    expected = {"consumer1": [("topic1", 0), ("topic1", 1), ("topic2", 0)],
                "consumer2": [("topic1", 2), ("topic2", 1)],
                "consumer3": [("topic1", 3), ("topic2", 2)],
                "consumer4": [("topic1", 4), ("topic2", 3)]}
    assert ours(RangeAssignor(), subs, {"topic1": 5, "topic2": 4}, ids) == expected
    del subs["consumer4"]
    subs["consumer5"] = ["topic1", "topic2"]
    expected["consumer5"] = expected.pop("consumer4")
    assert ours(RangeAssignor(), subs, {"topic1": 5, "topic2": 4}, ids) == expected


@pytest.mark.parametrize("assignor", [RangeAssignor, RoundRobinAssignor])
def test_static_assignment_persistent_after_member_id_changes(assignor):
    ppt = {"topic1": 5, "topic2": 5}
    subs = {m: ["topic1", "topic2"] for m in ("consumer1", "consumer2", "consumer3")}
    ids = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    before = ours(assignor(), subs, ppt, ids)
    by_instance = {ids[m]: v for m, v in before.items()}
    if assignor is RangeAssignor:
        assert by_instance == {"instance1": tps("topic1p0, topic1p1, topic2p0, topic2p1"),
                               "instance2": tps("topic1p2, topic1p3, topic2p2, topic2p3"),
                               "instance3": tps("topic1p4, topic2p4")}
    # consumer3 -> consumer4, consumer2 -> consumer5
    subs2 = {"consumer1": subs["consumer1"], "consumer4": subs["consumer3"], "consumer5": subs["consumer2"]}
    ids2 = {"consumer1": "instance1", "consumer4": "instance3", "consumer5": "instance2"}
    after = ours(assignor(), subs2, ppt, ids2)
    assert {ids2[m]: v for m, v in after.items()} == by_instance


def test_roundrobin_two_dynamic_consumers_two_topics_six_partitions():
    subs = {"consumer1": ["topic1", "topic2"], "consumer2": ["topic1", "topic2"]}
    assert plan("roundrobin", subs, {"topic1": 3, "topic2": 3}) == {
        "consumer1": [("topic1", 0), ("topic1", 2), ("topic2", 1)],
        "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 2)]}


# -- rack-aware range (KIP-881), RangeAssignorTest.verifyRackAssignment --------------------------

ALL_RACKS = ["a", "b", "c", "d", "e", "f"]


def rack_cluster(ppt: dict, replication: int, broker_racks: list):
    """AbstractPartitionAssignorTest.partitionsPerTopic: partition i of the k-th topic has its
    replicas on brokers (i + j + offset) % brokers, offset = partitions of earlier topics."""
    racks = {}
    offset = 0
    for topic, n in ppt.items():
        for i in range(n):
            rs = {broker_racks[(i + j + offset) % len(broker_racks)] for j in range(replication)}
            racks[TopicPartition(topic, i)] = frozenset(r for r in rs if r is not None)
        offset += n
    return ClusterMetadata(ppt, racks)


def verify_rack_assignment(ppt, replication, broker_racks, consumer_racks, consumer_topics,
                           expected, mismatches, prefer=False):
    assignor = RangeAssignor()
    assignor.prefer_rack_aware = prefer
    cluster = rack_cluster(ppt, replication, broker_racks)
    subs = {f"consumer{i}": Subscription(list(t), rack_id=r)
            for i, (t, r) in enumerate(zip(consumer_topics, consumer_racks))}
    result = assignor.assign(cluster, GroupSubscription(subs)).assignments
    actual = [", ".join(sorted(f"{tp.topic}-{tp.partition}" for tp in result[f"consumer{i}"].partitions))
              for i in range(len(subs))]
    assert actual == expected
    bad = sum(1 for i, r in enumerate(consumer_racks) if r is not None
              for tp in result[f"consumer{i}"].partitions if r not in cluster.partition_racks(tp))
    if mismatches >= 0:
        assert bad == mismatches


def racks(n):
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def verify_non_rack_aware(ppt, topics, expected):
    """RangeAssignorTest.verifyNonRackAwareAssignment: combinations where racks don't matter."""
    verify_rack_assignment(ppt, 3, [None] * 3, racks(3), topics, expected, -1)
    verify_rack_assignment(ppt, 3, racks(3), [None] * 3, topics, expected, -1)
    verify_rack_assignment(ppt, 3, racks(3), racks(3), topics, expected, 0)
    verify_rack_assignment(ppt, 4, racks(4), racks(3), topics, expected, 0)
    verify_rack_assignment(ppt, 3, racks(3), ["d", "e", "f"], topics, expected, -1)
    verify_rack_assignment(ppt, 3, racks(3), [None, "e", "f"], topics, expected, -1)
    verify_rack_assignment(ppt, 3, racks(3), racks(3), topics, expected, 0, prefer=True)


def test_rack_aware_range_with_uniform_subscription():
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    topics = [["t1", "t2", "t3"]] * 3
    verify_non_rack_aware(ppt, topics, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1",
                                        "t1-4, t1-5, t2-5, t2-6"])
    verify_rack_assignment(ppt, 1, racks(3), racks(3), topics,
                           ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0",
                            "t1-2, t1-5, t2-2, t2-5, t3-1"], 0)
    verify_rack_assignment(ppt, 2, racks(3), racks(3), topics,
                           ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0",
                            "t1-4, t1-5, t2-5, t2-6"], 1)
    verify_rack_assignment(ppt, 3, racks(2), racks(3), topics,
                           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1",
                            "t1-4, t1-5, t2-5, t2-6"], 4)


def test_rack_aware_range_with_non_equal_subscription():
    ppt = {"t1": 6, "t2": 7, "t3": 2}
    topics = [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]]
    verify_non_rack_aware(ppt, topics, ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                                        "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"])
    verify_rack_assignment(ppt, 1, racks(3), racks(3), topics,
                           ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
                            "t1-2, t1-5, t3-1"], 2)
    verify_rack_assignment(ppt, 2, racks(3), racks(3), topics,
                           ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
                            "t1-4, t1-5"], 0)
    verify_rack_assignment(ppt, 3, racks(2), racks(3), topics,
                           ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                            "t1-4, t1-5"], 2)


def test_rack_aware_range_with_uniform_partitions():
    ppt = {"t1": 5, "t2": 5, "t3": 5}
    topics = [["t1", "t2", "t3"]] * 3
    non_rack = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
    verify_non_rack_aware(ppt, topics, non_rack)
    # co-partitioning wins over rack alignment
    verify_rack_assignment(ppt, 1, racks(3), racks(3), topics, non_rack, 10)
    verify_rack_assignment(ppt, 2, racks(3), racks(3), topics, non_rack, 5)
    verify_rack_assignment(ppt, 3, racks(2), racks(3), topics, non_rack, 3)


def test_rack_aware_range_with_uniform_partitions_non_equal_subscription():
    ppt = {"t1": 5, "t2": 5, "t3": 5}
    topics = [["t1", "t2", "t3"], ["t1", "t2", "t3"], ["t1", "t3"]]
    verify_non_rack_aware(ppt, topics, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
                                        "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"])
    verify_rack_assignment(ppt, 1, racks(3), racks(3), topics,
                           ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
                            "t1-4, t3-4"], 9)
    verify_rack_assignment(ppt, 2, racks(3), racks(3), topics,
                           ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3",
                            "t1-1, t1-4, t3-1, t3-4"], 0)
    verify_rack_assignment(ppt, 3, racks(2), racks(3), topics,
                           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3",
                            "t1-4, t3-4"], 2)


def test_rack_aware_range_with_co_partitioning():
    ppt = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    topics = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    consumer_racks = ["a", "b", "b", "a"]
    non_rack = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
    verify_rack_assignment(ppt, 3, racks(2), consumer_racks, topics, non_rack, -1)
    verify_rack_assignment(ppt, 2, racks(2), consumer_racks, topics, non_rack, 0)
    verify_rack_assignment(ppt, 1, racks(2), consumer_racks, topics,
                           ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
                            "t3-1, t4-1", "t3-0, t4-0"], 0)
    all_topics = [["t1", "t2", "t3", "t4"]] * 4
    non_rack = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
    verify_rack_assignment(ppt, 3, racks(2), consumer_racks, all_topics, non_rack, -1)
    verify_rack_assignment(ppt, 2, racks(2), consumer_racks, all_topics, non_rack, 0)
    verify_rack_assignment(ppt, 1, racks(2), consumer_racks, all_topics,
                           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1",
                            "t1-5, t2-5", "t1-4, t2-4"], 0)
    verify_rack_assignment(ppt, 1, racks(3), consumer_racks, all_topics,
                           ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
                            "t1-2, t2-2", "t1-5, t2-5"], 6)


def test_co_partitioned_range_with_same_subscription():
    ppt = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    topics = [["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]] * 3
    consumer_racks = ["a", "b", "c"]
    non_rack = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
                "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2", "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"]
    verify_rack_assignment(ppt, 3, [None] * 3, consumer_racks, topics, non_rack, -1)
    verify_rack_assignment(ppt, 3, racks(3), consumer_racks, topics, non_rack, 0, prefer=True)
    verify_rack_assignment(ppt, 2, racks(3), consumer_racks, topics,
                           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1",
                            "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
                            "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3"], 0, prefer=True)
