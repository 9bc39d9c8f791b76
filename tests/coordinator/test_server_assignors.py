"""The server-side assignors (KIP-848): Kafka's own test cases, then properties on random groups.

The cases mirror Kafka 4.2's ``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/
assignor/``: ``OptimizedUniformAssignmentBuilderTest`` (the homogeneous uniform builder; renamed
``UniformHomogeneousAssignmentBuilderTest`` on trunk), ``UniformHeterogeneousAssignmentBuilderTest``,
``RangeAssignorTest`` and trunk's ``CommonAssignorTests``; each test names the one it mirrors.

Kafka's topic ids there (``T1-A4s3VTwiI5CTbEp6POw``, ...) are kept. Where Kafka's expected
assignment comes from the iteration order of a Java ``HashSet<Uuid>`` (the homogeneous builder's
list of unassigned partitions), ours follows Kafka's ``Uuid.compareTo`` order instead and the test
says so: with 16 buckets Kafka's HashSet holds these ids in the order topic2, topic4, topic3, topic1
(buckets 1, 5, 9, 10), their ``Uuid`` order is topic1 < topic2 < topic3 < topic4.

Properties (seeded ``random``; quick): validity, balance, stickiness, stability and determinism,
also across interpreter hash seeds.
"""
from __future__ import annotations

import base64
import math
import os
import random
import subprocess
import sys
import uuid

import pytest

from groupcoord.coordinator.group.assignors import (ASSIGNORS, GroupSpec, MemberSpec,
                                                    PartitionAssignorError, RangeAssignor, UniformAssignor,
                                                    kafka_uuid_str, range_member_order, sorted_member_ids,
                                                    topic_order, uuid_key)


def kafka_uuid(s: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: URL-safe base64 of the 16 bytes, unpadded."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=="))


T1 = kafka_uuid("T1-A4s3VTwiI5CTbEp6POw")
T2 = kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa")
T4 = kafka_uuid("T4-Tw9fVTLCz5HbPp6YQsa")
UNIFORM = UniformAssignor()
RANGE = RangeAssignor()


def member(subscribed=(), assignment=None, instance_id=None, rack_id=None) -> MemberSpec:
    return MemberSpec(rack_id, instance_id, frozenset(subscribed),
                      {t: frozenset(ps) for t, ps in (assignment or {}).items()})


def group(homogeneous: bool, **members: MemberSpec) -> GroupSpec:
    return GroupSpec(dict(members), homogeneous)


def canonical(result) -> list:
    """The result with each partition set sorted, member and topic order kept: what a serializer
    writes. (The iteration order of a frozenset of ints depends on how it was built; the assignors
    hand back the caller's own frozensets where a member's partitions of a topic do not change.)"""
    return [(m, [(t, sorted(ps)) for t, ps in a.items()]) for m, a in result.items()]


def plain(result) -> dict:
    """{member: {topic: set}} without empty entries, for comparing with Kafka's expectations."""
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


def check_valid(g: GroupSpec, topics, result) -> None:
    """Every partition of a subscribed topic assigned exactly once, to a subscriber; nothing else."""
    assert list(result) == list(g.members)
    owner = {}
    for m, a in result.items():
        for t, ps in a.items():
            assert type(ps) is frozenset and ps, (m, t)
            assert t in g.members[m].subscribed_topic_ids, f"{m} got {t} without subscribing"
            for p in ps:
                assert 0 <= p < topics[t]
                assert (t, p) not in owner, f"{t}-{p} owned by {owner[(t, p)]} and {m}"
                owner[(t, p)] = m
    subscribed = set().union(*(s.subscribed_topic_ids for s in g.members.values()))
    assert len(owner) == sum(topics[t] for t in subscribed)


def sizes(result) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def moved(before, after) -> int:
    """Partitions whose owner changed (or that were unowned before)."""
    owner = {(t, p): m for m, a in before.items() for t, ps in a.items() for p in ps}
    return sum(1 for m, a in after.items() for t, ps in a.items() for p in ps if owner.get((t, p)) != m)


