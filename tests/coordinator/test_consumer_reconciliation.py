"""Member reconciliation of the consumer group protocol (coordinator/group/consumer.py), after
Kafka's CurrentAssignmentBuilderTest (group-coordinator, modern/consumer), and the partition
epochs that keep a partition from being owned twice (ConsumerGroupTest)."""
from __future__ import annotations

import uuid

import pytest

from groupcoord.coordinator.group.consumer.group import (
    ConsumerGroup,
    ConsumerGroupMember,
    FencedMemberEpoch,
    MemberState,
    OwnershipError,
    reconcile,
    uuid_order,
)

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
BOTH = frozenset({T1, T2})
STABLE, UNREVOKED, UNRELEASED, UNKNOWN = (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS,
                                          MemberState.UNRELEASED_PARTITIONS, MemberState.UNKNOWN)


def parts(a=(), b=(), epoch=10) -> dict:
    out = {}
    if a:
        out[T1] = {p: epoch for p in a}
    if b:
        out[T2] = {p: epoch for p in b}
    return out


def target(a=(), b=()) -> dict:
    return {t: frozenset(ps) for t, ps in ((T1, a), (T2, b)) if ps}


def member(state, epoch, previous, assigned, pending=None) -> ConsumerGroupMember:
    return ConsumerGroupMember("member", member_epoch=epoch, previous_member_epoch=previous, state=state,
                               assigned=assigned, pending_revocation=pending or {})


def owned(a=(), b=()) -> list:
    return [(T1, list(a)), (T2, list(b))]


def shape(m: ConsumerGroupMember) -> tuple:
    return (m.state, m.member_epoch, m.previous_member_epoch,
            {t: sorted(ps) for t, ps in m.assigned.items()},
            {t: sorted(ps) for t, ps in m.pending_revocation.items()})


def run(m, epoch, tgt, partition_epoch, owned_partitions=None, subscribed=BOTH):
    return reconcile(m, epoch, tgt, lambda t, p: partition_epoch(t, p), subscribed, owned_partitions)


def test_stable_to_stable():                                   # testStableToStable
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    out = run(m, 11, target((1, 2, 3), (4, 5, 6)), lambda t, p: 10)
    assert shape(out) == (STABLE, 11, 10, {T1: [1, 2, 3], T2: [4, 5, 6]}, {})


def test_stable_to_stable_with_new_partitions():               # testStableToStableWithNewPartitions
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    out = run(m, 11, target((1, 2, 3, 4), (4, 5, 6, 7)), lambda t, p: -1)
    assert shape(out) == (STABLE, 11, 10, {T1: [1, 2, 3, 4], T2: [4, 5, 6, 7]}, {})
    # the new partitions carry the epoch they were assigned at (KIP-1251), the kept ones theirs
    assert out.assigned[T1][4] == 11 and out.assigned[T1][1] == 10


def test_stable_to_unrevoked_partitions():                     # testStableToUnrevokedPartitions
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    out = run(m, 11, target((2, 3, 4), (5, 6, 7)), lambda t, p: -1)
    assert shape(out) == (UNREVOKED, 10, 10, {T1: [2, 3], T2: [5, 6]}, {T1: [1], T2: [4]})


def test_stable_to_unreleased_partitions():                    # testStableToUnreleasedPartitions
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    out = run(m, 11, target((1, 2, 3, 4), (4, 5, 6, 7)), lambda t, p: 10)
    assert shape(out) == (UNRELEASED, 11, 10, {T1: [1, 2, 3], T2: [4, 5, 6]}, {})


def test_stable_to_unreleased_with_owned_partitions_not_having_the_revoked_ones():
    # testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions: partition 6
    # is revoked, but the member already reports it gone, so it moves on at once
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    out = run(m, 11, target((1, 2, 3), (4, 5, 7)), lambda t, p: 10 if t == T2 else -1, [])
    assert shape(out) == (UNRELEASED, 11, 10, {T1: [1, 2, 3], T2: [4, 5]}, {})


def test_unrevoked_partitions_to_stable():                     # testUnrevokedPartitionsToStable
    m = member(UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))
    out = run(m, 11, target((2, 3), (5, 6)), lambda t, p: -1, owned((2, 3), (5, 6)))
    assert shape(out) == (STABLE, 11, 10, {T1: [2, 3], T2: [5, 6]}, {})


@pytest.mark.parametrize("still_owned", [None, owned((1, 2, 3), (5, 6)), owned((2, 3), (4, 5, 6))],
                         ids=["unchanged", "still-owns-1", "still-owns-4"])
def test_remains_in_unrevoked_partitions(still_owned):        # testRemainsInUnrevokedPartitions
    m = member(UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))
    assert run(m, 12, target((3,), (6,)), lambda t, p: -1, still_owned) is m


def test_unrevoked_partitions_to_unrevoked_partitions():       # testUnrevokedPartitionsToUnrevokedPartitions
    # Kafka trunk (after the 1eb7644 snapshot, whose test expects epoch 11): the member revokes
    # again at its own epoch; it advances once nothing is left to revoke
    m = member(UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))
    out = run(m, 12, target((3,), (6,)), lambda t, p: -1, owned((2, 3), (5, 6)))
    assert shape(out) == (UNREVOKED, 10, 10, {T1: [3], T2: [6]}, {T1: [2], T2: [5]})


