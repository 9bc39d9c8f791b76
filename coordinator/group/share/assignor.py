"""Kafka's ``SimpleAssignor`` (name ``simple``), the share groups' one server-side assignor: it
assigns partitions to members and, unlike the consumer group's assignors, shares a partition among
several members when there are more members than partitions.

Two algorithms, as the emulated release has them:

- Kafka 4.2 and later (:func:`assign`: ``SimpleHomogeneousAssignmentBuilder`` and
  ``SimpleHeterogeneousAssignmentBuilder``): balance first, then stickiness. With ``P`` assignable
  partitions and ``M`` members, each partition wants ``desired_sharing = ceil(M / P)`` members and
  member *i* (in member order) ``ceil(x*(i+1)) - ceil(x*i)`` partitions, ``x = desired_sharing * P / M``.
  Starting from each member's current target: drop what it no longer subscribes to, take partitions
  from members above their count, take members from partitions shared more than desired, then walk
  the partitions giving the under-shared ones to the under-filled members in turn. Heterogeneous
  subscriptions do this per topic, among the members subscribing to it.
- Kafka 4.1 (:func:`assign_4_1`): each member is hashed to one partition (``abs(memberId.hashCode()
  % P)``), the current target fills in up to ``ceil(P / M)`` partitions per member for the partitions
  no member hashed to, and the partitions still without a member go round-robin to the members (one
  over the count allowed, for hash collisions); heterogeneous: hashing per member among its topics,
  round-robin per topic among its subscribers for partitions nobody has, then the current target.

Kafka iterates hash maps and sets where this iterates in a fixed order (members in the group's
order, topics in Kafka's ``Uuid`` order, partitions ascending): the same input always gives the same
result, which may differ from a broker's in which of two equally good members gets a partition.

Only the assignable partitions are given (Kafka's ``GroupSpec.isPartitionAssignable``: the share
partitions whose state is initialized); a subscribed topic missing from the metadata raises
:class:`~..assignors.spec.PartitionAssignorError` (Kafka's "Members are subscribed to topic X which
doesn't exist in the topic metadata.").
"""
from __future__ import annotations

import math
import uuid
from typing import Mapping

from ...cluster import java_string_hash
from ..assignors.spec import GroupSpec, PartitionAssignorError, kafka_uuid_str, topic_order, uuid_key

NAME = "simple"

Assignment = dict      # uuid.UUID -> set[int]


def _target_partitions(topic_ids, topics: Mapping[uuid.UUID, int], assignable) -> list[tuple[uuid.UUID, int]]:
    """``computeTargetPartitions``: the assignable partitions of the topics, topic by topic."""
    out = []
    for topic_id in topic_ids:
        count = topics.get(topic_id)
        if count is None:
            raise PartitionAssignorError(f"Members are subscribed to topic {kafka_uuid_str(topic_id)} which doesn't "
                                         "exist in the topic metadata.")
        allowed = None if assignable is None else assignable.get(topic_id, ())
        out.extend((topic_id, p) for p in range(count) if allowed is None or p in allowed)
    return out


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    """How many partitions each of ``members`` should get, in member order (the builders' arithmetic,
    in doubles as Java computes it)."""
    if not members:
        return []
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


def _result(group: GroupSpec, new: dict) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """Every member's target: the one the builder changed, else its current one."""
    out = {}
    for member_id, spec in group.members.items():
        parts = new.get(member_id)
        if parts is None:
            parts = spec.assignment
        out[member_id] = {t: frozenset(ps) for t, ps in parts.items() if ps}
    return out


def _tp_order(tp: tuple) -> tuple:
    """A (topic id, partition) in Kafka's Uuid order, then by partition."""
    return uuid_key(tp[0]), tp[1]


def _copy(assignment) -> Assignment:
    return {t: set(ps) for t, ps in assignment.items()}