def with_targets(g: GroupSpec, result, order=None) -> GroupSpec:
    """The group again, each member's current target being ``result``'s."""
    order = order or list(g.members)
    return GroupSpec({m: MemberSpec(g.members[m].rack_id, g.members[m].instance_id,
                                    g.members[m].subscribed_topic_ids, result.get(m, {})) for m in order},
                     g.homogeneous)


# -- orders ----------------------------------------------------------------------------------------

def test_uuid_order_is_kafkas_signed_compare():
    # Uuid.compareTo compares the most- then the least-significant 64 bits as signed longs
    neg = uuid.UUID(int=(0x8000000000000000 << 64) | 5)        # msb negative
    zero = uuid.UUID(int=0)
    lsb_neg = uuid.UUID(int=0xFFFFFFFFFFFFFFFF)                 # msb 0, lsb -1
    pos = uuid.UUID(int=(1 << 64))                              # msb 1, lsb 0
    assert topic_order([pos, zero, lsb_neg, neg]) == [neg, lsb_neg, zero, pos]
    assert topic_order([T4, T2, T3, T1]) == [T1, T2, T3, T4]
    assert kafka_uuid_str(T1) == "T1-A4s3VTwiI5CTbEp6POw"
    assert uuid_key(neg) < uuid_key(zero)


def test_member_ids_in_java_string_order():
    # Java compares UTF-16 code units: U+FF61 sorts after a supplementary character (surrogates)
    assert sorted_member_ids(["\uff61", "\U0001f600", "a"]) == ["a", "\U0001f600", "\uff61"]
    assert sorted_member_ids(["b", "B", "a"]) == ["B", "a", "b"]


# -- uniform, homogeneous: Kafka 4.2's OptimizedUniformAssignmentBuilderTest ----------------------------

def test_uniform_homogeneous_one_member_no_topic_subscription():
    # testOneMemberNoTopicSubscription (Kafka returns an empty map; we give every member {})
    assert UNIFORM.assign(group(True, A=member()), {T1: 3}) == {"A": {}}


def test_uniform_homogeneous_subscribed_to_nonexistent_topic():
    # testOneMemberSubscribedToNonexistentTopic
    with pytest.raises(PartitionAssignorError, match="T2-B4s3VTwiI5YHbPp6YU"):
        UNIFORM.assign(group(True, A=member({T2})), {T1: 3})


def test_uniform_homogeneous_first_assignment_two_members_two_topics():
    # testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks. 5 partitions, A gives its extra back,
    # B (the last) must take it; A takes the first 2 of the unassigned list, B the next 3. Kafka's
    # HashSet lists topic3 first (A: t3 0-1, B: t1 0-2); Uuid order lists topic1 first.
    g = group(True, A=member({T1, T3}), B=member({T1, T3}))
    out = UNIFORM.assign(g, {T1: 3, T3: 2})
    assert plain(out) == {"A": {T1: {0, 1}}, "B": {T1: {2}, T3: {0, 1}}}
    check_valid(g, {T1: 3, T3: 2}, out)


def test_uniform_homogeneous_more_members_than_partitions():
    # testFirstAssignmentNumMembersGreaterThanTotalNumPartitions
    g = group(True, A=member({T3}), B=member({T3}), C=member({T3}))
    assert plain(UNIFORM.assign(g, {T3: 2})) == {"A": {}, "B": {T3: {0}}, "C": {T3: {1}}}


def test_uniform_homogeneous_validity_and_balance_large_sample():
    # testValidityAndBalanceForLargeSampleSet: 100 topics of 3 partitions, 49 members
    rnd = random.Random(1)
    topics = {uuid.UUID(int=rnd.getrandbits(128)): 3 for _ in range(100)}
    g = GroupSpec({f"member{i}": member(topics) for i in range(1, 50)}, True)
    out = UNIFORM.assign(g, topics)
    check_valid(g, topics, out)
    assert max(sizes(out).values()) - min(sizes(out).values()) <= 1


