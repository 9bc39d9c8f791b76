"""Kafka's AbstractStickyAssignorTest / StickyAssignorTest / CooperativeStickyAssignorTest,
ported as facts (expected outputs), without the rack configurations.

Each test runs for both assignors. As in Kafka's CooperativeStickyAssignorTest,
``verify_validity_and_balance`` for the cooperative assignor first checks that no partition is
revoked and assigned in the same rebalance, then runs follow-up rebalances until nothing is
revoked, and replaces the assignment in place with the settled one; the expectations checked
after it are then those of the settled assignment.
"""
from __future__ import annotations

import random

import pytest

from groupcoord.client.assignors import (ConsumerGroupMetadata, CooperativeStickyAssignor,
                                         StickyAssignor, Subscription, TopicPartition)
from groupcoord.client.assignors.base import Assignment
from groupcoord.protocol.consumer import encode_sticky_user_data, group_partitions

DEFAULT_GENERATION = -1
GENERATION = 1
tp = TopicPartition
topic, topic1, topic2, topic3 = "topic", "topic1", "topic2", "topic3"
consumer1, consumer2, consumer3, consumer4 = "consumer1", "consumer2", "consumer3", "consumer4"
consumer_id = "consumer"


class Harness:
    """The per-assignor parts of Kafka's AbstractStickyAssignorTest."""

    def __init__(self, kind: str):
        self.kind = kind
        self.assignor = self.create()

    def create(self):
        return StickyAssignor() if self.kind == "sticky" else CooperativeStickyAssignor()

    @property
    def cooperative(self) -> bool:
        return self.kind == "cooperative"

    # subscriptions as each ConsumerProtocolSubscription version carries them
    def subscription(self, topics, index=0):
        return Subscription(list(topics), None, [], DEFAULT_GENERATION)

    def v0(self, topics, partitions, generation, index=0):
        if self.cooperative:
            return None
        return Subscription(list(topics), _sticky_user_data(partitions, generation), [], DEFAULT_GENERATION)

    def v1(self, topics, partitions, generation, index=0):
        if self.cooperative:
            self.assignor.on_assignment(Assignment(list(partitions)),
                                        ConsumerGroupMetadata("group", generation, consumer1))
            return Subscription(list(topics), self.assignor.subscription_user_data(set(topics)),
                                list(partitions), DEFAULT_GENERATION)
        return Subscription(list(topics), _sticky_user_data(partitions, generation), list(partitions),
                            DEFAULT_GENERATION)

    def v2(self, topics, partitions, generation, index=0):
        if self.cooperative:
            return Subscription(list(topics), self.assignor.subscription_user_data(set(topics)),
                                list(partitions), generation)
        return Subscription(list(topics), _sticky_user_data(partitions, generation), list(partitions),
                            generation)

    def assign(self, partitions_per_topic, subscriptions):
        return self.assignor.assign_partitions(dict(partitions_per_topic), dict(subscriptions))

    # Kafka's verifyValidityAndBalance (+ the cooperative override)
    def verify(self, subscriptions, assignment, partitions_per_topic):
        if self.cooperative:
            rebalances = 0
            while _cooperative_revokes(subscriptions, assignment):
                for c, parts in assignment.items():
                    subscriptions[c] = self.v2(subscriptions[c].topics, parts, GENERATION)
                new = self.assign(partitions_per_topic, subscriptions)
                assignment.clear()
                assignment.update(new)
                rebalances += 1
                assert rebalances <= 4
        verify_validity_and_balance(subscriptions, assignment, partitions_per_topic)


def _sticky_user_data(partitions, generation):
    return encode_sticky_user_data(group_partitions(partitions), generation)


def _cooperative_revokes(subscriptions, assignment) -> bool:
    added, revoked = set(), set()
    for c, parts in assignment.items():
        owned = set(subscriptions[c].owned_partitions)
        revoked |= owned - set(parts)
        added |= set(parts) - owned
    assert not added & revoked, f"partitions revoked and assigned in one rebalance: {added & revoked}"
    return bool(revoked)


def verify_validity_and_balance(subscriptions, assignment, partitions_per_topic):
    assert set(subscriptions) == set(assignment)
    seen = {}
    for c, parts in assignment.items():
        for p in parts:
            assert p.topic in subscriptions[c].topics, f"{p} assigned to {c} not subscribed"
            assert p not in seen, f"{p} assigned to {seen[p]} and {c}"
            seen[p] = c
    # every subscribed partition is assigned
    subscribed = {t for s in subscriptions.values() for t in s.topics}
    for t, n in partitions_per_topic.items():
        if t in subscribed:
            for p in range(n):
                assert tp(t, p) in seen, f"{tp(t, p)} unassigned"
    # balance: no partition can move to a consumer with 2+ fewer partitions subscribed to it
    size = {c: len(v) for c, v in assignment.items()}
    least = {}      # topic -> smallest assignment among its subscribers
    for c, s in subscriptions.items():
        for t in set(s.topics):
            least[t] = min(least.get(t, size[c]), size[c])
    for p, owner in seen.items():
        assert size[owner] <= least[p.topic] + 1, f"{p} could move from {owner} to a consumer with {least[p.topic]}"