def test_unrevoked_partitions_to_unreleased_partitions():      # testUnrevokedPartitionsToUnreleasedPartitions
    m = member(UNREVOKED, 11, 10, parts((2, 3), (5, 6)))
    out = run(m, 11, target((2, 3, 4), (5, 6, 7)), lambda t, p: 10, owned((2, 3), (5, 6)))
    assert shape(out) == (UNRELEASED, 11, 11, {T1: [2, 3], T2: [5, 6]}, {})


def test_unreleased_partitions_to_stable():                    # testUnreleasedPartitionsToStable
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    out = run(m, 12, target((2, 3), (5, 6)), lambda t, p: 10)
    assert shape(out) == (STABLE, 12, 11, {T1: [2, 3], T2: [5, 6]}, {})


def test_unreleased_partitions_to_stable_with_new_partitions():  # testUnreleasedPartitionsToStableWithNewPartitions
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    out = run(m, 11, target((2, 3, 4), (5, 6, 7)), lambda t, p: -1)
    assert shape(out) == (STABLE, 11, 11, {T1: [2, 3, 4], T2: [5, 6, 7]}, {})


def test_unreleased_partitions_to_unreleased_partitions():     # testUnreleasedPartitionsToUnreleasedPartitions
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    out = run(m, 11, target((2, 3, 4), (5, 6, 7)), lambda t, p: 10)
    assert shape(out) == shape(m)


def test_unreleased_partitions_to_unrevoked_partitions():      # testUnreleasedPartitionsToUnrevokedPartitions
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    out = run(m, 12, target((3,), (6,)), lambda t, p: 10)
    assert shape(out) == (UNREVOKED, 11, 11, {T1: [3], T2: [6]}, {T1: [2], T2: [5]})


def test_unknown_state():                                      # testUnknownState
    m = member(UNKNOWN, 11, 11, parts((3,), (6,)), parts((2,), (5,)))
    with pytest.raises(FencedMemberEpoch):
        run(m, 12, target((3,), (6,)), lambda t, p: 10)
    out = run(m, 12, target((3,), (6,)), lambda t, p: 11, [])
    assert shape(out) == (STABLE, 12, 11, {T1: [3], T2: [6]}, {})


def test_a_topic_no_longer_subscribed_counts_as_target_nothing():
    # trunk's computeNextAssignment: the member stops subscribing to T2 before the new target
    m = member(STABLE, 10, 10, parts((1,), (4,)))
    out = run(m, 11, target((1,), (4,)), lambda t, p: 10, owned((1,), (4,)), subscribed=frozenset({T1}))
    assert shape(out) == (UNREVOKED, 10, 10, {T1: [1]}, {T2: [4]})


def test_a_subscription_change_revokes_at_once_without_a_new_target():
    # trunk's updateCurrentAssignment (enforce_subscription): a stable member at the target epoch
    m = member(STABLE, 11, 10, parts((1,), (4,), epoch=11))
    out = reconcile(m, 11, target((1,), (4,)), lambda t, p: 11, frozenset({T1}), owned((1,), (4,)),
                    enforce_subscription=True)
    assert shape(out) == (UNREVOKED, 11, 11, {T1: [1]}, {T2: [4]})
    # already given up: the assignment shrinks, the state stays
    out = reconcile(m, 11, target((1,), (4,)), lambda t, p: 11, frozenset({T1}), owned((1,)),
                    enforce_subscription=True)
    assert shape(out) == (STABLE, 11, 11, {T1: [1]}, {})


def test_a_partition_cannot_be_owned_twice():                  # ConsumerGroupTest: partition epochs
    g = ConsumerGroup("g", 0)
    g.update_member(ConsumerGroupMember("a", member_epoch=5, assigned=parts((0, 1), epoch=5)))
    assert g.partition_epoch(T1, 0) == 5 and g.partition_epoch(T1, 2) == -1
    with pytest.raises(OwnershipError):
        g.update_member(ConsumerGroupMember("b", member_epoch=5, assigned=parts((1, 2), epoch=5)))
    # a partition pending revocation is still owned
    g.update_member(ConsumerGroupMember("a", member_epoch=5, state=UNREVOKED, assigned=parts((0,), epoch=5),
                                        pending_revocation=parts((1,), epoch=5)))
    with pytest.raises(OwnershipError):
        g.update_member(ConsumerGroupMember("c", member_epoch=6, assigned=parts((1,), epoch=6)))
    g.remove_member("a")
    assert g.partition_epochs == {}
    g.update_member(ConsumerGroupMember("c", member_epoch=6, assigned=parts((1,), epoch=6)))
    assert g.partition_epoch(T1, 1) == 6


def test_uuids_sort_as_kafka_compares_them():
    # Uuid.compareTo compares signed longs: a UUID with the top bit set sorts first
    high = uuid.UUID(int=1 << 127)
    low = uuid.UUID(int=1)
    assert sorted([low, high], key=uuid_order) == [high, low]
