"""Kafka's server-side ``uniform`` assignor (KIP-848), the default of ``group.consumer.assignors``.

Follows ``group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/`` of Kafka
4.0.1 to 4.3 (``UniformAssignor.java``, ``UniformHomogeneousAssignmentBuilder.java``,
``UniformHeterogeneousAssignmentBuilder.java``: the same logic on the 4.0 branch from 4.0.1, on 4.1,
4.2, 4.3 and on trunk of August 2026). Kafka 4.0.0 lacks KAFKA-18688 (May 2025, "uniform homogeneous
assignor stability", in 4.0.1 and 4.1.0): there the extra partitions went to the first members in
order, so a member holding ``quota + 1`` could lose one to a member before it. Goals, in order:
balance (member sizes differ by at most one where subscriptions allow), then stickiness. Not
rack-aware: rack awareness left the server assignors in 3.8 (KAFKA-16694) and no release up to 4.3
has it back (a rack-aware homogeneous builder, KAFKA-19909, was an open pull request when last seen); ``rack_id`` is
ignored.

Homogeneous (every member subscribes to the same topics; as Kafka, the builder reads the first
member's subscription):

1. the unassigned list: the partitions of the subscribed topics that no member holds, topic by
   topic, ascending;
2. quotas: ``total // members`` each, and ``total % members`` extra partitions. Members in order:
   a member may claim an extra partition while some remain; it keeps its current partitions of
   subscribed topics up to its quota (topics in order, partitions ascending) and the excess joins
   the unassigned list; a member that claimed an extra but holds less than ``quota + 1`` gives the
   claim back, unless it is one of the last members that must take the remaining extras
   (KAFKA-18688: a balanced assignment stays as it is whatever the member order);
3. members below their quota take the next partitions of the unassigned list, in member order.

Heterogeneous (KAFKA-17710's rewrite, 4.0.0):

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
So the output does not depend on the order of ``group.members`` (it is returned in that order), but
may differ from a broker's wherever Kafka's iteration order decides: which member is "first", which
members get the extras, which partitions a member over its quota gives up and the order of the
unassigned list (homogeneous); the member index that breaks ties (heterogeneous, otherwise ordered
by its comparators as in Kafka).
"""
from __future__ import annotations

import uuid
from itertools import groupby
from typing import Mapping

from .spec import GroupSpec, PartitionAssignorError, TopicIndex, kafka_uuid_str, sorted_member_ids

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
        index = TopicIndex(topics)
        if group.homogeneous:
            targets = _homogeneous(members, order, index)
        else:
            targets = _Heterogeneous(members, order, index).build()
        return {m: targets[m] for m in members}


def _missing(topic_id: uuid.UUID) -> PartitionAssignorError:
    return PartitionAssignorError(f"Members are subscribed to topic {kafka_uuid_str(topic_id)} which doesn't "
                                  f"exist in the topic metadata.")


def _current(assignment, by_int: dict[int, int], subscribed) -> tuple[list, bool]:
    """A member's current target as [(topic index, partitions)] for the topics of ``subscribed``
    (indices), and whether the mapping can be handed back as it is if it does not change: every
    entry kept, non-empty, a frozenset, topics in ``Uuid`` order."""
    entries = []
    clean = True
    last = -1
    for t, parts in assignment.items():
        i = by_int.get(t.int)
        if i is None or i not in subscribed or not parts:
            clean = False               # a topic no longer subscribed (or gone), or an empty entry
            continue
        if i < last or type(parts) is not frozenset:
            clean = False
        last = i
        entries.append((i, parts))
    return entries, clean


def _output(assignment, target: dict, changed: bool, ids: list[uuid.UUID]) -> dict[uuid.UUID, frozenset[int]]:
    """The member's new target keyed by topic id, topics in ``Uuid`` order."""
    if not changed:
        # a dict copy reuses the stored hashes (no UUID.__hash__ call); values are the caller's
        # frozensets, as Kafka hands back the unchanged immutable maps
        return dict(assignment)
    return {ids[i]: (s if type(s) is frozenset else frozenset(s)) for i in sorted(target) if (s := target[i])}


# -- homogeneous -------------------------------------------------------------------------------------