def test_uniform_homogeneous_unbalanced_previous_assignment():
    # testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment (A keeps 3 of its 4:
    # topic1 0-1 then topic2 0; topic2 1 goes to B)
    g = group(True, A=member({T1, T2}, {T1: {0, 1}, T2: {0, 1}}), B=member({T1, T2}, {T1: {2}, T2: {2}}))
    assert plain(UNIFORM.assign(g, {T1: 3, T2: 3})) == {"A": {T1: {0, 1}, T2: {0}}, "B": {T1: {2}, T2: {1, 2}}}


def test_uniform_homogeneous_partitions_added():
    # testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics. 11 partitions: A gives its
    # extra back, B (the last) takes it; each keeps its 3 and fills up from the new partitions in
    # list order. Kafka's HashSet lists topic2 first (A: t1 0, 2 and t2 0, 3, 4; B: t1 1, 3, 4, 5
    # and t2 1, 2); Uuid order lists topic1 first.
    g = group(True, A=member({T1, T2}, {T1: {0, 2}, T2: {0}}), B=member({T1, T2}, {T1: {1}, T2: {1, 2}}))
    out = UNIFORM.assign(g, {T1: 6, T2: 5})
    assert plain(out) == {"A": {T1: {0, 2, 3, 4}, T2: {0}}, "B": {T1: {1, 5}, T2: {1, 2, 3, 4}}}
    assert sizes(out) == {"A": 5, "B": 6}       # Kafka's sizes too


def test_uniform_homogeneous_member_added():
    # testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics: the same as
    # Kafka's (A gives up topic2 0, B topic2 2; the list is [t2 0, t2 2] in any topic order)
    g = group(True, A=member({T1, T2}, {T1: {0, 2}, T2: {0}}), B=member({T1, T2}, {T1: {1}, T2: {1, 2}}),
              C=member({T1, T2}))
    assert plain(UNIFORM.assign(g, {T1: 3, T2: 3})) == {
        "A": {T1: {0, 2}}, "B": {T1: {1}, T2: {1}}, "C": {T2: {0, 2}}}


def test_uniform_homogeneous_member_removed():
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics. C's
    # partitions t1 2 and t2 2 are unassigned; A takes the first, B the second. Kafka's HashSet
    # lists topic2 first (A: t2 2, B: t1 2); Uuid order lists topic1 first.
    g = group(True, A=member({T1, T2}, {T1: {0}, T2: {0}}), B=member({T1, T2}, {T1: {1}, T2: {1}}))
    assert plain(UNIFORM.assign(g, {T1: 3, T2: 3})) == {"A": {T1: {0, 2}, T2: {0}}, "B": {T1: {1}, T2: {1, 2}}}


def test_uniform_homogeneous_subscription_removed():
    # testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    g = group(True, A=member({T2}, {T1: {0}, T2: {0}}), B=member({T2}, {T1: {1}, T2: {1}}))
    assert plain(UNIFORM.assign(g, {T1: 2, T2: 2})) == {"A": {T2: {0}}, "B": {T2: {1}}}


def test_uniform_homogeneous_stickiness_when_already_balanced():
    # testReassignmentStickinessWhenAlreadyBalanced (KAFKA-18688): A and C hold the two extras; A,
    # first, keeps its extra instead of taking one from C. (B and C subscribe to more topics: the
    # builder reads the first member's subscription, as Kafka's.)
    g = group(True, A=member({T1}, {T1: {0, 3}}), B=member({T1, T2}, {T1: {1}}), C=member({T1, T2}, {T1: {2, 4}}))
    assert plain(UNIFORM.assign(g, {T1: 5, T2: 3})) == {"A": {T1: {0, 3}}, "B": {T1: {1}}, "C": {T1: {2, 4}}}


def test_uniform_homogeneous_kafka_4_0_0_would_move():
    # Before KAFKA-18688 (Kafka 4.0.0) the extras went to the first members in order: here B would
    # have taken one of C's partitions. Now nothing moves.
    g = group(True, A=member({T1}, {T1: {0, 1}}), B=member({T1}, {T1: {2}}), C=member({T1}, {T1: {3, 4}}))
    assert plain(UNIFORM.assign(g, {T1: 5})) == {"A": {T1: {0, 1}}, "B": {T1: {2}}, "C": {T1: {3, 4}}}


