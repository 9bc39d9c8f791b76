"""Kafka's SimpleAssignor, the share groups' assignor, after its SimpleAssignorTest: Kafka 4.2+'s
balanced builders (``assign``) and Kafka 4.1's hashing one (``assign_4_1``, whose test pins exact
assignments), each test naming the case it mirrors."""
from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.group.assignors.spec import GroupSpec, MemberSpec, PartitionAssignorError
from groupcoord.coordinator.group.share.assignor import assign, assign_4_1

# topic ids in Kafka's Uuid order T1 < T2 < T3 < T4 (the order the tests' LinkedHashSets give them)
T1, T2, T3, T4 = (uuid.UUID(int=(i << 64) + i) for i in range(1, 5))
A, B, C = "A", "B", "C"
BOTH = pytest.mark.parametrize("algorithm", [assign, assign_4_1], ids=["4.2+", "4.1"])


def member(*topics, assignment=None) -> MemberSpec:
    return MemberSpec(None, None, frozenset(topics), assignment or {})


def covered(result) -> int:
    """SimpleAssignorTest.assertEveryPartitionGetsAssignment: how many partitions some member has."""
    return len({(t, p) for parts in result.values() for t, ps in parts.items() for p in ps})


def plain(result) -> dict:
    return {m: {t: sorted(ps) for t, ps in parts.items()} for m, parts in result.items()}


@BOTH
def test_no_members_and_no_subscriptions(algorithm):
    # testAssignWithEmptyMembers, testAssignWithNoSubscribedTopic
    assert algorithm(GroupSpec({}, True), {}) == {} == algorithm(GroupSpec({}, False), {})
    assert algorithm(GroupSpec({A: member()}, True), {T1: 3}) == {}


@BOTH
def test_a_subscribed_topic_missing_from_the_metadata(algorithm):
    # testAssignWithSubscribedToNonExistentTopic
    with pytest.raises(PartitionAssignorError, match="which doesn't exist in the topic metadata"):
        algorithm(GroupSpec({A: member(T2)}, True), {T1: 3})


@BOTH
def test_two_members_two_topics_homogeneous(algorithm):
    # testAssignWithTwoMembersAndTwoTopicsHomogeneous (and WithAllowedMap, WithNonAssignableTopic)
    members = {A: member(T1, T3), B: member(T1, T3)}
    assert covered(algorithm(GroupSpec(members, True), {T1: 3, T3: 2})) == 5
    assert covered(algorithm(GroupSpec(members, True), {T1: 3, T3: 3}, {T1: {0, 1, 2}, T3: {0, 1}})) == 5
    result = algorithm(GroupSpec(members, True), {T1: 3, T3: 2}, {T1: {0, 1, 2}})
    assert covered(result) == 3 and all(T3 not in parts for parts in result.values())


def test_two_members_two_topics_homogeneous_as_4_1_hashes_them():
    # Kafka 4.1's testAssignWithTwoMembersAndTwoTopicsHomogeneous: A (hash 65) and B (66) hashed to a
    # partition each, the rest round-robin
    result = assign_4_1(GroupSpec({A: member(T1, T3), B: member(T1, T3)}, True), {T1: 3, T3: 2})
    assert plain(result) == {A: {T1: [0, 2], T3: [1]}, B: {T1: [1], T3: [0]}}


def test_a_current_assignment_as_4_1_hashes_it():
    # Kafka 4.1's testAssignWithCurrentAssignmentHomogeneous: hashing, round-robin, then what the
    # current assignment adds (nothing here)
    first = assign_4_1(GroupSpec({A: member(T1, T2), B: member(T1, T2)}, True), {T1: 3, T2: 2})
    assert plain(first) == {A: {T1: [0, 2], T2: [1]}, B: {T1: [1], T2: [0]}}
    members = {A: member(T2, T3, assignment=first[A]), B: member(T2, T3, assignment=first[B]), C: member(T2, T3)}
    second = assign_4_1(GroupSpec(members, True), {T2: 2, T3: 3})
    assert plain(second) == {A: {T2: [0], T3: [1]}, B: {T2: [1], T3: [2]}, C: {T3: [0]}}


@BOTH
def test_three_members_three_topics_heterogeneous(algorithm):
    # testAssignWithThreeMembersThreeTopicsHeterogeneous (and WithAllowedMap)
    members = {A: member(T1, T2), B: member(T3), C: member(T2, T3)}
    assert covered(algorithm(GroupSpec(members, False), {T1: 3, T2: 3, T3: 2})) == 8
    assert covered(algorithm(GroupSpec(members, False), {T1: 3, T2: 3, T3: 2},
                             {T1: {0, 1}, T2: {0, 2}, T3: {1}})) == 5