def _homogeneous(members, order: list[str], index: TopicIndex) -> dict[str, dict]:
    """Kafka's UniformHomogeneousAssignmentBuilder (4.0.1+, with KAFKA-18688)."""
    sub, subscribed = index.subscription(members[order[0]].subscribed_topic_ids, _missing)
    if not sub:
        return {m: {} for m in order}
    counts, by_int = index.counts, index.by_int

    currents = [_current(members[m].assignment, by_int, subscribed) for m in order]
    # The unassigned list, as runs of one topic's partitions (Kafka: a list of TopicIdPartitions;
    # runs are sliced instead of walked one partition at a time).
    held: dict[int, list] = {i: [] for i in sub}
    for entries, _ in currents:
        for i, parts in entries:
            held[i].append(parts)
    runs: list[tuple[int, object]] = []
    total = 0
    for i in sub:
        n = counts[i]
        total += n
        h = held[i]
        if not h:
            if n:
                runs.append((i, range(n)))
            continue
        taken = h[0] if len(h) == 1 else frozenset().union(*h)
        if len(taken) < n:
            runs.append((i, [p for p in range(n) if p not in taken]))

    count = len(order)
    min_quota, extra = divmod(total, count)
    targets: list[dict] = []
    changed: list[bool] = []
    unfilled: list[tuple[int, int]] = []
    for position, (entries, clean) in enumerate(currents):
        quota = min_quota
        claims_extra = False
        if extra > 0:
            quota += 1
            claims_extra = True
        kept = sum(len(parts) for _, parts in entries)
        if kept <= quota:
            # nothing to give up: the common case, no sorting needed
            quota -= kept
            new = dict(entries)
        else:
            clean = False
            new = {}
            entries.sort()              # by topic index: one entry per topic
            for i, parts in entries:
                if len(parts) <= quota:
                    quota -= len(parts)
                    new[i] = parts
                else:
                    ps = sorted(parts)
                    if quota:
                        new[i] = frozenset(ps[:quota])
                    runs.append((i, ps[quota:]))
                    quota = 0
        if quota > 0 and claims_extra and count - position > extra:
            # give the extra back, unless this member is one of the last ones that must take one
            quota -= 1
            claims_extra = False
        if quota > 0:
            unfilled.append((position, quota))
        if claims_extra:
            extra -= 1
        targets.append(new)
        changed.append(not clean)

    run, offset = 0, 0
    for position, quota in unfilled:
        new = targets[position]
        if quota and run < len(runs):
            changed[position] = True
        while quota and run < len(runs):
            i, ps = runs[run]
            take = ps[offset:offset + quota]
            offset += len(take)
            quota -= len(take)
            cur = new.get(i)
            new[i] = frozenset(take) if cur is None else cur.union(take)
            if offset >= len(ps):
                run, offset = run + 1, 0
    if run < len(runs):
        raise PartitionAssignorError("Partitions were left unassigned")
    ids = index.ids
    return {m: _output(members[m].assignment, targets[k], changed[k], ids) for k, m in enumerate(order)}


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
    """Kafka's UniformHeterogeneousAssignmentBuilder (4.0 to 4.3; KAFKA-17710's version). Topics
    are indices of the TopicIndex (their order is Kafka's ``Uuid`` order), members indices into
    the sorted member ids. The passes move partitions in the owner arrays; each member's changed
    partition sets are built once at the end (one frozenset per member and topic: the cyclic
    collector is the cost of large groups)."""

    def __init__(self, members, order: list[str], index: TopicIndex):
        self.members, self.order, self.index = members, order, index
        counts, by_int = index.counts, index.by_int
        # members by subscription (members subscribing to the same topics usually share it: one
        # list extension per topic and subscription instead of one append per member and topic)
        by_subscription: dict[tuple[int, ...], list[int]] = {}
        for k, m in enumerate(order):
            sub = index.subscription(members[m].subscribed_topic_ids, _missing)[0]
            same = by_subscription.get(sub)
            if same is None:
                by_subscription[sub] = [k]
            else:
                same.append(k)
        subscribers: dict[int, list[int]] = {}      # topic -> member indices, ascending
        for sub, ks in by_subscription.items():
            for i in sub:
                s = subscribers.get(i)
                if s is None:
                    subscribers[i] = list(ks)
                else:
                    s.extend(ks)
        if len(by_subscription) > 1:
            for s in subscribers.values():
                s.sort()
        self.subscribers = subscribers
        self.sizes = [0] * len(order)
        self.owners = {i: [-1] * counts[i] for i in subscribers}
        self.touched: dict[int, set[int]] = {i: set() for i in subscribers}  # topic -> members it changed for
        self.targets: list[dict] = []       # per member: topic -> partitions, as kept from its target
        self.changed: list[bool] = []
        for k, m in enumerate(order):
            spec = members[m]
            subscribed = index.subscription(spec.subscribed_topic_ids, _missing)[1]
            entries, clean = _current(spec.assignment, by_int, subscribed)
            for i, parts in entries:
                self.sizes[k] += len(parts)
                owners = self.owners[i]
                for p in parts:
                    owners[p] = k
            self.targets.append(dict(entries))
            self.changed.append(not clean)

    def topic_key(self, i: int):
        """Kafka's topicComparator: partitions per subscriber descending, then subscriber count,
        then topic id (Java's double division, as Python's)."""
        k = len(self.subscribers[i])
        return -(self.index.counts[i] / k), k, i

    def build(self) -> dict[str, dict]:
        if self.subscribers:
            self.assign_remaining()
            self.balance()
            self.collect()
        ids = self.index.ids
        return {m: _output(self.members[m].assignment, self.targets[k], self.changed[k], ids)
                for k, m in enumerate(self.order)}

    def move(self, i: int, p: int, member: int) -> None:
        """Kafka's assignPartition: partition ``p`` of topic ``i`` to ``member``, from its owner if
        it has one."""
        owners, touched = self.owners[i], self.touched[i]
        old = owners[p]
        if old != -1:
            self.sizes[old] -= 1
            touched.add(old)
        owners[p] = member
        self.sizes[member] += 1
        touched.add(member)

    def assign_remaining(self) -> None:
        """Kafka's assignRemainingPartitions: topic by topic, each unassigned partition to the
        next least loaded subscriber (MemberAssignmentBalancer.nextLeastLoadedMember, unrolled:
        the members of the least loaded range in turn, the range widening as its level rises)."""
        unassigned = {}
        for i, owners in self.owners.items():
            free = [p for p, o in enumerate(owners) if o == -1]
            if free:
                unassigned[i] = free
        sizes = self.sizes
        for i in sorted(unassigned, key=self.topic_key):
            members = sorted(self.subscribers[i], key=sizes.__getitem__)    # stable: (size, index)
            owners, touched, free = self.owners[i], self.touched[i], unassigned[i]
            level = sizes[members[0]] - 1
            end = position = 0
            done, n_free, n_members = 0, len(free), len(members)
            while done < n_free:
                if position >= end:
                    level += 1
                    while end < n_members and sizes[members[end]] == level:
                        end += 1
                    position = 0
                take = min(end - position, n_free - done)
                chunk = members[position:position + take]
                first = free[done]
                if free[done + take - 1] - first == take - 1:
                    owners[first:first + take] = chunk        # consecutive partitions: one slice
                else:
                    for p, k in zip(free[done:done + take], chunk):
                        owners[p] = k
                for k in chunk:
                    sizes[k] += 1
                touched.update(chunk)
                position += take
                done += take

    def balance(self) -> None:
        topic_ids = sorted((i for i, s in self.subscribers.items() if len(s) >= 2), key=self.topic_key)
        if not topic_ids:
            return
        balancer = _Balancer(self.sizes)
        last = -1           # the last topic that moved a partition: a full pass without a move ends
        for _ in range(MAX_ITERATION_COUNT):
            for position, i in enumerate(topic_ids):
                if position == last:
                    return
                if self.balance_topic(i, balancer) > 0 or last == -1:
                    last = position

    def balance_topic(self, i: int, balancer: _Balancer) -> int:
        """Kafka's balanceTopic: the number of partitions moved."""
        subscribers = self.subscribers[i]
        sizes = list(map(self.sizes.__getitem__, subscribers))
        if max(sizes) - min(sizes) <= 1:
            return 0            # balanced: what initialize() would say, without its sort
        balancer.initialize(subscribers)
        # the topic's partitions grouped by owner (owner index, then partition, ascending), and
        # each owner's slice of that list
        by_owner: dict[int, list[int]] = {}
        for p, o in enumerate(self.owners[i]):
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
            self.move(i, p, least)
            moved += 1
        return moved

    def collect(self) -> None:
        """The new partition sets of the members whose partitions of a topic changed."""
        # One frozenset per partition number for the one-partition sets, shared by every member
        # and topic (immutable): in large groups most sets are single partitions, and millions of
        # small containers would keep the cyclic collector busy.
        single: dict[int, frozenset[int]] = {}
        targets, changed = self.targets, self.changed
        for i, touched in self.touched.items():
            if not touched:
                continue
            owners = self.owners[i]
            owner_of = owners.__getitem__
            # partitions grouped by owner, ascending within each (a stable sort in C)
            for k, group in groupby(sorted(range(len(owners)), key=owner_of), key=owner_of):
                if k not in touched:
                    continue
                touched.discard(k)
                fs = frozenset(group)
                if len(fs) == 1:
                    (p,) = fs
                    fs = single.setdefault(p, fs)
                targets[k][i] = fs
                changed[k] = True
            for k in touched:               # left without a partition of the topic
                targets[k].pop(i, None)
                changed[k] = True