# -- uniform, heterogeneous: Kafka 4.2's UniformHeterogeneousAssignmentBuilderTest ---------------------

def test_uniform_heterogeneous_no_topic_subscription():
    # testTwoMembersNoTopicSubscription
    assert UNIFORM.assign(group(False, A=member(), B=member()), {T1: 3}) == {"A": {}, "B": {}}


def test_uniform_heterogeneous_nonexistent_topics():
    # testTwoMembersSubscribedToNonexistentTopics
    with pytest.raises(PartitionAssignorError):
        UNIFORM.assign(group(False, A=member({T3}), B=member({T2})), {T1: 3})


def test_uniform_heterogeneous_first_assignment_two_members_two_topics():
    # testFirstAssignmentTwoMembersTwoTopics
    g = group(False, A=member({T1, T3}), B=member({T3}))
    assert plain(UNIFORM.assign(g, {T1: 3, T3: 6})) == {"A": {T1: {0, 1, 2}, T3: {4}}, "B": {T3: {0, 1, 2, 3, 5}}}


def test_uniform_heterogeneous_more_members_than_partitions():
    # testFirstAssignmentNumMembersGreaterThanTotalNumPartitions
    g = group(False, A=member({T3}), B=member({T3}), C=member({T1}))
    assert plain(UNIFORM.assign(g, {T1: 2, T3: 1})) == {"A": {T3: {0}}, "B": {}, "C": {T1: {0, 1}}}


def test_uniform_heterogeneous_unbalanced_previous_assignment():
    # testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment
    g = group(False, A=member({T1}, {T1: {0, 1, 2}}), B=member({T1, T2}, {T1: {3}, T2: {0}}),
              C=member({T1, T2, T3}, {T1: {4, 5}, T2: {1, 2, 3}, T3: {0, 1, 2, 3}}))
    assert plain(UNIFORM.assign(g, {T1: 6, T2: 4, T3: 4})) == {
        "A": {T1: {0, 1, 2, 5}}, "B": {T1: {3}, T2: {0, 1, 2, 3}}, "C": {T1: {4}, T3: {0, 1, 2, 3}}}


def test_uniform_heterogeneous_partitions_added():
    # testReassignmentWhenPartitionsAreAddedForTwoMembers
    g = group(False, A=member({T1, T3}, {T1: {0, 1, 2, 3}, T3: {0, 1}}),
              B=member({T1, T2, T3, T4}, {T2: {0, 1, 2}, T4: {0, 1, 2}}))
    assert plain(UNIFORM.assign(g, {T1: 6, T2: 5, T3: 3, T4: 3})) == {
        "A": {T1: {0, 1, 2, 3, 4, 5}, T3: {0, 1, 2}}, "B": {T2: {0, 1, 2, 3, 4}, T4: {0, 1, 2}}}


def test_uniform_heterogeneous_member_and_partitions_added():
    # testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics
    g = group(False, A=member({T1}, {T1: {0, 2}, T2: {0}}), B=member({T1, T2}, {T1: {1}, T2: {1, 2}}),
              C=member({T1, T2}))
    assert plain(UNIFORM.assign(g, {T1: 6, T2: 7})) == {
        "A": {T1: {0, 2, 3, 4, 5}}, "B": {T1: {1}, T2: {1, 2, 6}}, "C": {T2: {0, 3, 4, 5}}}


def test_uniform_heterogeneous_member_removed():
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics
    g = group(False, A=member({T1, T3}, {T1: {0, 1, 2}, T3: {0, 1}}), B=member({T2}, {T2: {3, 4, 5, 6}}))
    assert plain(UNIFORM.assign(g, {T1: 3, T2: 8, T3: 3})) == {
        "A": {T1: {0, 1, 2}, T3: {0, 1, 2}}, "B": {T2: set(range(8))}}


