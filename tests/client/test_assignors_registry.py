"""The registry, ``partition.assignment.strategy`` resolution, ``plan()``, the assignor
interface plumbing, and the custom "weighted" assignor."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.client.assignors import (ASSIGNORS, AbstractPartitionAssignor, Assignment,
                                         ClusterMetadata, ConsumerGroupMetadata,
                                         ConsumerPartitionAssignor, CooperativeStickyAssignor,
                                         GroupAssignment, GroupSubscription, RangeAssignor,
                                         RebalanceProtocol, RoundRobinAssignor, StickyAssignor,
                                         Subscription, TopicPartition, UnknownAssignorError,
                                         WeightedAssignor, assignors_from_config, decode_capacity,
                                         encode_capacity, get_assignor, plan, register_assignor)


def test_kafka_names():
    assert {n: type(get_assignor(n)) for n in ("range", "roundrobin", "sticky", "cooperative-sticky")} == {
        "range": RangeAssignor, "roundrobin": RoundRobinAssignor, "sticky": StickyAssignor,
        "cooperative-sticky": CooperativeStickyAssignor}
    assert get_assignor("weighted").name == "weighted"
    for name, cls in ASSIGNORS.items():
        assert cls.name == name
    assert CooperativeStickyAssignor.supported_protocols == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, WeightedAssignor):
        assert cls.supported_protocols == (RebalanceProtocol.EAGER,)


def test_strategy_list_in_preference_order():
    sticky = StickyAssignor()
    got = assignors_from_config(["cooperative-sticky", RangeAssignor, sticky,
                                 "org.apache.kafka.clients.consumer.RoundRobinAssignor"])
    assert [a.name for a in got] == ["cooperative-sticky", "range", "sticky", "roundrobin"]
    assert got[2] is sticky
    assert [a.name for a in assignors_from_config("range, cooperative-sticky")] == ["range", "cooperative-sticky"]
    assert [a.name for a in assignors_from_config(RangeAssignor)] == ["range"]


def test_strategy_errors():
    with pytest.raises(UnknownAssignorError, match="unknown partition assignor 'rnage'.*cooperative-sticky.*range"):
        assignors_from_config(["rnage"])
    with pytest.raises(ValueError, match="more than one"):
        assignors_from_config(["range", RangeAssignor()])
    with pytest.raises(TypeError):
        assignors_from_config([42])
    with pytest.raises(ValueError, match="at least one"):
        assignors_from_config([])
    with pytest.raises(UnknownAssignorError):
        plan("nope", {"a": ["t"]}, {"t": 1})


def test_register_custom_assignor():
    class EverythingToTheFirst(AbstractPartitionAssignor):
        name = "first-takes-all"

        def assign_partitions(self, partitions_per_topic, subscriptions, cluster=None):
            first = min(subscriptions)
            return {m: ([TopicPartition(t, p) for t, n in sorted(partitions_per_topic.items())
                         for p in range(n)] if m == first else []) for m in subscriptions}

    register_assignor(EverythingToTheFirst)
    try:
        assert plan("first-takes-all", {"b": ["t"], "a": ["t"]}, {"t": 2}) == {"a": [("t", 0), ("t", 1)], "b": []}
        assert [a.name for a in assignors_from_config(["first-takes-all"])] == ["first-takes-all"]
    finally:
        del ASSIGNORS["first-takes-all"]
    with pytest.raises(TypeError):
        register_assignor(object)


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky", "weighted"])
def test_assign_through_the_interface(name):
    assignor = get_assignor(name)
    assert isinstance(assignor, ConsumerPartitionAssignor)
    cluster = ClusterMetadata({"orders": 5, "payments": 2, "empty": 0})
    subs = {"m1": Subscription(["orders", "payments"]), "m2": Subscription(["orders", "unknown"]),
            "m3": Subscription([])}
    result = assignor.assign(cluster, GroupSubscription(subs))
    assert isinstance(result, GroupAssignment)
    assert set(result.assignments) == {"m1", "m2", "m3"}
    got = {}
    for m, a in result.assignments.items():
        assert isinstance(a, Assignment)
        assert all(type(tp) is TopicPartition for tp in a.partitions)
        for tp in a.partitions:
            assert tp.topic in subs[m].topics
            assert tp not in got
            got[tp] = m
    assert set(got) == {TopicPartition("orders", p) for p in range(5)} | {TopicPartition("payments", p) for p in range(2)}
    assert result.assignments["m3"].partitions == []


def test_plan_ignores_unsubscribed_topics_and_accepts_instances():
    assert plan(RangeAssignor(), {"a": ["t"]}, {"t": 2, "u": 3}) == {"a": [("t", 0), ("t", 1)]}
    assert plan(StickyAssignor, {"a": ["t"]}, {"t": 1}) == {"a": [("t", 0)]}


def test_on_assignment_feeds_the_next_subscription():
    sticky = StickyAssignor()
    sticky.on_assignment(Assignment([TopicPartition("t", 1)]), ConsumerGroupMetadata("g", 3, "m"))
    md = sticky.member_data(Subscription(["t"], sticky.subscription_user_data({"t"})))
    assert list(md.partitions) == [("t", 1)] and md.generation == 3
    coop = CooperativeStickyAssignor()
    assert coop.subscription_user_data({"t"}) == b"\xff\xff\xff\xff"      # int32 -1
    coop.on_assignment(Assignment([]), ConsumerGroupMetadata("g", 9, "m"))
    assert coop.subscription_user_data({"t"}) == b"\x00\x00\x00\x09"


# -- weighted ----------------------------------------------------------------------------------

def test_weighted_user_data():
    assert encode_capacity(3) == b"\x00\x00\x00\x00\x00\x03"
    assert decode_capacity(encode_capacity(70000)) == 70000
    assert decode_capacity(None) is None and decode_capacity(b"\x00") is None
    assert decode_capacity(b"\x00\x00\x00\x00\x00\x00") is None          # not positive
    assert WeightedAssignor(5).subscription_user_data({"t"}) == encode_capacity(5)
    for bad in (0, -1, 2**31, 1.5, True, "3"):
        with pytest.raises(ValueError):
            WeightedAssignor(bad)


def test_weighted_example():
    subs = {"small": ["t"], "medium": ["t"], "large": ["t"]}
    caps = {"small": encode_capacity(1), "medium": encode_capacity(2), "large": encode_capacity(3)}
    a = plan("weighted", subs, {"t": 12}, user_data=caps)
    assert {m: len(v) for m, v in a.items()} == {"small": 2, "medium": 4, "large": 6}
    # members without (or with unreadable) user data count with capacity 1
    a = plan("weighted", subs, {"t": 8}, user_data={"large": encode_capacity(6), "medium": b"junk"})
    assert {m: len(v) for m, v in a.items()} == {"small": 1, "medium": 1, "large": 6}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=8),
       st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 40), min_size=1))
def test_weighted_shares_are_proportional(capacities, ppt):
    members = [f"m{i}" for i in range(len(capacities))]
    subs = {m: sorted(ppt) for m in members}
    a = plan("weighted", subs, ppt, user_data={m: encode_capacity(c) for m, c in zip(members, capacities)})
    total, weight = sum(ppt.values()), sum(capacities)
    seen = set()
    for m, c in zip(members, capacities):
        exact = total * c / weight
        assert int(exact) <= len(a[m]) <= -int(-exact // 1), (m, c, exact, len(a[m]))
        seen.update(a[m])
    assert len(seen) == total


def test_weighted_mixed_subscriptions():
    rnd = random.Random(5)
    for _ in range(200):
        topics = ["a", "b", "c", "d"]
        ppt = {t: rnd.randint(0, 12) for t in topics}
        members = [f"m{i}" for i in range(rnd.randint(1, 6))]
        subs = {m: rnd.sample(topics, rnd.randint(0, 4)) for m in members}
        caps = {m: rnd.randint(1, 5) for m in members}
        a = plan("weighted", subs, ppt, user_data={m: encode_capacity(c) for m, c in caps.items()})
        owner = {}
        for m, parts in a.items():
            assert parts == sorted(parts)
            for tp in parts:
                assert tp[0] in subs[m] and tp not in owner
                owner[tp] = m
        wanted = {(t, p) for m in members for t in subs[m] for p in range(ppt[t])}
        assert set(owner) == wanted
    # a member subscribed alone to a topic takes all of it; shared topics even out the loads
    # (x: 4 forced + 0 shared = 4, y: 8; capacity 1:3 of 12 would be 3:9)
    a = plan("weighted", {"x": ["solo", "shared"], "y": ["shared"]}, {"solo": 4, "shared": 8},
             user_data={"x": encode_capacity(1), "y": encode_capacity(3)})
    assert len(a["x"]) == 4 and len(a["y"]) == 8