def fully_balanced(assignment) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes) <= 1


def name(prefix, i, max_num):
    return prefix + str(i).rjust(len(str(max_num)), "0")


def parts(*pairs):
    return [tp(t, p) for t, p in pairs]


@pytest.fixture(params=["sticky", "cooperative"])
def h(request):
    return Harness(request.param)


# --------------------------------------------------------------------------------------------

def test_member_data(h):
    owned = parts((topic1, 0), (topic2, 1))
    for sub in (h.v0([topic], owned, GENERATION), h.v1([topic], owned, GENERATION),
                h.v2([topic], owned, GENERATION)):
        if sub is None:
            continue
        md = h.assignor.member_data(sub)
        assert [tuple(x) for x in md.partitions] == [tuple(x) for x in owned]
        assert (md.generation if md.generation is not None else -1) == GENERATION


def test_one_consumer_no_topic(h):
    subs = {consumer_id: h.subscription([])}
    a = h.assign({}, subs)
    assert a == {consumer_id: []}


def test_one_consumer_nonexistent_topic(h):
    subs = {consumer_id: h.subscription([topic])}
    assert h.assign({}, subs) == {consumer_id: []}


def test_one_consumer_one_topic(h):
    ppt = {topic: 3}
    subs = {consumer_id: h.subscription([topic])}
    a = h.assign(ppt, subs)
    assert a[consumer_id] == parts((topic, 0), (topic, 1), (topic, 2))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_only_assigns_partitions_from_subscribed_topics(h):
    ppt = {topic: 2}
    subs = {consumer_id: h.v2([topic], parts((topic, 0), (topic, 1), ("other", 0), ("other", 1)), GENERATION)}
    a = h.assign(ppt, subs)
    assert a[consumer_id] == parts((topic, 0), (topic, 1))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_one_consumer_multiple_topics(h):
    ppt = {topic1: 1, topic2: 2}
    subs = {consumer_id: h.subscription([topic1, topic2])}
    a = h.assign(ppt, subs)
    assert a[consumer_id] == parts((topic1, 0), (topic2, 0), (topic2, 1))


def test_two_consumers_one_topic_one_partition(h):
    ppt = {topic: 1}
    subs = {consumer1: h.subscription([topic]), consumer2: h.subscription([topic])}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)
    assert fully_balanced(a)


def test_two_consumers_one_topic_two_partitions(h):
    ppt = {topic: 2}
    subs = {consumer1: h.subscription([topic]), consumer2: h.subscription([topic])}
    a = h.assign(ppt, subs)
    assert a[consumer1] == parts((topic, 0))
    assert a[consumer2] == parts((topic, 1))


def test_multiple_consumers_mixed_topic_subscriptions(h):
    ppt = {topic1: 3, topic2: 2}
    subs = {consumer1: h.subscription([topic1]), consumer2: h.subscription([topic1, topic2]),
            consumer3: h.subscription([topic1])}
    a = h.assign(ppt, subs)
    assert a[consumer1] == parts((topic1, 0), (topic1, 2))
    assert a[consumer2] == parts((topic2, 0), (topic2, 1))
    assert a[consumer3] == parts((topic1, 1))
    assert h.assignor.partitions_transferring_ownership is None
    h.verify(subs, a, ppt)


def test_two_consumers_two_topics_six_partitions(h):
    ppt = {topic1: 3, topic2: 3}
    subs = {consumer1: h.subscription([topic1, topic2]), consumer2: h.subscription([topic1, topic2])}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(parts((topic1, 0), (topic1, 2), (topic2, 1)))
    assert set(a[consumer2]) == set(parts((topic1, 1), (topic2, 0), (topic2, 2)))
    assert h.assignor.partitions_transferring_ownership == {}