def test_uniform_heterogeneous_subscription_removed():
    # testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    g = group(False, A=member({T1}, {T1: {0, 2}, T2: {1, 3}}), B=member({T1, T2}, {T1: {1}, T2: {0, 2, 4}}))
    assert plain(UNIFORM.assign(g, {T1: 3, T2: 5})) == {"A": {T1: {0, 1, 2}}, "B": {T2: {0, 1, 2, 3, 4}}}


def test_uniform_heterogeneous_topic_partitions_run_out():
    # testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions
    g = group(False, A=member({T1, T2, T3}, {T1: {0, 1}, T2: {0, 1}, T3: {0, 1}}), B=member({T1, T2, T3}))
    assert plain(UNIFORM.assign(g, {T1: 2, T2: 2, T3: 2})) == {
        "A": {T2: {0}, T3: {0, 1}}, "B": {T1: {0, 1}, T2: {1}}}


def test_uniform_heterogeneous_member_without_subscriptions():
    # testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions
    g = group(False, A=member({T1}), B=member())
    assert plain(UNIFORM.assign(g, {T1: 3})) == {"A": {T1: {0, 1, 2}}, "B": {}}


# -- range: Kafka 4.2's RangeAssignorTest ---------------------------------------------------------------

def test_range_one_member_no_topic():
    # testOneMemberNoTopic
    assert RANGE.assign(group(True, A=member()), {}) == {"A": {}}


def test_range_nonexistent_topic():
    # testOneMemberSubscribedToNonExistentTopic
    with pytest.raises(PartitionAssignorError, match="non-existent topic"):
        RANGE.assign(group(True, A=member({T2})), {T1: 3})


def test_range_two_members_same_subscriptions():
    # testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions
    g = group(True, A=member({T1, T3}), B=member({T1, T3}))
    assert plain(RANGE.assign(g, {T1: 3, T3: 2})) == {"A": {T1: {0, 1}, T3: {0}}, "B": {T1: {2}, T3: {1}}}


def test_range_three_members_different_subscriptions():
    # testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions
    g = group(False, A=member({T1, T2}), B=member({T3}), C=member({T2, T3}))
    assert plain(RANGE.assign(g, {T1: 3, T2: 3, T3: 2})) == {
        "A": {T1: {0, 1, 2}, T2: {0, 1}}, "B": {T3: {0}}, "C": {T2: {2}, T3: {1}}}


def test_range_more_members_than_partitions():
    # testFirstAssignmentNumMembersGreaterThanNumPartitions
    g = group(True, A=member({T1, T3}), B=member({T1, T3}), C=member({T1, T3}))
    assert plain(RANGE.assign(g, {T1: 3, T3: 2})) == {
        "A": {T1: {0}, T3: {0}}, "B": {T1: {1}, T3: {1}}, "C": {T1: {2}}}


def test_range_static_membership():
    # testStaticMembership: A restarts as A1 with the same instance id and keeps its range
    g = group(True, A=member({T1}, instance_id="instanceA"), B=member({T1}, instance_id="instanceB"))
    first = RANGE.assign(g, {T1: 3})
    g2 = group(True, B=member({T1}, instance_id="instanceB"), A1=member({T1}, instance_id="instanceA"))
    second = RANGE.assign(g2, {T1: 3})
    assert second["A1"] == first["A"] and second["B"] == first["B"]


def test_range_mixed_static_membership():
    # testMixedStaticMembership
    g = group(True, A=member({T1}, instance_id="instanceA"), C=member({T1}, instance_id="instanceC"),
              B=member({T1}))
    first = RANGE.assign(g, {T1: 5})
    assert range_member_order(g) == ["A", "C", "B"]         # static first, by instance id
    g2 = group(True, C=member({T1}, instance_id="instanceC"), B=member({T1}),
               A1=member({T1}, instance_id="instanceA"))
    second = RANGE.assign(g2, {T1: 5})
    assert (second["A1"], second["B"], second["C"]) == (first["A"], first["B"], first["C"])


