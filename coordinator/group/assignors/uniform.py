"""Kafka's server-side ``uniform`` assignor (KIP-848), the default of ``group.consumer.assignors``.

Follows ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/`` of Kafka
4.0.1 to 4.3 (``UniformAssignor.java``, ``UniformHomogeneousAssignmentBuilder.java``,
``UniformHeterogeneousAssignmentBuilder.java``; the logic is the same on the 4.0 branch from 4.0.1,
4.1, 4.2, 4.3 and trunk of August 2026). Kafka 4.0.0 lacks KAFKA-18688 (May 2025, "uniform
homogeneous assignor stability", in 4.0.1 and 4.1.0): there a member holding ``quota + 1``
partitions could lose one to a member sorted before it. Goals, in order: balance (member sizes
differ by at most one where subscriptions allow), then stickiness. Not rack-aware: rack awareness
was removed from the server assignors in 2024 (KAFKA-16694) and no release up to 4.3 has it back
(a rack-aware homogeneous builder, KAFKA-19909, was an open proposal); ``rack_id`` is ignored.

Homogeneous (every member subscribes to the same topics; Kafka reads the first member's
subscription):

1. the unassigned list: the partitions of the subscribed topics that no member holds, topic by
   topic, ascending;
2. quotas: ``total // members`` each, and ``total % members`` extra partitions. Members in order:
   a member may claim an extra partition while some remain; it keeps its current partitions of
   subscribed topics up to its quota (topics in order, partitions ascending) and the excess joins
   the unassigned list; a member that claimed an extra but holds less than ``quota + 1`` gives the
   claim back, unless it is one of the last members that must take the remaining extras
   (KAFKA-18688: a balanced assignment stays as it is whatever the member order);
3. members below their quota take the next partitions of the unassigned list, in member order.

Heterogeneous:

1. each member keeps its current partitions of the topics it still subscribes to;
2. the unassigned partitions are placed topic by topic, topics ordered by partitions per
   subscriber (descending), then subscriber count (ascending), then topic id; each partition goes
   to the least loaded subscriber (ties: member order), cycling through the subscribers tied at the
   lowest count (``MemberAssignmentBalancer``);
3. balancing: at most 16 passes over the topics with two or more subscribers (same order), each
   moving partitions of a topic from its most loaded subscribers (their highest-numbered partition
   of the topic) to its least loaded ones while their counts differ by two or more; it stops after
   a full pass moves nothing.

Orders. Kafka iterates Java HashMaps and HashSets in places (the group's members, a member's
assignment, the subscribed topic set, a partition set), whose order this emulator cannot sensibly
mirror; here they are: member ids sorted (Java string order: what Kafka's own tests use, through
TreeMaps and a sorted ``GroupSpec``), topic ids in ``Uuid.compareTo`` order, partitions ascending.
So the output does not depend on the order of ``group.members`` (it is returned in that order),
but may differ from a Kafka broker's where Kafka's HashSet order decides (in the homogeneous
builder: which partitions a member over its quota gives up, and the order of the unassigned list).
The heterogeneous builder is otherwise fully ordered (comparators), as in Kafka.
"""
from __future__ import annotations

import uuid
from typing import Mapping

from .spec import GroupSpec, PartitionAssignorError, kafka_uuid_str, sorted_member_ids, topic_order, uuid_key

__all__ = ["MAX_ITERATION_COUNT", "UniformAssignor"]

#: Kafka's UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT: balancing passes at most.
MAX_ITERATION_COUNT = 16


class UniformAssignor:
    """``uniform``: balanced, then sticky."""

    name = "uniform"

    def assign(self, group: GroupSpec, topics: Mapping[uuid.UUID, int]
               ) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
        members = group.members
        if not members:
            return {}
        order = sorted_member_ids(members)
        if group.homogeneous:
            targets = _homogeneous(members, topics, order)
        else:
            targets = _Heterogeneous(members, topics, order).build()
        return {m: targets[m] for m in members}


def _check_exist(topic_ids, topics: Mapping[uuid.UUID, int]) -> None:
    missing = [t for t in topic_ids if t not in topics]
    if missing:
        first = min(missing, key=uuid_key)      # the same one whatever the set order
        raise PartitionAssignorError(f"Members are subscribed to topic {kafka_uuid_str(first)} which doesn't "
                                     f"exist in the topic metadata.")


def _ordered(target: dict) -> dict[uuid.UUID, frozenset[int]]:
    """A member's target with its topics in Kafka's topic order, no empty entry, frozensets."""
    keys = target.keys() if len(target) < 2 else topic_order(target)
    return {t: (s if type(s) is frozenset else frozenset(s)) for t in keys if (s := target[t])}