def test_consumer_owning_min_quota_expected_max_quota(h):
    ppt = {topic1: 2, topic2: 3}
    topics = [topic1, topic2]
    subs = {consumer1: h.v2(topics, parts((topic1, 0), (topic2, 1)), GENERATION),
            consumer2: h.v2(topics, parts((topic1, 1), (topic2, 2)), GENERATION)}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(parts((topic1, 0), (topic2, 1), (topic2, 0)))
    assert set(a[consumer2]) == set(parts((topic1, 1), (topic2, 2)))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_max_quota_consumer_more_than_num_expected_max_capacity_members(h):
    ppt = {topic1: 2, topic2: 2}
    topics = [topic1, topic2]
    subs = {consumer1: h.v2(topics, parts((topic1, 0), (topic2, 0)), GENERATION),
            consumer2: h.v2(topics, parts((topic1, 1), (topic2, 1)), GENERATION),
            consumer3: h.v2(topics, [], GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {tp(topic2, 0): consumer3}
    h.verify(subs, a, ppt)
    assert a[consumer1] == parts((topic1, 0))
    assert set(a[consumer2]) == set(parts((topic1, 1), (topic2, 1)))
    assert a[consumer3] == parts((topic2, 0))


def test_all_consumers_are_under_min_quota(h):
    ppt = {topic1: 2, topic2: 3}
    topics = [topic1, topic2]
    subs = {consumer1: h.v2(topics, parts((topic1, 0)), GENERATION),
            consumer2: h.v2(topics, parts((topic1, 1)), GENERATION),
            consumer3: h.v2(topics, [], GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)
    assert set(a[consumer1]) == set(parts((topic1, 0), (topic2, 1)))
    assert set(a[consumer2]) == set(parts((topic1, 1), (topic2, 2)))
    assert a[consumer3] == parts((topic2, 0))


def test_add_remove_consumer_one_topic(h):
    ppt = {topic: 3}
    subs = {consumer1: h.subscription([topic])}
    a = h.assign(ppt, subs)
    assert a[consumer1] == parts((topic, 0), (topic, 1), (topic, 2))
    subs = {consumer1: h.v2([topic], a[consumer1], GENERATION), consumer2: h.v2([topic], [], GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {tp(topic, 2): consumer2}
    h.verify(subs, a, ppt)
    assert a[consumer1] == parts((topic, 0), (topic, 1))
    assert a[consumer2] == parts((topic, 2))
    del subs[consumer1]
    subs[consumer2] = h.v2([topic], a[consumer2], GENERATION)
    a = h.assign(ppt, subs)
    assert set(a[consumer2]) == set(parts((topic, 0), (topic, 1), (topic, 2)))
    assert h.assignor.partitions_transferring_ownership == {}


def test_topic_balance_after_reassignment(h):
    all_topics = [topic1, topic2]
    ppt = {topic1: 12, topic2: 12}

    def per_topic(a, expected):
        for ps in a.values():
            assert sum(1 for p in ps if p.topic == topic1) == expected
            assert sum(1 for p in ps if p.topic == topic2) == expected

    subs = {consumer1: h.subscription(all_topics)}
    a = h.assign(ppt, subs)
    per_topic(a, 12)
    subs = {consumer1: h.v2(all_topics, a[consumer1], GENERATION), consumer2: h.v2(all_topics, [], GENERATION)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    per_topic(a, 6)
    subs = {consumer1: h.v2(all_topics, a[consumer1], GENERATION),
            consumer2: h.v2(all_topics, a[consumer2], GENERATION),
            consumer3: h.v2(all_topics, [], GENERATION), consumer4: h.v2(all_topics, [], GENERATION)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    per_topic(a, 3)
    subs = {consumer3: h.v2(all_topics, a[consumer3], GENERATION),
            consumer4: h.v2(all_topics, a[consumer4], GENERATION)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    per_topic(a, 6)
    assert h.assignor.partitions_transferring_ownership == {}


def test_add_remove_two_consumers_two_topics(h):
    all_topics = [topic1, topic2]
    ppt = {topic1: 3, topic2: 4}
    subs = {consumer1: h.subscription(all_topics), consumer2: h.subscription(all_topics)}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(parts((topic1, 0), (topic1, 2), (topic2, 1), (topic2, 3)))
    assert set(a[consumer2]) == set(parts((topic1, 1), (topic2, 0), (topic2, 2)))
    subs = {consumer1: h.v2(all_topics, a[consumer1], GENERATION),
            consumer2: h.v2(all_topics, a[consumer2], GENERATION),
            consumer3: h.v2(all_topics, [], GENERATION), consumer4: h.v2(all_topics, [], GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {
        tp(topic1, 2): consumer3, tp(topic2, 3): consumer3, tp(topic2, 2): consumer4}
    h.verify(subs, a, ppt)
    assert set(a[consumer1]) == set(parts((topic1, 0), (topic2, 1)))
    assert set(a[consumer2]) == set(parts((topic2, 0), (topic1, 1)))
    assert set(a[consumer3]) == set(parts((topic1, 2), (topic2, 3)))
    assert set(a[consumer4]) == set(parts((topic2, 2)))
    subs = {consumer3: h.v2(all_topics, a[consumer3], GENERATION),
            consumer4: h.v2(all_topics, a[consumer4], GENERATION)}
    a = h.assign(ppt, subs)
    assert set(a[consumer3]) == set(parts((topic1, 2), (topic2, 3), (topic1, 0), (topic2, 1)))
    assert set(a[consumer4]) == set(parts((topic2, 2), (topic1, 1), (topic2, 0)))
    assert h.assignor.partitions_transferring_ownership == {}


def test_poor_round_robin_assignment_scenario(h):
    ppt = {f"topic{i}": (i % 2) + 1 for i in range(1, 6)}
    subs = {"consumer1": h.subscription(["topic1", "topic2", "topic3", "topic4", "topic5"]),
            "consumer2": h.subscription(["topic1", "topic3", "topic5"]),
            "consumer3": h.subscription(["topic1", "topic3", "topic5"]),
            "consumer4": h.subscription(["topic1", "topic2", "topic3", "topic4", "topic5"])}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)


def test_add_remove_topic_two_consumers(h):
    ppt = {topic: 3}
    subs = {consumer1: h.subscription([topic]), consumer2: h.subscription([topic])}
    a = h.assign(ppt, subs)
    assert fully_balanced(a)
    first1, first2 = a[consumer1], a[consumer2]
    ppt[topic2] = 3
    subs = {consumer1: h.v2([topic, topic2], a[consumer1], GENERATION),
            consumer2: h.v2([topic, topic2], a[consumer2], GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)
    assert len(a[consumer1]) == 3 and len(a[consumer2]) == 3
    assert set(first1) <= set(a[consumer1]) and set(first2) <= set(a[consumer2])
    second1, second2 = a[consumer1], a[consumer2]
    del ppt[topic]
    subs = {consumer1: h.v2([topic2], a[consumer1], GENERATION),
            consumer2: h.v2([topic2], a[consumer2], GENERATION)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    assert sorted([len(a[consumer1]), len(a[consumer2])]) == [1, 2]
    assert set(a[consumer1]) <= set(second1) and set(a[consumer2]) <= set(second2)


def test_reassignment_after_one_consumer_leaves(h):
    ppt = {name("t", i, 20): i for i in range(1, 20)}
    subs = {name("c", i, 20): h.subscription([name("t", j, 20) for j in range(1, i + 1)])
            for i in range(1, 20)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    for c in list(subs):
        subs[c] = h.v2(subs[c].topics, a[c], GENERATION)
    del subs["c10"]
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    assert h.assignor.is_sticky()


def test_reassignment_after_one_consumer_added(h):
    ppt = {"topic": 20}
    subs = {name("c", i, 10): h.subscription(["topic"]) for i in range(1, 10)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)
    subs[name("c", 10, 10)] = h.subscription(["topic"])
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_same_subscriptions(h):
    ppt = {name("t", i, 15): i for i in range(1, 15)}
    topics = [name("t", j, 15) for j in range(1, 15)]
    subs = {name("c", i, 9): h.subscription(topics) for i in range(1, 9)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    for c in list(subs):
        subs[c] = h.v2(topics, a[c], GENERATION)
    del subs[name("c", 5, 9)]
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_assignment_and_group_with_non_equal_subscription_not_timeout(h):
    topic_count, partition_count, consumer_count = 100, 200, 500
    topics = [name("t", i, topic_count) for i in range(topic_count)]
    ppt = {t: partition_count for t in topics}
    half = topic_count // 2

    def topics_of(i):
        return topics[:half] if i % 4 == 0 else topics[half:]

    subs = {name("c", i, consumer_count): h.subscription(topics_of(i)) for i in range(consumer_count)}
    a = h.assign(ppt, subs)
    for i in range(1, consumer_count):
        c = name("c", i, consumer_count)
        subs[c] = h.v2(topics_of(i), a[c], GENERATION)
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)


def test_subscription_not_equal_and_assign_same_partition_with_3_generation(h):
    ppt = {topic: 6, topic1: 1}
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        subs = {consumer1: h.v2([topic], parts((topic, 0), (topic, 2)), g1),
                consumer2: h.v2([topic], parts((topic, 1), (topic, 2), (topic, 3)), g2),
                consumer3: h.v2([topic], parts((topic, 2), (topic, 4), (topic, 5)), g3),
                consumer4: h.v2([topic1], parts((topic1, 0)), 2)}
        a = h.assign(ppt, subs)
        flat = [p for ps in a.values() for p in ps]
        assert len(flat) == len(set(flat))
        for ps in a.values():
            assert 1 <= len(ps) <= 2


def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(h):
    rnd = random.Random(42)
    topic_count, consumer_count = 40, 200
    ppt = {name("t", i, topic_count): rnd.randint(1, 10) for i in range(topic_count)}
    subs = {}
    for i in range(consumer_count):
        topics = sorted({name("t", rnd.randrange(topic_count), topic_count) for _ in range(rnd.randrange(20))})
        subs[name("c", i, consumer_count)] = h.subscription(topics)
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    for i in range(1, consumer_count):
        c = name("c", i, consumer_count)
        subs[c] = h.v2(subs[c].topics, a[c], GENERATION)
    for _ in range(50):
        subs.pop(name("c", rnd.randrange(consumer_count), consumer_count), None)
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    assert h.assignor.is_sticky()


def test_new_subscription(h):
    ppt = {name("t", i, 5): 1 for i in range(1, 5)}
    subs = {name("c", i, 3): h.subscription([name("t", j, 5) for j in range(i, 3 * i - 1)])
            for i in range(3)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    subs[name("c", 0, 3)].topics.append(name("t", 1, 5))
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    assert h.assignor.is_sticky()


def test_move_existing_assignments(h):
    ppt = {f"topic{i}": 1 for i in range(1, 7)}
    subs = {consumer1: h.v2([topic1, topic2], parts((topic1, 0)), GENERATION),
            consumer2: h.v2([topic1, topic2, topic3, "topic4"], parts((topic2, 0), (topic3, 0)), GENERATION),
            consumer3: h.v2([topic2, topic3, "topic4", "topic5", "topic6"],
                            parts(("topic4", 0), ("topic5", 0), ("topic6", 0)), GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership is None
    h.verify(subs, a, ppt)


def test_stickiness(h):
    ppt = {topic1: 3}
    subs = {c: h.subscription([topic1]) for c in (consumer1, consumer2, consumer3, consumer4)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)
    before = {c: ps[0] for c, ps in a.items() if ps}
    assert all(len(ps) <= 1 for ps in a.values())
    del subs[consumer1]
    for c in (consumer2, consumer3, consumer4):
        subs[c] = h.v2([topic1], a[c], GENERATION)
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)
    for c, ps in a.items():
        assert len(ps) == 1
        assert c not in before or before[c] in ps


def test_assignment_updated_for_deleted_topic(h):
    ppt = {topic1: 1, topic3: 100}
    subs = {consumer_id: h.subscription([topic1, topic2, topic3])}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    assert sum(map(len, a.values())) == 101
    assert set(a) == {consumer_id}


def test_no_exception_thrown_when_only_subscribed_topic_deleted(h):
    ppt = {topic: 3}
    subs = {consumer_id: h.subscription([topic])}
    a = h.assign(ppt, subs)
    subs[consumer_id] = h.v2([topic], a[consumer_id], GENERATION)
    a = h.assign({}, subs)
    assert h.assignor.partitions_transferring_ownership == {}
    assert a == {consumer_id: []}


def test_reassignment_with_random_subscriptions_and_changes(h):
    rnd = random.Random(7)
    for _ in range(30):
        num_topics = rnd.randint(10, 19)
        topics = [name("t", i, 20) for i in range(num_topics)]
        ppt = {t: i + 1 for i, t in enumerate(topics)}
        num_consumers = rnd.randint(20, 39)

        def sublist():
            return sorted(rnd.sample(topics, len(topics) - rnd.randrange(len(topics))))

        subs = {name("c", i, 40): h.subscription(sublist()) for i in range(num_consumers)}
        h.assignor = h.create()
        a = h.assign(ppt, subs)
        h.verify(subs, a, ppt)
        subs = {name("c", i, 40): h.v2(sublist(), a[name("c", i, 40)], GENERATION) for i in range(num_consumers)}
        a = h.assign(ppt, subs)
        h.verify(subs, a, ppt)
        assert h.assignor.is_sticky()


def test_all_consumers_reach_expected_quota_and_are_considered_filled(h):
    ppt = {topic: 4}
    subs = {consumer1: h.v2([topic], parts((topic, 0), (topic, 1)), GENERATION),
            consumer2: h.v2([topic], parts((topic, 2)), GENERATION),
            consumer3: h.v2([topic], [], GENERATION)}
    a = h.assign(ppt, subs)
    assert a[consumer1] == parts((topic, 0), (topic, 1))
    assert a[consumer2] == parts((topic, 2))
    assert a[consumer3] == parts((topic, 3))
    assert h.assignor.partitions_transferring_ownership == {}


@pytest.mark.parametrize("stale", [10 - 1, DEFAULT_GENERATION])
def test_owned_partitions_are_invalidated_for_consumer_with_stale_or_no_generation(h, stale):
    ppt = {topic: 3, topic2: 3}
    owned = parts((topic, 0), (topic, 2), (topic2, 1))
    subs = {consumer1: h.v2([topic, topic2], owned, 10), consumer2: h.v2([topic, topic2], owned, stale)}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(owned)
    assert set(a[consumer2]) == set(parts((topic, 1), (topic2, 0), (topic2, 2)))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers(h):
    ppt = {topic: 3}
    subs = {consumer1: h.v2([topic], parts((topic, 0), (topic, 1)), GENERATION),
            consumer2: h.v2([topic], parts((topic, 0), (topic, 2)), GENERATION),
            consumer3: h.v2([topic], [], GENERATION)}
    a = h.assign(ppt, subs)
    assert h.assignor.partitions_transferring_ownership == {tp(topic, 0): consumer3}
    if h.cooperative:
        # topic-0 must be revoked by both claimants before anyone gets it
        assert a[consumer3] == []
        a[consumer3] = parts((topic, 0))   # as Kafka's test: check the would-be final state
    assert a[consumer1] == parts((topic, 1))
    assert a[consumer2] == parts((topic, 2))
    assert a[consumer3] == parts((topic, 0))


def test_ensure_partitions_assigned_to_highest_generation(h):
    ppt = {topic: 3, topic2: 3, topic3: 3}
    topics = [topic, topic2, topic3]
    subs = {consumer1: h.v2(topics, parts((topic, 0), (topic2, 0), (topic3, 0)), 10),
            consumer2: h.v2(topics, parts((topic, 1), (topic2, 1), (topic3, 1)), 9),
            consumer3: h.v2(topics, parts((topic2, 1), (topic3, 0), (topic3, 2)), 8)}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(parts((topic, 0), (topic2, 0), (topic3, 0)))
    assert set(a[consumer2]) == set(parts((topic, 1), (topic2, 1), (topic3, 1)))
    assert set(a[consumer3]) == set(parts((topic, 2), (topic2, 2), (topic3, 2)))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_no_reassignment_on_current_members(h):
    ppt = {topic: 3, topic1: 3, topic2: 3, topic3: 3}
    topics = [topic, topic2, topic3, topic1]
    subs = {consumer1: h.v2(topics, [], DEFAULT_GENERATION),
            consumer2: h.v2(topics, parts((topic, 0), (topic2, 0), (topic1, 0)), 9),
            consumer3: h.v2(topics, parts((topic3, 2), (topic2, 2), (topic1, 1)), 8),
            consumer4: h.v2(topics, parts((topic3, 1), (topic, 1), (topic, 2)), 7)}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(parts((topic1, 2), (topic2, 1), (topic3, 0)))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation(h):
    ppt = {topic: 3, topic2: 3}
    topics = [topic, topic2]
    subs = {consumer1: h.v2(topics, parts((topic, 0), (topic2, 1), (topic, 1)), 10),
            consumer2: h.v2(topics, parts((topic, 0), (topic2, 1), (topic2, 2)), 8)}
    a = h.assign(ppt, subs)
    assert set(a[consumer1]) == set(parts((topic, 0), (topic2, 1), (topic, 1)))
    assert set(a[consumer2]) == set(parts((topic, 2), (topic2, 2), (topic2, 0)))
    assert h.assignor.partitions_transferring_ownership == {}
    h.verify(subs, a, ppt)


@pytest.mark.parametrize("n", [3, 4])
def test_all_consumers_have_owned_partition_invalidated_when_claimed_in_same_generation(h, n):
    ppt = {topic: n}
    subs = {consumer1: h.v2([topic], parts((topic, 0), (topic, 1)), GENERATION),
            consumer2: h.v2([topic], parts((topic, 0), (topic, 2)), GENERATION),
            consumer3: h.v2([topic], [], GENERATION)}
    a = h.assign(ppt, subs)
    assert a[consumer1] == (parts((topic, 1)) if n == 3 else parts((topic, 1), (topic, 3)))
    assert a[consumer2] == parts((topic, 2))
    # cooperative: topic-0 is still "owned" by both, so nobody gets it in this rebalance
    assert a[consumer3] == ([] if h.cooperative else parts((topic, 0)))


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations_1(h, equal):
    all_topics = [topic, topic2]
    c2_topics = all_topics if equal else [topic]
    ppt = {topic: 6, topic2: 6}
    subs = {consumer1: h.subscription(all_topics), consumer2: h.subscription(c2_topics),
            consumer3: h.subscription(all_topics)}
    a = h.assign(ppt, subs)
    r1 = dict(a)
    assert all(len(v) == 4 for v in r1.values())
    subs = {consumer1: h.v2(all_topics, r1[consumer1], GENERATION),
            consumer2: h.v2(c2_topics, r1[consumer2], GENERATION)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    r2 = dict(a)
    assert len(r2[consumer1]) == 6 and len(r2[consumer2]) == 6
    if equal:
        assert set(r1[consumer1]) <= set(r2[consumer1])
    assert set(r1[consumer2]) <= set(r2[consumer2])
    assert set(r2[consumer2]) & set(r1[consumer3])
    subs = {consumer2: h.v2(c2_topics, r2[consumer2], 2), consumer3: h.v2(all_topics, r1[consumer3], 1)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    assert len(a[consumer2]) == 6 and len(a[consumer3]) == 6
    assert not set(a[consumer2]) & set(a[consumer3])


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations_2(h, equal):
    all_topics = [topic, topic2, topic3]
    c1_topics = all_topics if equal else [topic]
    c3_topics = all_topics if equal else [topic, topic2]
    ppt = {topic: 4, topic2: 4, topic3: 4}
    subs = {consumer1: h.subscription(c1_topics), consumer2: h.subscription(all_topics),
            consumer3: h.subscription(c3_topics)}
    r1 = h.assign(ppt, subs)
    assert all(len(v) == 4 for v in r1.values())
    subs = {consumer2: h.v2(all_topics, r1[consumer2], 1)}
    r2 = h.assign(ppt, subs)
    assert len(r2[consumer2]) == 12 and set(r1[consumer2]) <= set(r2[consumer2])
    subs = {consumer1: h.v2(c1_topics, r1[consumer1], 1), consumer2: h.v2(all_topics, r2[consumer2], 2),
            consumer3: h.v2(c3_topics, r1[consumer3], 1)}
    a = h.assign(ppt, subs)
    h.verify(subs, a, ppt)
    assert all(len(v) == 4 for v in a.values())


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_conflicting_previous_generations(h, equal):
    ppt = {topic: 4, topic2: 4, topic3: 4}
    all_topics = [topic, topic2, topic3]
    c1_topics = all_topics if equal else [topic]
    c2_topics = all_topics if equal else [topic, topic2]
    c1p = (parts((topic, 0), (topic, 1), (topic, 2), (topic2, 2), (topic2, 3), (topic3, 0)) if equal
           else parts((topic, 0), (topic, 1), (topic, 2), (topic, 3)))
    c2p = parts((topic, 0), (topic, 1), (topic2, 0), (topic2, 1), (topic2, 2), (topic2, 3))
    c3p = parts((topic, 2), (topic, 3), (topic3, 0), (topic3, 1), (topic3, 2), (topic3, 3))
    subs = {consumer1: h.v2(c1_topics, c1p, 1), consumer2: h.v2(c2_topics, c2p, 2),
            consumer3: h.v2(all_topics, c3p, 2)}
    a = h.assign(ppt, subs)
    if not h.cooperative:
        assert all(len(v) == 4 for v in a.values())
        assert set(a[consumer2]) <= set(c2p) and set(a[consumer3]) <= set(c3p)
    h.verify(subs, a, ppt)


def test_schema_backward_compatibility(h):
    if h.cooperative:
        pytest.skip("StickyAssignor user data schemas")
    ppt = {topic: 3}
    c1p, c2p = parts((topic, 0), (topic, 2)), parts((topic, 1))
    subs = {consumer1: h.v2([topic], c1p, 1),
            consumer2: Subscription([topic], encode_sticky_user_data(group_partitions(c2p), None)),
            consumer3: h.subscription([topic])}
    a = h.assign(ppt, subs)
    assert all(len(v) == 1 for v in a.values())
    assert set(a[consumer1]) <= set(c1p) and set(a[consumer2]) <= set(c2p)


def test_member_data_with_inconsistent_data(h):
    in_user_data, in_subscription = parts((topic, 1)), parts((topic, 0))
    h.assignor.on_assignment(Assignment(in_user_data), ConsumerGroupMetadata("group", GENERATION, consumer1))
    sub = Subscription([topic], h.assignor.subscription_user_data({topic}), in_subscription)
    md = h.assignor.member_data(sub)
    # sticky honours the user data, cooperative the subscription's owned partitions
    expected = in_subscription if h.cooperative else in_user_data
    assert [tuple(x) for x in md.partitions] == [tuple(x) for x in expected]
    assert md.generation == GENERATION


def test_member_data_will_honor_user_data_or_subscription(h):
    owned = parts((topic1, 0), (topic2, 1))
    if h.cooperative:
        h.assignor.on_assignment(Assignment(owned), ConsumerGroupMetadata("group", GENERATION - 1, consumer1))
        user_data = h.assignor.subscription_user_data({topic})
    else:
        user_data = _sticky_user_data(owned, GENERATION - 1)
    md = h.assignor.member_data(Subscription([topic], user_data, [], GENERATION))
    if h.cooperative:   # v2+: owned partitions and generation from the subscription
        assert list(md.partitions) == [] and md.generation == GENERATION
    else:               # eager sticky: always the user data
        assert [tuple(x) for x in md.partitions] == [tuple(x) for x in owned]
        assert md.generation == GENERATION - 1


def test_assignor_with_old_version_subscriptions(h):
    ppt = {topic1: 3}
    topics = [topic1]
    first = h.v1(topics, parts((topic1, 0)), GENERATION) if h.cooperative else h.v0(topics, parts((topic1, 0)), GENERATION)
    subs = {consumer1: first, consumer2: h.v1(topics, parts((topic1, 1)), GENERATION),
            consumer3: h.v2(topics, [], GENERATION)}
    a = h.assign(ppt, subs)
    assert a == {consumer1: parts((topic1, 0)), consumer2: parts((topic1, 1)), consumer3: parts((topic1, 2))}


def test_cooperative_encode_and_decode_generation():
    assignor = CooperativeStickyAssignor()
    sub = Subscription([topic], assignor.subscription_user_data({topic}))
    assert assignor.member_data(sub).generation == DEFAULT_GENERATION
    assignor.on_assignment(Assignment([]), ConsumerGroupMetadata("g", 10, "m"))
    sub = Subscription([topic], assignor.subscription_user_data({topic}))
    assert assignor.member_data(sub).generation == 10
    assert CooperativeStickyAssignor().member_data(Subscription([topic])).generation is None


def test_sticky_user_data_roundtrip():
    assignor = StickyAssignor()
    assert assignor.subscription_user_data({topic}) is None
    assignor.on_assignment(Assignment(parts((topic, 2), (topic, 0), (topic1, 5))),
                           ConsumerGroupMetadata("g", 7, "m"))
    data = assignor.subscription_user_data({topic, topic1})
    # Kafka's layout: topics with their partitions, then the int32 generation
    assert data == encode_sticky_user_data(
        [{"topic": topic, "partitions": [0, 2]}, {"topic": topic1, "partitions": [5]}], 7)
    md = assignor.member_data(Subscription([topic], data))
    assert sorted(md.partitions) == [(topic, 0), (topic, 2), (topic1, 5)] and md.generation == 7
    # unreadable user data: an empty previous assignment
    assert list(assignor.member_data(Subscription([topic], b"\x01")).partitions) == []


def test_large_assignment_and_group_with_uniform_subscription(h):
    """1,000,000 partitions, 2000 consumers; Kafka's test has a 30 s timeout for both rounds."""
    import time
    topics = [name("t", i, 500) for i in range(500)]
    ppt = {t: 2000 for t in topics}
    subs = {name("c", i, 2000): h.subscription(topics) for i in range(2000)}
    start = time.perf_counter()
    a = h.assign(ppt, subs)
    sizes = [len(v) for v in a.values()]
    assert min(sizes) == max(sizes) == 500
    for i in range(1, 2000):
        c = name("c", i, 2000)
        subs[c] = h.v2(topics, a[c], GENERATION)
    b = h.assign(ppt, subs)
    # everyone but c0 (which reported nothing) keeps what it had; c0's partitions stay unmoved too
    assert b == a
    assert time.perf_counter() - start < 30


def test_fast_user_data_reader_agrees_with_the_protocol_decoder():
    """StickyAssignor reads V1 user data with its own fast reader and falls back to
    protocol.consumer.decode_sticky_user_data for anything else: same results."""
    from groupcoord.protocol.consumer import decode_sticky_user_data
    rnd = random.Random(5)
    for _ in range(1500):
        entries = [{"topic": rnd.choice(["a", "bb", "é", "topic-x"]) + str(i),
                    "partitions": [rnd.randint(-1, 99) for _ in range(rnd.randint(0, 4))]}
                   for i in range(rnd.randint(0, 5))]
        data = encode_sticky_user_data(entries, rnd.choice([None, rnd.randint(-1, 9)]))
        if rnd.random() < 0.2:      # damage it
            cut = rnd.randrange(len(data) + 1)
            data = data[:cut] + bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 3)))
        ref = decode_sticky_user_data(data)
        md = StickyAssignor().member_data(Subscription(["a"], data))
        assert [tuple(x) for x in md.partitions] == [(e["topic"], p) for e in ref["previous_assignment"]
                                                     for p in e["partitions"]]
        assert md.generation == ref["generation"]


def test_previous_assignment_readers_agree_with_member_data():
    """Both assignors read the previous assignment of every member straight into partition
    ids (StickyAssignor from V1 user data, falling back to ``member_data`` for anything else,
    unknown topics and partitions included): the same ids and generations as
    ``member_data`` followed by the layout's conversion."""
    from groupcoord.client.assignors.abstract_sticky import AbstractStickyAssignor
    from groupcoord.client.assignors.base import PartitionLayout
    rnd = random.Random(11)
    names = ["a", "bb", "é", "topic-x", "\U0001f600"]
    for _ in range(400):
        ppt = {t + str(i): rnd.randint(1, 70) for i in range(4) for t in names if rnd.random() < 0.6}
        layout = PartitionLayout(ppt)
        subs = []
        for _ in range(rnd.randint(1, 4)):
            entries = []
            for _ in range(rnd.randint(0, 5)):
                t = rnd.choice(list(ppt) or names) if rnd.random() < 0.9 else rnd.choice(names) + "9"
                top = ppt.get(t, 10) - 1 if rnd.random() < 0.9 else 75    # mostly valid
                entries.append({"topic": t, "partitions": [
                    rnd.randint(0, top) for _ in range(rnd.choice([0, 1, 1, 2, 5, 70]))]})
            data = encode_sticky_user_data(entries, rnd.choice([None, rnd.randint(-1, 9)]))
            if rnd.random() < 0.2:      # damage it
                cut = rnd.randrange(len(data) + 1)
                data = data[:cut] + bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 3)))
            if rnd.random() < 0.1:
                data = rnd.choice([None, b"", bytearray(data), memoryview(data)])
            owned = [tp(e["topic"], p) for e in entries for p in e["partitions"]]
            subs.append(Subscription(["a0"], data, owned, rnd.choice([-1, 0, 3, None]),
                                     group_instance_id=None))
        members = [f"m{i}" for i in range(len(subs))]
        for assignor in (StickyAssignor(), CooperativeStickyAssignor()):
            claimed, generations, _ = assignor._previous(layout, members, subs, None)
            ref_claimed, ref_generations, _ = AbstractStickyAssignor._previous(
                assignor, layout, members, subs, None)
            assert claimed == ref_claimed
            assert generations == ref_generations