def test_range_member_added_more_members_than_partitions():
    # testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded
    g = group(True, A=member({T1, T2}, {T1: {0}, T2: {0}}), B=member({T1, T2}, {T1: {1}, T2: {1}}),
              C=member({T1, T2}))
    assert plain(RANGE.assign(g, {T1: 2, T2: 2})) == {"A": {T1: {0}, T2: {0}}, "B": {T1: {1}, T2: {1}}, "C": {}}


def test_range_partition_added():
    # testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics
    g = group(True, A=member({T1, T2}, {T1: {0, 1}, T2: {0, 1}}), B=member({T1, T2}, {T1: {2}, T2: {2}}))
    assert plain(RANGE.assign(g, {T1: 4, T2: 4})) == {"A": {T1: {0, 1}, T2: {0, 1}}, "B": {T1: {2, 3}, T2: {2, 3}}}


def test_range_member_added():
    # testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics
    g = group(True, A=member({T1, T2}, {T1: {0, 1}, T2: {0, 1}}), B=member({T1, T2}, {T1: {2}, T2: {2}}),
              C=member({T1, T2}))
    assert plain(RANGE.assign(g, {T1: 3, T2: 3})) == {
        "A": {T1: {0}, T2: {0}}, "B": {T1: {1}, T2: {1}}, "C": {T1: {2}, T2: {2}}}


def test_range_member_and_partition_added():
    # testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics
    g = group(False, A=member({T1, T2}, {T1: {0, 1}, T2: {0, 1}}), B=member({T1, T2}, {T1: {2}, T2: {2}}),
              C=member({T1}))
    assert plain(RANGE.assign(g, {T1: 4, T2: 3})) == {
        "A": {T1: {0, 1}, T2: {0, 1}}, "B": {T1: {2}, T2: {2}}, "C": {T1: {3}}}


def test_range_member_removed():
    # testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics
    g = group(True, B=member({T1, T2}, {T1: {2}, T2: {2}}))
    assert plain(RANGE.assign(g, {T1: 3, T2: 3})) == {"B": {T1: {0, 1, 2}, T2: {0, 1, 2}}}


def test_range_subscriptions_changed():
    # testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics
    g = group(False, A=member({T1}, {T1: {0, 1, 2}, T2: {0}}), B=member({T1, T2, T3}, {T2: {1}}),
              C=member({T2}, {T2: {2}, T3: {0, 1}}))
    assert plain(RANGE.assign(g, {T1: 3, T2: 3, T3: 2})) == {
        "A": {T1: {0, 1}}, "B": {T1: {2}, T2: {0, 1}, T3: {0, 1}}, "C": {T2: {2}}}


def test_range_heterogeneous_checks_every_members_topics():
    g = group(False, A=member({T1}), B=member({T2}))
    with pytest.raises(PartitionAssignorError):
        RANGE.assign(g, {T1: 3})


# -- trunk's CommonAssignorTests ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["uniform", "range"])
@pytest.mark.parametrize("homogeneous", [True, False])
def test_reassignment_stickiness_any_member_order(name, homogeneous):
    # CommonAssignorTests.testReassignmentStickiness: rerun on its own result, members in every
    # order: the same assignment
    assignor = ASSIGNORS[name]
    topics = {T1: 2, T2: 5, T3: 7}
    g = group(homogeneous, A=member(topics), B=member(topics), C=member(topics))
    first = assignor.assign(g, topics)
    for order in (["A", "B", "C"], ["A", "C", "B"], ["B", "A", "C"], ["B", "C", "A"], ["C", "A", "B"],
                  ["C", "B", "A"]):
        again = assignor.assign(with_targets(g, first, order), topics)
        assert plain(again) == plain(first)
        assert list(again) == order                 # the result lists the members in the group's order


@pytest.mark.parametrize("homogeneous", [True, False])
def test_uniform_reuses_unchanged_partition_sets(homogeneous):
    # CommonAssignorTests.testAssignmentReuse: Kafka hands back the same immutable maps; here the
    # same frozensets
    topics = {T1: 2, T2: 5, T3: 7}
    g = group(homogeneous, A=member(topics), B=member(topics), C=member(topics))
    g2 = with_targets(g, UNIFORM.assign(g, topics))
    again = UNIFORM.assign(g2, topics)
    for m, a in again.items():
        for t, ps in a.items():
            assert ps is g2.members[m].assignment[t]