def test_three_members_three_topics_heterogeneous_as_4_1_hashes_them():
    # Kafka 4.1's testAssignWithThreeMembersThreeTopicsHeterogeneous (and WithAllowedMap): each member
    # hashed among its topics' partitions, the rest round-robin per topic among its subscribers
    members = {A: member(T1, T2), B: member(T3), C: member(T2, T3)}
    expected = {A: {T1: [0, 1, 2], T2: [0, 2]}, B: {T3: [0, 1]}, C: {T2: [1, 2]}}
    assert plain(assign_4_1(GroupSpec(members, False), {T1: 3, T2: 3, T3: 2})) == expected
    assert plain(assign_4_1(GroupSpec(members, False), {T1: 3, T2: 3, T3: 2},
                            {T1: {0, 1, 2}, T2: {0, 1, 2}, T3: {0, 1}})) == expected


@BOTH
def test_three_members_three_topics_heterogeneous_with_a_topic_not_assignable(algorithm):
    # testAssignWithThreeMembersThreeTopicsHeterogeneousWithNonAssignableTopic: the same exact
    # assignment in 4.1 and 4.3
    members = {A: member(T1, T2), B: member(T3), C: member(T2, T3)}
    result = algorithm(GroupSpec(members, False), {T1: 3, T2: 3, T3: 2}, {T1: {0, 1, 2}, T2: {0, 1, 2}})
    assert covered(result) == 6
    assert plain(result) == {A: {T1: [0, 1, 2], T2: [0, 2]}, B: {}, C: {T2: [1]}}


@BOTH
def test_one_member_without_topics_heterogeneous(algorithm):
    # testAssignWithOneMemberNoAssignedTopicHeterogeneous
    result = algorithm(GroupSpec({A: member(T1, T2), B: member()}, False), {T1: 3, T2: 2})
    assert plain(result) == {A: {T1: [0, 1, 2], T2: [0, 1]}, B: {}}


def test_partitions_are_shared_when_members_outnumber_them():
    # the homogeneous builder's arithmetic: desired sharing ceil(M / P), counts differing by at most one
    for members, partitions, counts in ((3, 1, [1, 1, 1]), (3, 2, [2, 1, 1]), (2, 4, [2, 2]), (5, 2, [2, 1, 1, 1, 1])):
        spec = GroupSpec({f"m{i}": member(T1) for i in range(members)}, True)
        result = assign(spec, {T1: partitions})
        assert [sum(len(ps) for ps in parts.values()) for parts in result.values()] == counts
        sharing = -(-members // partitions)
        holders = [sum(p in parts.get(T1, ()) for parts in result.values()) for p in range(partitions)]
        assert holders == [sharing] * partitions


@pytest.mark.parametrize("heterogeneous", [False, True])
def test_members_come_one_by_one_then_go(heterogeneous):
    # testIncrementalAssignmentIncreasingMembersHomogeneous / DecreasingMembersHomogeneous and their
    # Heterogeneous cases: 24 partitions, up to 101 members; every partition assigned at every step
    topics = {T1: 12, T2: 8, T3: 4} if heterogeneous else {T1: 24}
    subscriptions = [frozenset({T1, T2, T3}), frozenset({T2}), frozenset({T3}), frozenset({T1, T2})]
    members: dict[str, MemberSpec] = {}

    def subscription(i: int) -> frozenset:
        return subscriptions[i % 4] if heterogeneous else frozenset({T1})

    def step() -> None:
        result = assign(GroupSpec(dict(members), not heterogeneous), topics)
        assert covered(result) == 24
        for m, parts in result.items():
            members[m] = MemberSpec(None, None, members[m].subscribed_topic_ids, parts)
        if not heterogeneous:                                       # balanced as well
            counts = [sum(len(ps) for ps in parts.values()) for parts in result.values()]
            assert max(counts) - min(counts) <= 1

    for i in range(101):
        members[f"M{i}"] = MemberSpec(None, None, subscription(i), {})
        step()
    for i in range(100, 0, -1):
        del members[f"M{i}"]
        step()


def test_a_current_target_is_kept_where_it_balances():
    # testAssignWithCurrentAssignmentHeterogeneous: members change their subscriptions, a topic comes;
    # every partition assigned, and what a member keeps subscribing to it keeps
    first = assign(GroupSpec({A: member(T1, T2), B: member(T3), C: member(T2, T3)}, False), {T1: 3, T2: 3, T3: 2})
    assert covered(first) == 8
    members = {A: member(T1, T2, T3, assignment={T1: frozenset({0, 1, 2}), T2: frozenset({0, 2})}),
               B: member(T3, T4, assignment={T3: frozenset({0, 1})})}
    second = assign(GroupSpec(members, False), {T1: 3, T2: 3, T3: 2, T4: 1})
    assert covered(second) == 9
    assert second[A][T1] == frozenset({0, 1, 2})


def test_the_homogeneous_builder_drops_topics_no_longer_subscribed():
    # SimpleHomogeneousAssignmentBuilder.revokeUnassignablePartitions
    members = {A: member(T1, assignment={T1: frozenset({0}), T2: frozenset({0, 1})}), B: member(T1)}
    assert plain(assign(GroupSpec(members, True), {T1: 2})) == {A: {T1: [0]}, B: {T1: [1]}}