# -- homogeneous -------------------------------------------------------------------------------------

def _homogeneous(members, topics, order: list[str]) -> dict[str, dict]:
    """Kafka's UniformHomogeneousAssignmentBuilder (4.0.1+, with KAFKA-18688)."""
    subscribed = members[order[0]].subscribed_topic_ids
    if not subscribed:
        return {m: {} for m in order}
    sub_order = topic_order(subscribed)
    _check_exist(sub_order, topics)

    # The unassigned list, as runs of one topic's partitions (Kafka: a list of TopicIdPartitions;
    # runs are sliced instead of walked one partition at a time).
    held: dict[uuid.UUID, list] = {t: [] for t in sub_order}
    for m in order:
        for t, parts in members[m].assignment.items():
            h = held.get(t)
            if h is not None and parts:
                h.append(parts)
    runs: list[tuple[uuid.UUID, object]] = []
    total = 0
    for t in sub_order:
        n = topics[t]
        total += n
        h = held[t]
        if not h:
            if n:
                runs.append((t, range(n)))
            continue
        taken = h[0] if len(h) == 1 else frozenset().union(*h)
        if len(taken) < n:
            runs.append((t, [p for p in range(n) if p not in taken]))

    count = len(order)
    min_quota, extra = divmod(total, count)
    targets: dict[str, dict] = {}
    unfilled: list[tuple[str, int]] = []
    for index, m in enumerate(order):
        old = members[m].assignment
        quota = min_quota
        claims_extra = False
        if extra > 0:
            quota += 1
            claims_extra = True
        kept = sum(len(parts) for t, parts in old.items() if t in subscribed)
        if kept <= quota:
            # nothing to give up: the common case, no sorting needed
            quota -= kept
            new = {t: parts for t, parts in old.items() if parts and t in subscribed}
        else:
            new = {}
            for t in topic_order(old):
                if t not in subscribed:
                    continue
                parts = old[t]
                if len(parts) <= quota:
                    quota -= len(parts)
                    if parts:
                        new[t] = parts
                else:
                    ps = sorted(parts)
                    if quota:
                        new[t] = frozenset(ps[:quota])
                    runs.append((t, ps[quota:]))
                    quota = 0
        if quota > 0 and claims_extra and count - index > extra:
            # give the extra back, unless this member is one of the last ones that must take one
            quota -= 1
            claims_extra = False
        if quota > 0:
            unfilled.append((m, quota))
        if claims_extra:
            extra -= 1
        targets[m] = new

    run, offset = 0, 0
    for m, quota in unfilled:
        new = targets[m]
        while quota and run < len(runs):
            t, ps = runs[run]
            take = ps[offset:offset + quota]
            offset += len(take)
            quota -= len(take)
            cur = new.get(t)
            new[t] = frozenset(take) if cur is None else cur.union(take)
            if offset >= len(ps):
                run, offset = run + 1, 0
    if run < len(runs):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {m: _ordered(targets[m]) for m in order}


# -- heterogeneous -----------------------------------------------------------------------------------