# -- properties on random groups ------------------------------------------------------------------------

def random_case(rnd: random.Random, homogeneous: bool, max_members=12, max_topics=6):
    """(group, topics): random partition counts, subscriptions and current targets (valid: a
    partition in at most one target, some targets holding topics no longer subscribed), some static
    members."""
    topics = {uuid.UUID(int=rnd.getrandbits(128)): rnd.randint(0, 20) for _ in range(rnd.randint(1, max_topics))}
    ids = list(topics)
    count = rnd.randint(1, max_members)
    everything = frozenset(rnd.sample(ids, rnd.randint(1, len(ids))))
    subs = [everything if homogeneous else frozenset(rnd.sample(ids, rnd.randint(0, len(ids))))
            for _ in range(count)]
    names = [f"m{rnd.getrandbits(24):06x}" for _ in range(count)]
    owned: dict[str, dict] = {n: {} for n in names}
    for t, n in topics.items():
        for p in range(n):
            if rnd.random() < 0.6:
                owner = rnd.choice(names)
                owned[owner].setdefault(t, set()).add(p)
    members = {}
    for n, s in zip(names, subs):
        inst = f"i{rnd.getrandbits(16):04x}" if rnd.random() < 0.3 else None
        members[n] = MemberSpec(None, inst, s, {t: frozenset(ps) for t, ps in owned[n].items()})
    return GroupSpec(members, homogeneous), topics


def kafka_balanced(g: GroupSpec, result) -> bool:
    """Kafka's checkValidityAndBalance criterion: no partition can move to a subscriber of its topic
    holding two or more fewer partitions than its owner."""
    size = sizes(result)
    for m, a in result.items():
        for t in a:
            for other, spec in g.members.items():
                if t in spec.subscribed_topic_ids and size[other] <= size[m] - 2:
                    return False
    return True


@pytest.mark.parametrize("homogeneous", [True, False])
@pytest.mark.parametrize("name", ["uniform", "range"])
def test_random_groups_valid_and_balanced(name, homogeneous):
    rnd = random.Random(f"{name}-{homogeneous}")
    assignor = ASSIGNORS[name]
    for n in range(400):
        g, topics = random_case(rnd, homogeneous, *((12, 6) if n % 4 else (60, 12)))
        out = assignor.assign(g, topics)
        check_valid(g, topics, out)
        if name == "range":
            # per topic, its subscribers' shares differ by at most one, in range order
            order = range_member_order(g)
            for t in topics:
                subs = [m for m in order if t in g.members[m].subscribed_topic_ids]
                shares = [len(out[m].get(t, ())) for m in subs]
                assert shares == sorted(shares, reverse=True) and (not shares or shares[0] - shares[-1] <= 1)
        elif homogeneous:
            assert max(sizes(out).values()) - min(sizes(out).values()) <= 1
        else:
            assert kafka_balanced(g, out)


@pytest.mark.parametrize("homogeneous", [True, False])
def test_uniform_is_stable_on_its_own_result(homogeneous):
    # running again on its result moves nothing (KAFKA-18688's property for homogeneous groups)
    rnd = random.Random(f"stable-{homogeneous}")
    for n in range(200):
        g, topics = random_case(rnd, homogeneous, *((12, 6) if n % 4 else (60, 12)))
        first = UNIFORM.assign(g, topics)
        members = list(g.members)
        rnd.shuffle(members)
        again = UNIFORM.assign(with_targets(g, first, members), topics)
        assert plain(again) == plain(first)