def assign(group: GroupSpec, topics: Mapping[uuid.UUID, int],
           assignable: Mapping[uuid.UUID, frozenset] | None = None) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """Kafka 4.2+'s SimpleAssignor: the new target of every member (``{}`` for one with nothing).
    ``topics``: topic id -> partition count; ``assignable``: topic id -> the partitions that may be
    assigned (None: all)."""
    if not group.members:
        return {}
    if group.homogeneous:
        return _homogeneous(group, topics, assignable)
    return _heterogeneous(group, topics, assignable)


def _homogeneous(group: GroupSpec, topics, assignable) -> dict:
    """``SimpleHomogeneousAssignmentBuilder``."""
    member_ids = list(group.members)
    subscribed = next(iter(group.members.values())).subscribed_topic_ids
    if not subscribed:
        return {}
    targets = _target_partitions(topic_order(subscribed), topics, assignable)
    sharing = -(-len(member_ids) // len(targets)) if targets else 0
    desired = _desired_counts(sharing, len(targets), len(member_ids))
    old = {m: group.members[m].assignment for m in member_ids}
    new: dict[str, Assignment] = {}
    by_partition: dict[tuple, list] = {}     # partition -> members, in the order they came
    by_member: dict[str, list] = {}          # member -> partitions
    unfilled: list[str] = []
    overfilled: list[str] = []
    # 1. what each member keeps of its current target: the topics still subscribed
    for index, member_id in enumerate(member_ids):
        count = 0
        for topic_id in topic_order(old[member_id]):
            if topic_id in subscribed:
                for p in sorted(old[member_id][topic_id]):
                    tp = (topic_id, p)
                    count += 1
                    by_partition.setdefault(tp, []).append(member_id)
                    by_member.setdefault(member_id, []).append(tp)
                    if count >= desired[index] and member_id not in new:
                        new[member_id] = _copy(old[member_id])
            else:
                new.setdefault(member_id, _copy(old[member_id])).pop(topic_id, None)
        if count < desired[index]:
            unfilled.append(member_id)
        elif count > desired[index]:
            overfilled.append(member_id)
    index_of = {m: i for i, m in enumerate(member_ids)}
    # 2. members above their count give some up
    for member_id in overfilled:
        mine = by_member[member_id]
        while len(mine) > desired[index_of[member_id]]:
            tp = mine.pop(0)
            new[member_id][tp[0]].discard(tp[1])
            by_partition[tp].remove(member_id)
    # 3. partitions shared by more members than desired lose some
    for tp in sorted(by_partition, key=_tp_order):
        holders = by_partition[tp]
        for member_id in list(holders):
            if len(holders) <= sharing:
                break
            mine = new.setdefault(member_id, _copy(old[member_id]))
            partitions = mine.get(tp[0])
            if partitions is not None and tp[1] in partitions:
                partitions.discard(tp[1])
                holders.remove(member_id)
                by_member[member_id].remove(tp)
                if member_id not in unfilled:
                    unfilled.append(member_id)
    # 4. the partitions wanting members, to the members wanting partitions (in member order), in turn
    for tp in targets:
        by_partition.setdefault(tp, [])
    unfilled.sort(key=index_of.__getitem__)
    _fill(by_partition, unfilled, sharing, lambda m: desired[index_of[m]], by_member, new, old,
          lambda tp: tp[0], lambda tp: tp[1], order=sorted(by_partition, key=_tp_order))
    return _result(group, new)


def _fill(by_partition: dict, unfilled: list, sharing: int, wanted, by_member: dict, new: dict, old: dict,
          topic_of, partition_of, order) -> None:
    """``assignRemainingPartitions``, step for step: one pass over the partitions with one turn over
    the unfilled members that goes on from partition to partition; a full turn that gives nothing
    ends the assignment (Kafka's iterator stays exhausted). As in Kafka, a partition's members are
    those it had before this pass: a member the turn comes back to may be counted twice for it."""
    unfilled = list(unfilled)                 # the members still wanting partitions, in turn
    position = 0
    assigned_this_turn = False
    for key in order:
        holders = by_partition[key]
        to_make = sharing - len(holders)
        while to_make > 0:
            if position >= len(unfilled):
                if not assigned_this_turn or not unfilled:
                    break
                position, assigned_this_turn = 0, False
            member_id = unfilled[position]
            if member_id in holders:
                position += 1
                continue
            mine = new.setdefault(member_id, _copy(old[member_id]))
            mine.setdefault(topic_of(key), set()).add(partition_of(key))
            have = by_member.setdefault(member_id, [])
            if key not in have:
                have.append(key)
            to_make -= 1
            assigned_this_turn = True
            if len(have) >= wanted(member_id):
                del unfilled[position]
            else:
                position += 1
        if not unfilled:
            break


def _heterogeneous(group: GroupSpec, topics, assignable) -> dict:
    """``SimpleHeterogeneousAssignmentBuilder``: the homogeneous steps per topic, among the members
    subscribing to it."""
    member_ids = list(group.members)
    subscribed_by_topic: dict[uuid.UUID, list[str]] = {}
    for member_id in member_ids:
        for topic_id in group.members[member_id].subscribed_topic_ids:
            subscribed_by_topic.setdefault(topic_id, []).append(member_id)
    if not subscribed_by_topic:
        return {}
    for topic_id in topic_order(subscribed_by_topic):         # every topic known before any is assigned
        _target_partitions([topic_id], topics, assignable)
    old = {m: group.members[m].assignment for m in member_ids}
    new: dict[str, Assignment] = {}
    for topic_id in topic_order(subscribed_by_topic):
        subscribers = subscribed_by_topic[topic_id]
        partitions = [p for _, p in _target_partitions([topic_id], topics, assignable)]
        sharing = -(-len(subscribers) // len(partitions)) if partitions else 0
        desired = dict.fromkeys(member_ids, 0)
        desired.update(zip(subscribers, _desired_counts(sharing, len(partitions), len(subscribers))))
        by_partition: dict[int, list] = {}
        by_member: dict[str, list] = {}
        # 1. every member's current partitions of the topic (a member no longer subscribing wants 0)
        for member_id in member_ids:
            current = old[member_id].get(topic_id) if old[member_id] else None
            if current:
                for p in sorted(current):
                    by_partition.setdefault(p, []).append(member_id)
                    by_member.setdefault(member_id, []).append(p)
        # 2. members above their count give some up
        for member_id, mine in by_member.items():
            while len(mine) > desired[member_id]:
                p = mine.pop(0)
                by_partition[p].remove(member_id)
                new.setdefault(member_id, _copy(old[member_id]))[topic_id].discard(p)
        # 3. partitions shared more than desired lose members
        for p in sorted(by_partition):
            holders = by_partition[p]
            for member_id in list(holders):
                if len(holders) <= sharing:
                    break
                mine = new.setdefault(member_id, _copy(old[member_id]))
                if p in mine.get(topic_id, ()):
                    mine[topic_id].discard(p)
                    holders.remove(member_id)
                    by_member[member_id].remove(p)
        # 4. the rest, to the subscribers wanting partitions
        for p in partitions:
            by_partition.setdefault(p, [])
        unfilled = [m for m in subscribers if len(by_member.get(m, ())) < desired[m]]
        _fill(by_partition, unfilled, sharing, desired.__getitem__, by_member, new, old,
              lambda p, topic_id=topic_id: topic_id, lambda p: p, order=sorted(by_partition))
    return _result(group, new)


# ============================================================================ Kafka 4.1
def assign_4_1(group: GroupSpec, topics: Mapping[uuid.UUID, int],
               assignable: Mapping[uuid.UUID, frozenset] | None = None) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """Kafka 4.1's SimpleAssignor (see the module)."""
    if not group.members:
        return {}
    member_ids = list(group.members)
    current: dict[tuple, list] = {}          # partition -> the members whose target holds it
    for member_id in member_ids:
        for topic_id in topic_order(group.members[member_id].assignment):
            for p in sorted(group.members[member_id].assignment[topic_id]):
                current.setdefault((topic_id, p), []).append(member_id)
    final: dict[str, list] = {}
    if group.homogeneous:
        subscribed = next(iter(group.members.values())).subscribed_topic_ids
        if not subscribed:
            return {}
        targets = _target_partitions(topic_order(subscribed), topics, assignable)
        desired = -(-len(targets) // len(member_ids))
        hashed = _hash_members(member_ids, targets)
        holders: dict[tuple, list] = {}
        for tp, members in hashed.items():
            for m in members:
                _add(final, m, tp)
                holders.setdefault(tp, []).append(m)
        for tp, members in current.items():
            if tp[0] not in subscribed:
                continue
            for m in members:
                mine = final.setdefault(m, [])
                if len(mine) < desired and tp not in hashed:
                    _add(final, m, tp)
                    holders.setdefault(tp, []).append(m)
        _round_robin_with_count(member_ids, [tp for tp in targets if tp not in holders], final, desired)
    else:
        targets_of = {m: _target_partitions(topic_order(group.members[m].subscribed_topic_ids), topics, assignable)
                      for m in member_ids if group.members[m].subscribed_topic_ids}
        subscribers: dict[uuid.UUID, list] = {}
        everything: list = []
        for m, partitions in targets_of.items():
            for tp in partitions:
                if m not in subscribers.setdefault(tp[0], []):
                    subscribers[tp[0]].append(m)
                if tp not in everything:
                    everything.append(tp)
        hashed: dict[tuple, list] = {}
        for m, partitions in targets_of.items():
            for tp, members in _hash_members([m], partitions).items():
                hashed.setdefault(tp, []).extend(members)
        unassigned: dict[uuid.UUID, list] = {}
        for tp in everything:
            if tp not in hashed and tp not in current:
                unassigned.setdefault(tp[0], []).append(tp)
        for topic_id in topic_order(unassigned):
            members = subscribers[topic_id]
            for i, tp in enumerate(unassigned[topic_id]):
                hashed.setdefault(tp, []).append(members[i % len(members)])
        for tp, members in hashed.items():
            for m in members:
                _add(final, m, tp)
        for tp, members in current.items():
            for m in members:
                if m in subscribers.get(tp[0], ()) and tp not in hashed:
                    _add(final, m, tp)
    out = {}
    for member_id in member_ids:
        parts: dict = {}
        for topic_id, p in final.get(member_id, ()):
            parts.setdefault(topic_id, set()).add(p)
        out[member_id] = {t: frozenset(ps) for t, ps in parts.items()}
    return out


def _add(final: dict, member_id: str, tp: tuple) -> None:
    mine = final.setdefault(member_id, [])
    if tp not in mine:
        mine.append(tp)


def _hash_members(member_ids, partitions: list) -> dict[tuple, list]:
    """``memberHashAssignment``: each member to the partition ``abs(memberId.hashCode() % P)``."""
    out: dict[tuple, list] = {}
    if partitions:
        for member_id in member_ids:
            tp = partitions[abs(java_string_hash(member_id)) % len(partitions)]
            out.setdefault(tp, []).append(member_id)
    return out


def _round_robin_with_count(member_ids: list, partitions: list, final: dict, desired: int) -> None:
    """``roundRobinAssignmentWithCount``: the partitions to the members in turn; a member may take one
    more than ``desired`` (hash collisions), then leaves the turn."""
    turn = list(member_ids)
    position = 0
    i = 0
    while i < len(partitions):
        if position >= len(turn):
            position = 0
            if not turn:
                raise PartitionAssignorError("Inconsistent number of member IDs")
        member_id = turn[position]
        mine = final.setdefault(member_id, [])
        if len(mine) <= desired:
            _add(final, member_id, partitions[i])
            position += 1
            i += 1
        else:
            del turn[position]