class _Balancer:
    """Kafka's UniformHeterogeneousAssignmentBuilder.MemberAssignmentBalancer: over the members of
    one topic sorted by size, a range of the least loaded members (growing rightwards) and a range
    of the most loaded ones (growing leftwards)."""

    __slots__ = ("sizes", "members", "least_end", "least_count", "next_least", "most_start", "most_end",
                 "most_count", "next_most")

    def __init__(self, sizes: list[int]):
        self.sizes = sizes

    def initialize(self, members: list[int]) -> int:
        """Start over for ``members`` (ascending indices); the spread of their sizes."""
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        # members come in ascending index order and the sort is stable: (size, index) order
        s = self.members = sorted(members, key=sizes.__getitem__)
        self.least_end = 0
        self.least_count = sizes[s[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(s)
        self.most_count = sizes[s[-1]] + 1
        self.next_most = len(s) - 1
        return sizes[s[-1]] - sizes[s[0]]

    def next_least_loaded(self) -> int:
        """The member to give the next partition to (assumes it gets one)."""
        if self.next_least >= self.least_end:
            # every member of the range had one more: raise its level and widen it
            self.least_count += 1
            s, sizes, end, level = self.members, self.sizes, self.least_end, self.least_count
            while end < len(s) and sizes[s[end]] == level:
                end += 1
            self.least_end = end
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from (assumes it gives one), or -1."""
        if self.next_most < self.most_start:
            s, sizes = self.members, self.sizes
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range was emptied by exclusions: restart from the next member's level
                self.most_count = sizes[s[self.most_start - 1]]
            else:
                self.most_count -= 1
            start, level = self.most_start, self.most_count
            while start > 0 and sizes[s[start - 1]] == level:
                start -= 1
            self.most_start = start
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by :meth:`next_most_loaded` from the most loaded range."""
        s, i, end = self.members, self.next_most + 1, self.most_end - 1
        s[i], s[end] = s[end], s[i]
        self.most_end = end

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Heterogeneous:
    """Kafka's UniformHeterogeneousAssignmentBuilder (4.0 to 4.3; KAFKA-17710's version)."""

    def __init__(self, members, topics, order: list[str]):
        self.order = order
        self.topics = topics
        subscribers: dict[uuid.UUID, list[int]] = {}      # topic -> member indices, ascending
        for i, m in enumerate(order):
            for t in members[m].subscribed_topic_ids:
                s = subscribers.get(t)
                if s is None:
                    subscribers[t] = s = []
                s.append(i)
        _check_exist(subscribers, topics)
        self.subscribers = subscribers
        self.sizes = [0] * len(order)
        self.owners = {t: [-1] * topics[t] for t in subscribers}
        self.targets: list[dict] = []       # per member: topic -> frozenset (as given) or set (changed)
        for i, m in enumerate(order):
            spec = members[m]
            subscribed = spec.subscribed_topic_ids
            target = {}
            for t, parts in spec.assignment.items():
                if t in subscribed and parts:
                    # a set is changed in place below: never the caller's
                    target[t] = parts if type(parts) is frozenset else frozenset(parts)
                    self.sizes[i] += len(parts)
                    owners = self.owners[t]
                    for p in parts:
                        owners[p] = i
            self.targets.append(target)

    def topic_key(self, t: uuid.UUID):
        """Kafka's topicComparator: partitions per subscriber descending, then subscriber count,
        then topic id (Java's double division, as Python's)."""
        k = len(self.subscribers[t])
        return -(self.topics[t] / k), k, uuid_key(t)

    def build(self) -> dict[str, dict]:
        if self.subscribers:
            self.assign_remaining()
            self.balance()
        return {m: _ordered(self.targets[i]) for i, m in enumerate(self.order)}

    def move(self, t: uuid.UUID, p: int, member: int) -> None:
        """Kafka's assignPartition: ``p`` of ``t`` to ``member``, from its owner if it has one."""
        owners = self.owners[t]
        old = owners[p]
        if old != -1:
            s = self.targets[old][t]
            if type(s) is not set:
                s = self.targets[old][t] = set(s)
            s.discard(p)
            self.sizes[old] -= 1
        target = self.targets[member]
        s = target.get(t)
        if s is None:
            s = target[t] = set()
        elif type(s) is not set:
            s = target[t] = set(s)
        s.add(p)
        owners[p] = member
        self.sizes[member] += 1

    def assign_remaining(self) -> None:
        unassigned = {}
        for t, owners in self.owners.items():
            free = [p for p, o in enumerate(owners) if o == -1]
            if free:
                unassigned[t] = free
        balancer = _Balancer(self.sizes)
        for t in sorted(unassigned, key=self.topic_key):
            balancer.initialize(self.subscribers[t])
            for p in unassigned[t]:
                self.move(t, p, balancer.next_least_loaded())

    def balance(self) -> None:
        topic_ids = sorted((t for t, s in self.subscribers.items() if len(s) >= 2), key=self.topic_key)
        if not topic_ids:
            return
        balancer = _Balancer(self.sizes)
        last = -1           # the last topic that moved a partition: a full pass without a move ends
        for _ in range(MAX_ITERATION_COUNT):
            for index, t in enumerate(topic_ids):
                if index == last:
                    return
                if self.balance_topic(t, balancer) > 0 or last == -1:
                    last = index

    def balance_topic(self, t: uuid.UUID, balancer: _Balancer) -> int:
        """Kafka's balanceTopic: the number of partitions moved."""
        if balancer.initialize(self.subscribers[t]) <= 1:
            return 0
        # the topic's partitions grouped by owner (owner index, then partition, ascending), and
        # each owner's slice of that list
        by_owner: dict[int, list[int]] = {}
        for p, o in enumerate(self.owners[t]):
            ps = by_owner.get(o)
            if ps is None:
                by_owner[o] = [p]
            else:
                ps.append(p)
        partitions: list[int] = []
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for o in sorted(by_owner):
            start[o] = len(partitions)
            partitions.extend(by_owner[o])
            end[o] = len(partitions)

        moved = 0
        while not balancer.is_balanced():
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if end.get(most, 0) - start.get(most, 0) <= 0:
                    balancer.exclude_most_loaded()      # nothing of this topic to give
                    continue
                break
            if most == -1:
                break
            end[most] -= 1
            p = partitions[end[most]]
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(t, p, least)
            moved += 1
        return moved