def test_uniform_homogeneous_leave_moves_only_the_leavers_partitions():
    rnd = random.Random(7)
    for _ in range(200):
        g, topics = random_case(rnd, True)
        if len(g.members) < 2:
            continue
        balanced = UNIFORM.assign(g, topics)
        leaver = rnd.choice(list(g.members))
        rest = with_targets(GroupSpec({m: s for m, s in g.members.items() if m != leaver}, True), balanced)
        after = UNIFORM.assign(rest, topics)
        for m, a in after.items():
            for t, ps in balanced[m].items():
                assert ps <= a.get(t, frozenset()), f"{m} lost partitions of {t} when {leaver} left"
        assert moved({m: a for m, a in balanced.items() if m != leaver}, after) == sizes(balanced)[leaver]


def test_uniform_homogeneous_join_moves_at_most_a_fair_share():
    rnd = random.Random(8)
    for _ in range(200):
        g, topics = random_case(rnd, True)
        balanced = UNIFORM.assign(g, topics)
        spec = next(iter(g.members.values()))
        members = dict(with_targets(g, balanced).members)
        members["zz-new"] = MemberSpec(None, None, spec.subscribed_topic_ids, {})
        after = UNIFORM.assign(GroupSpec(members, True), topics)
        total = sum(sizes(after).values())
        assert moved(balanced, after) <= math.ceil(total / len(members))
        assert moved(balanced, after) == sizes(after)["zz-new"]      # only the newcomer gains


def test_range_static_members_keep_ranges_across_restarts():
    rnd = random.Random(9)
    for _ in range(100):
        g, topics = random_case(rnd, rnd.random() < 0.5)
        first = RANGE.assign(g, topics)
        # every static member restarts with a new member id
        renamed = {(f"new-{m}" if s.instance_id else m): s for m, s in g.members.items()}
        second = RANGE.assign(GroupSpec(renamed, g.homogeneous), topics)
        for m, s in g.members.items():
            assert second[f"new-{m}" if s.instance_id else m] == first[m]


@pytest.mark.parametrize("name", ["uniform", "range"])
@pytest.mark.parametrize("homogeneous", [True, False])
def test_deterministic_whatever_the_input_order(name, homogeneous):
    # The same input twice: the same output, dict order included. Members inserted in another
    # order, targets' topics in another order, partition sets built in another order: the same
    # mapping, each member's topics in the same (Uuid) order; the result lists members in the
    # group's order.
    rnd = random.Random(f"det-{name}-{homogeneous}")
    assignor = ASSIGNORS[name]
    for _ in range(100):
        g, topics = random_case(rnd, homogeneous)
        out = assignor.assign(g, topics)
        assert canonical(assignor.assign(g, topics)) == canonical(out)
        names = list(g.members)
        rnd.shuffle(names)
        shuffled = {}
        for m in names:
            s = g.members[m]
            ts = list(s.assignment)
            rnd.shuffle(ts)
            shuffled[m] = MemberSpec(s.rack_id, s.instance_id, frozenset(reversed(list(s.subscribed_topic_ids))),
                                     {t: frozenset(sorted(s.assignment[t], reverse=True)) for t in ts})
        again = assignor.assign(GroupSpec(shuffled, homogeneous), topics)
        assert list(again) == names
        assert canonical({m: again[m] for m in g.members}) == canonical(out)


_DIGEST = r"""
import hashlib, random, sys
sys.path.insert(0, {tests!r})
from test_server_assignors import canonical, random_case
from groupcoord.coordinator.group.assignors import ASSIGNORS
rnd = random.Random(11)
h = hashlib.sha256()
for i in range(60):
    g, topics = random_case(rnd, i % 2 == 0, max_members=30)
    for name in ("uniform", "range"):
        h.update(repr(canonical(ASSIGNORS[name].assign(g, topics))).encode())
print(h.hexdigest())
"""


def test_same_output_across_hash_seeds():
    # member ids are str, whose hashes change with PYTHONHASHSEED: the output must not
    code = _DIGEST.format(tests=os.path.dirname(__file__))
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        digests.add(proc.stdout.strip())
    assert len(digests) == 1, digests


def test_assignors_registry():
    assert list(ASSIGNORS) == ["uniform", "range"]
    assert all(a.name == n for n, a in ASSIGNORS.items())
    assert ASSIGNORS["uniform"].assign(GroupSpec({}, True), {}) == {}
